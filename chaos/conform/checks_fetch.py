"""Checks of fetch purgatory: a fetch with too little data waits up to max_wait_ms and is woken
early as soon as min_bytes are there (protocol: Fetch max_wait_ms, min_bytes); and of a
consumer's fetch sent to a follower (KIP-392)."""

from __future__ import annotations

import time

from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import check
from kafkaref.chaos.conform.checks_log import values_batch
from kafkaref.chaos.conform.probe import Probe

MAX_WAIT_MS = 600
FETCH_CLIENT_METADATA = 11  # KIP-392: from this Fetch version a follower serves consumers
RACES = 30  # acks=1 produces, each followed at once by a fetch from a follower
EARLY_S = 0.05  # a broker may answer this much before max_wait (clock granularity)
LATE_S = 1.5  # generous: the machine running the suite may be loaded
MISSING_PARTITION = 7  # a partition index the one-partition topics of these checks lack


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


@check("fetch_from_follower", "fetch", "KIP-392: a consumer's Fetch v11+ (client metadata) "
       "may be served by a follower, up to the follower's hw; Kafka's FetchParams."
       "fetchOnlyLeader")
def fetch_from_follower(probe: Probe):
    """A follower serves a consumer's Fetch v11+ up to its own hw and never returns a record at
    or above the hw its answer gives, while acks=1 records race the follower's hw; no preferred
    read replica is named (-1, Kafka's default without replica.selector.class). Before v11 the
    follower answers NOT_LEADER_OR_FOLLOWER with no records."""
    topic, _, follower, conn = probe.follower("follower")
    probe.produce_ok(topic, values_batch(b"c", 3))  # acks=all: committed, offsets 0..2
    version = probe.version(1)
    if version < FETCH_CLIENT_METADATA:
        answer = probe.fetch(topic, 0, max_wait_ms=0, conn=conn)
        probe.expect_error(answer.error_code, ErrorCode.not_leader_or_follower,
                           f"Fetch v{version} from follower {follower}", answer)
        probe.expect(not probe.records(answer), "a refused fetch carries records",
                     response=answer, expected="no records")
        return f"Fetch v{version} from follower {follower}: NOT_LEADER_OR_FOLLOWER"
    committed = _read_from_follower(probe, conn, topic, 3)
    probe.expect(committed == [b"c-0", b"c-1", b"c-2"], f"the follower served {committed}",
                 expected="c-0, c-1, c-2 at offsets 0..2")
    behind = 0
    for i in range(RACES):
        base = probe.produce_ok(topic, values_batch(b"r%d-" % i, 2), acks=1)
        answer = probe.fetch(topic, base, max_wait_ms=0, conn=conn)
        _expect_within_hw(probe, answer, base)
        behind += answer.error_code == ErrorCode.none and answer.high_watermark <= base
    return (f"Fetch v{version} from follower {follower}: 3 committed records served; {RACES} "
            f"fetches racing acks=1 records, {behind} at an offset its hw had not passed, "
            f"none above its hw")


def _read_from_follower(probe: Probe, conn, topic: str, end: int) -> list[bytes]:
    """The values at offsets 0..end-1 read from the follower, polling until its hw (learnt one
    fetch after the leader's) passes them."""
    deadline = time.monotonic() + probe.timeout_s
    while True:
        answer = probe.fetch(topic, 0, max_wait_ms=100, conn=conn)
        _expect_within_hw(probe, answer, 0)
        if answer.high_watermark >= end or time.monotonic() > deadline:
            return [r.value for r in probe.records(answer) if r.offset < end]


def _expect_within_hw(probe: Probe, answer, offset: int) -> None:
    """A follower's answer: no error (OFFSET_OUT_OF_RANGE too while it has not copied the
    offset yet), no record at or above the hw it gives, no preferred read replica."""
    probe.expect_error(answer.error_code, (ErrorCode.none, ErrorCode.offset_out_of_range),
                       f"Fetch at {offset} from a follower", answer)
    above = [r.offset for r in probe.records(answer) if r.offset >= answer.high_watermark]
    probe.expect(not above, f"the follower returned offsets {above}, at or above its hw "
                 f"{answer.high_watermark}", response=answer, expected="records below its hw")
    probe.soft(getattr(answer, "preferred_read_replica", -1) == -1, "a preferred read replica "
               "is named", response=answer, expected="-1 (no replica.selector.class)")


@check("fetch_missing_partition_apart", "fetch", "protocol: Fetch answers each partition with "
       "its own error code; KIP-227: a sessionless fetch answers every partition asked for")
def fetch_missing_partition_apart(probe: Probe):
    """A Fetch naming, before a partition that holds records, a partition its topic does not
    have and (with several brokers) a partition another broker leads answers each of those with
    an error (UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER) and the partition with its
    records: one partition's error does not cut the others from the answer."""
    topic = probe.create_topic("fetchapart", replication_factor=1)
    probe.produce_ok(topic, values_batch(b"m", 3))
    leader = probe.wait_for_leaders(topic, 1).partitions[0].leader_id
    request = probe.fetch_values(topic, 0, 0)
    present = request["topics"][0]["partitions"][0]
    request["topics"][0]["partitions"] = [{**present, "partition": MISSING_PARTITION}, present]
    failing = {(topic, MISSING_PARTITION)}
    if probe.broker_count() > 1:  # a partition this broker knows but does not host
        other = probe.create_topic("fetchaway", partitions=probe.broker_count(),
                                   replication_factor=1)
        away = [p.partition_index for p in probe.wait_for_leaders(other, None).partitions
                if p.leader_id != leader]
        if away:
            request["topics"].insert(0, probe.fetch_values(other, away[0], 0)["topics"][0])
            failing.add((other, away[0]))
    response = probe.leader(topic).call(1, request)
    names = {probe.topic_id(name): name for name, _ in failing | {(topic, 0)}}
    found = {(getattr(t, "topic", None) or names.get(getattr(t, "topic_id", None)), p.partition_index): p
             for t in response.responses for p in t.partitions}
    probe.expect(set(found) == failing | {(topic, 0)}, f"the Fetch answer holds {sorted(found)}",
                 request=request, response=response,
                 expected=f"{sorted(failing | {(topic, 0)})} (sessionless: every one asked for)")
    for key in sorted(failing):
        probe.expect_error(found[key].error_code,
                           (ErrorCode.unknown_topic_or_partition, ErrorCode.not_leader_or_follower),
                           f"Fetch of {key}, which this broker does not serve", response)
    probe.expect_error(found[(topic, 0)].error_code, ErrorCode.none, "Fetch of partition 0",
                       response)
    values = [r.value for r in probe.records(found[(topic, 0)])]
    probe.expect(values == [b"m-0", b"m-1", b"m-2"], "partition 0's records missing from the "
                 "answer", response=str(values), expected="[b'm-0', b'm-1', b'm-2']")
    return f"{len(failing)} partition(s) answered with an error, partition 0 with its records"


FETCH_SESSIONS, FETCH_TOP_LEVEL_ERROR, FETCH_ERROR_ALONE = 7, 7, 13
LIST_OFFSETS_ISOLATION = 2  # ListOffsets carries isolation_level from v2


@check("unusual_field_values", "fetch", "Apache Kafka 4.3.1's answers: IsolationLevel.forId "
       "(0 and 1 only), LogSegment.read (a negative size throws), FetchRequest.getErrorResponse, "
       "FetchManager (KIP-227: an unknown session is FETCH_SESSION_ID_NOT_FOUND)")
def unusual_field_values(probe: Probe):
    """Request fields with values clients rarely send are answered as Kafka answers them: an
    isolation level other than 0 and 1 fails ListOffsets (v2+: every partition
    UNKNOWN_SERVER_ERROR) and a consumer's Fetch (the error at the top from v7, and on every
    partition below v13); a negative max_bytes fails a partition with records to read, not one
    read at its end; an incremental Fetch (v7+, epoch 1) naming a session the broker never gave
    out is FETCH_SESSION_ID_NOT_FOUND with no partitions."""
    topic = probe.create_topic("oddfields")
    probe.produce_ok(topic, values_batch(b"o", 2))
    conn, fetch_version = probe.leader(topic), probe.version(1)
    seen = []
    if probe.version(2) >= LIST_OFFSETS_ISOLATION:
        answer = conn.call(2, {"replica_id": -1, "isolation_level": 2, "topics": [{
            "name": topic, "partitions": [{"partition_index": 0, "timestamp": -1,
                                           "current_leader_epoch": -1}]}]}).topics[0].partitions[0]
        probe.expect_error(answer.error_code, ErrorCode.unknown_server_error,
                           "ListOffsets at isolation level 2", answer)
        seen.append("ListOffsets")
    request = {**probe.fetch_values(topic, 0, 0), "isolation_level": 2}
    response = conn.call(1, request)
    if fetch_version >= FETCH_TOP_LEVEL_ERROR:
        probe.expect_error(response.error_code, ErrorCode.unknown_server_error,
                           "Fetch at isolation level 2 (top level)", response)
    if fetch_version < FETCH_ERROR_ALONE:
        probe.expect_error(probe.fetch_partition(response, request).error_code,
                           ErrorCode.unknown_server_error, "Fetch at isolation level 2", response)
    else:
        probe.expect(not response.responses, "Fetch v13+ at isolation level 2 lists partitions",
                     request=request, response=response, expected="the top-level error alone")
    seen.append("Fetch at isolation level 2")
    for offset, wanted in ((0, ErrorCode.unknown_server_error), (2, ErrorCode.none)):
        request = probe.fetch_values(topic, 0, offset, max_bytes=-1)
        answer = probe.fetch_partition(conn.call(1, request), request)
        probe.expect_error(answer.error_code, wanted, f"Fetch at {offset} with max_bytes -1",
                           answer)
    seen.append("max_bytes -1")
    if fetch_version >= FETCH_SESSIONS:
        request = {**probe.fetch_values(topic, 0, 0), "session_id": 0, "session_epoch": 1}
        response = conn.call(1, request)
        probe.expect_error(response.error_code, ErrorCode.fetch_session_id_not_found,
                           "an incremental Fetch naming no session", response)
        probe.expect(not response.responses, "an unknown session's answer lists partitions",
                     request=request, response=response, expected="no partitions")
        seen.append("an unknown fetch session")
    return f"as Kafka: {', '.join(seen)} (Fetch v{fetch_version})"
