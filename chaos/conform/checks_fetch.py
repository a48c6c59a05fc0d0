"""Checks of fetch purgatory: a fetch with too little data waits up to max_wait_ms and is woken
early as soon as min_bytes are there (protocol: Fetch max_wait_ms, min_bytes)."""

from __future__ import annotations

import time

from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import check
from kafkaref.chaos.conform.checks_log import values_batch
from kafkaref.chaos.conform.probe import Probe

MAX_WAIT_MS = 600
EARLY_S = 0.05  # a broker may answer this much before max_wait (clock granularity)
LATE_S = 1.5  # generous: the machine running the suite may be loaded


@check("fetch_max_wait", "fetch", "protocol: Fetch max_wait_ms ('the maximum time in "
       "milliseconds to wait for the response if min_bytes is not satisfied')")
def fetch_max_wait(probe: Probe):
    """A fetch at the log end with min_bytes=1 is answered after max_wait_ms (600 ms), neither
    at once nor much later, with no records and no error."""
    topic = probe.create_topic("maxwait")
    probe.produce_ok(topic, values_batch(b"w", 1))
    timings = []
    for _ in range(3):
        started = time.monotonic()
        answer = probe.fetch(topic, 1, max_wait_ms=MAX_WAIT_MS, min_bytes=1)
        elapsed = time.monotonic() - started
        timings.append(round(elapsed * 1000))
        probe.expect_error(answer.error_code, ErrorCode.none, "Fetch at the log end", answer)
        probe.expect(not probe.records(answer), "records at the log end", response=answer,
                     expected="no records")
        probe.expect(MAX_WAIT_MS / 1000 - EARLY_S <= elapsed <= MAX_WAIT_MS / 1000 + LATE_S,
                     f"fetch answered after {elapsed * 1000:.0f} ms",
                     expected=f"{MAX_WAIT_MS} ms (-{EARLY_S * 1000:.0f} / +{LATE_S * 1000:.0f})")
    return f"answered after {timings} ms for max_wait {MAX_WAIT_MS} ms"


@check("fetch_max_wait_zero", "fetch", "protocol: Fetch max_wait_ms; a sessionless fetch "
       "answers every partition asked for (KIP-227)")
def fetch_max_wait_zero(probe: Probe):
    """A fetch with max_wait_ms=0 is answered at once with the partition asked for: its records
    when there are some, none (and no error) at the log end."""
    topic = probe.create_topic("wait0")
    probe.produce_ok(topic, values_batch(b"z", 3))
    for offset, want in ((0, [b"z-0", b"z-1", b"z-2"]), (3, [])):
        started = time.monotonic()
        answer = probe.fetch(topic, offset, max_wait_ms=0)
        elapsed = time.monotonic() - started
        probe.expect_error(answer.error_code, ErrorCode.none, f"Fetch at {offset}", answer)
        got = [r.value for r in probe.records(answer) if r.offset >= offset]
        probe.expect(got == want, f"max_wait 0 at {offset}: records {got}", response=answer,
                     expected=str(want))
        probe.expect(elapsed < LATE_S, f"max_wait 0 answered after {elapsed:.2f} s",
                     expected="at once")


@check("fetch_min_bytes_wakes", "fetch", "protocol: Fetch min_bytes; Kafka DelayedFetch "
       "completes as soon as min_bytes are available")
def fetch_min_bytes_wakes(probe: Probe):
    """A fetch waiting (max_wait 8 s) at the log end is answered soon after another connection
    produces, with the new record, well before max_wait; and min_bytes larger than what is
    there keeps it waiting until max_wait."""
    topic = probe.create_topic("minbytes")
    probe.produce_ok(topic, values_batch(b"m", 1))
    waiter = probe.leader(topic)
    writer = probe.connect(waiter.address)
    started = time.monotonic()
    correlation_id = waiter.send(1, probe.fetch_values(topic, 0, 1, max_wait_ms=8000,
                                                       min_bytes=1))
    time.sleep(0.3)
    probe.produce_ok(topic, values_batch(b"late", 1), conn=writer)
    answer = probe.fetch_partition(waiter.receive(1, correlation_id))
    elapsed = time.monotonic() - started
    values = [r.value for r in probe.records(answer)]
    probe.expect(values == [b"late-0"], "the woken fetch does not carry the new record",
                 response=answer, expected="late-0")
    probe.expect(elapsed < 4.0, f"the waiting fetch was answered after {elapsed:.2f} s",
                 expected="soon after the produce at 0.3 s, well before max_wait 8 s")
    started = time.monotonic()
    answer = probe.fetch(topic, 0, max_wait_ms=MAX_WAIT_MS, min_bytes=1 << 20)
    held = time.monotonic() - started
    probe.expect(held >= MAX_WAIT_MS / 1000 - EARLY_S,
                 f"min_bytes 1 MiB with {len(answer.records or b'')} bytes there answered after "
                 f"{held * 1000:.0f} ms", response=answer,
                 expected=f"the fetch waits max_wait {MAX_WAIT_MS} ms")
    return f"woken after {elapsed * 1000:.0f} ms; held {held * 1000:.0f} ms for min_bytes"
