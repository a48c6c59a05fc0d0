"""The wire corruption fault (chaos/proxy.py corrupt_produce) and the probes (chaos/probes.py):
the proxy follows request frames across any chunking and flips the value bit of the Produce
requests it picked, which the batch CRC then refuses; other requests pass untouched."""

import random

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.chaos.proxy import _Frames
from kafkaref.chaos.values import decode_value, encode_value
from kafkaref.chaos.workload import with_matching_crcs
from kafkaref.impl.client.connection import produce_prefix
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.protocol.records import check_batch
from kafkaref.impl.protocol.records.encode import build_batch

VALUE = 7 << 32 | 5


def _produce(correlation_id: int) -> tuple[bytes, int]:
    batch = build_batch([(None, encode_value(VALUE), [], 0)])
    prefix = produce_prefix(8, correlation_id, "t", -1, 3000, "chaos", 0, len(batch))
    return prefix + batch, len(prefix)


def _versions(correlation_id: int) -> bytes:
    return wire.encode_request(correlation_id, "t", build(wire.request_class(18, 0), {}))


def _scan(stream: bytes, cuts: list[int], share: float) -> bytes:
    frames, rng, out, last = _Frames(), random.Random(0), [], 0
    for cut in [*sorted(cuts), len(stream)]:
        out.append(frames.scan(stream[last:cut], share, rng))
        last = cut
    return b"".join(out)


@given(st.lists(st.integers(0, 400), max_size=6))
def test_a_corrupted_produce_carries_a_value_nobody_wrote_and_fails_its_crc(cuts):
    produce, start = _produce(2)
    stream = _versions(1) + produce + _versions(3)
    cuts = [c for c in cuts if c <= len(stream)]
    out = _scan(stream, cuts, share=1.0)
    versions = len(_versions(1))
    assert out[:versions] == stream[:versions] and out[-versions:] == stream[-versions:]
    batch = out[versions + start:versions + len(produce)]
    end = versions + len(produce)
    if any(end - 9 < c < end for c in cuts):
        assert out == stream  # the value byte went out in an earlier chunk: left alone
        return
    assert check_batch(batch) == ErrorCode.corrupt_message
    # the record's value is the batch's last 8 bytes but its header count (0)
    assert batch[-1] == 0 and decode_value(batch[-9:-1]) == VALUE | 1 << 62
    assert decode_value(stream[versions + len(produce) - 9:-versions - 1]) == VALUE


def test_no_share_no_corruption():
    produce, _ = _produce(2)
    stream = _versions(1) + produce
    assert _scan(stream, [3, 50], share=0.0) == stream


def test_the_workload_reads_a_corrupt_batch_as_a_client_without_crc_checks_would():
    # What M7 lets into a log: the chaos consumers read it on (librdkafka's check.crcs=false)
    # so the flipped value reaches the history as a garbage_read.
    produce, start = _produce(2)
    batch = _scan(produce, [], share=1.0)[start:]
    assert check_batch(batch) == ErrorCode.corrupt_message
    fixed = with_matching_crcs(batch + batch[:20])  # a partial batch at the end is left alone
    assert check_batch(fixed[:len(batch)]) == ErrorCode.none
    assert decode_value(fixed[len(batch) - 9:len(batch) - 1]) == VALUE | 1 << 62
    assert fixed[len(batch):] == batch[:20]
