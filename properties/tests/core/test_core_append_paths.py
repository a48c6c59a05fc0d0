"""The core's one append path (it validates, the log stamps and writes) on both logs of the
PartitionLog interface: a storage Log, which writes the producer's bytes without a copy, against
a MemoryLog, which stamps a copy. Same answers, same bytes stored."""

import os

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import Partition
from kafkaref.impl.protocol.records import NewRecord, build_batch
from kafkaref.impl.storage.config import LogConfig
from kafkaref.impl.storage.log import Log

appends = st.lists(st.tuples(
    st.integers(1, 5),  # records in the batch
    st.booleans(),  # idempotent (producer id 7)
    st.sampled_from(["ok", "bad-crc", "two-batches", "resent"])), min_size=1, max_size=8)


def partition_on(path, on_disk: bool) -> Partition:
    log = Log(str(path), LogConfig(segment_bytes=2000), clock_ms=lambda: 0) if on_disk else (
        MemoryLog())
    partition = Partition("t", 0, 1, log, clock=lambda: 0)
    partition.make_leader(3, {1}, (1,))
    return partition


def batch_for(index, count, idempotent, sequence):
    records = [NewRecord(value=b"v%d-%d" % (index, i), timestamp=i) for i in range(count)]
    if idempotent:
        return build_batch(records, producer_id=7, producer_epoch=0, base_sequence=sequence)
    return build_batch(records)


def log_bytes(partition) -> bytes:
    partition.log.flush()
    if isinstance(partition.log, MemoryLog):
        return b"".join(raw for _, raw in partition.log.iter_batches())
    directory = partition.log.directory
    names = sorted(n for n in os.listdir(directory) if n.endswith(".log"))
    return b"".join(open(os.path.join(directory, n), "rb").read() for n in names)


@settings(max_examples=40, deadline=None)
@given(appends)
def test_both_paths_agree(tmp_path_factory, plan):
    root = tmp_path_factory.mktemp("paths")
    fast, copying = partition_on(root / "disk", True), partition_on(root / "memory", False)
    sequence = 0
    for index, (count, idempotent, shape) in enumerate(plan):
        data = batch_for(index, count, idempotent, sequence)
        if shape == "bad-crc":
            data = data[:-1] + bytes([data[-1] ^ 1])
        elif shape == "two-batches" and not idempotent:
            data = data + batch_for(index + 100, 2, False, 0)
        answers = [p.append_as_leader(data, 1) for p in (fast, copying)]
        assert answers[0] == answers[1]
        if shape == "resent":  # a retry: a duplicate for idempotent producers, else appended
            again = [p.append_as_leader(data, 1) for p in (fast, copying)]
            assert again[0] == again[1]
            # the duplicate's answer also carries its batch's timestamp (Kafka's
            # log_append_time for a duplicate); its offsets are the first answer's
            same = [attrs.evolve(a, log_append_time=-1) for a in again]
            assert same == answers or not idempotent
        if idempotent and answers[0].error == ErrorCode.none and shape in ("ok", "resent"):
            sequence += count
        assert fast.log_end_offset == copying.log_end_offset
    assert log_bytes(fast) == log_bytes(copying)
    assert fast.high_watermark == copying.high_watermark
