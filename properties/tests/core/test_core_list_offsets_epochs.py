"""The leader epoch a ListOffsets answer names, as Kafka names it, over a leader that led in
several epochs: EARLIEST the epoch its log start was written in (the epoch cache's first entry;
UnifiedLog.fetchOffsetByTimestamp), a lookup by time the epoch of the found record's batch
(FileRecords.searchForTimestamp), LATEST the current one; EARLIEST and LATEST with timestamp -1.

Found beside mutation testing's survivor 00110 of session 79fa682 (EARLIEST and LATEST answered
timestamp +1): the same line answered EARLIEST, and every lookup by time, with the leader's
current epoch, which differs from Kafka's once the leader has changed. And EARLIEST names -1
when the cache's first entry starts above the log start (records written without a leader
epoch, NO_PARTITION_LEADER_EPOCH, as before KIP-101): session 9df4313ef37b's survivor 00270,
`first[1] <= log_start` read `>=`, passed every log whose cache starts at its log start."""

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import PartitionConfig
from kafkaref.impl.core.replica_manager import ReplicaManager
from kafkaref.impl.protocol.list_offsets import EARLIEST, LATEST
from kafkaref.impl.protocol.records import build_batch, stamped
from kafkaref.properties.clock import ManualClock

KEY = ("t", 0)


def stamp(offset: int) -> int:
    return 1_000 + 10 * offset


@given(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=4))
def test_each_answer_names_the_epoch_kafka_names(terms):
    """terms: (epochs the leader moves up by, batches it then appends), in order."""
    rm = ReplicaManager(1, ManualClock(1_000), lambda key: MemoryLog())
    epoch, epochs = -1, []  # epochs[offset]: the epoch the record at offset was written in
    for bump, batches in terms:
        epoch += bump
        rm.become_leader(KEY, PartitionConfig(), epoch, (1,), (1,))
        for _ in range(batches):
            data = build_batch([(None, b"v", (), stamp(len(epochs)))])
            rm.append_records(1_000, 1, {KEY: data}, lambda results: None)
            epochs.append(epoch)

    def answer(timestamp):
        a = rm.list_offset(KEY, timestamp)
        return a.offset, a.timestamp, a.leader_epoch

    assert answer(EARLIEST) == (0, -1, epochs[0])
    assert answer(LATEST) == (len(epochs), -1, epoch)
    for offset, written_in in enumerate(epochs):
        assert answer(stamp(offset) - 5) == (offset, stamp(offset), written_in)
    assert answer(stamp(len(epochs))) == (-1, -1, -1)


def test_earliest_names_no_epoch_when_the_log_start_has_none():
    log = MemoryLog()
    log.append(bytes(stamped(build_batch([(None, b"old", (), stamp(0))]), 0, -1)))  # no epoch
    rm = ReplicaManager(1, ManualClock(1_000), lambda key: log)
    rm.become_leader(KEY, PartitionConfig(), 2, (1,), (1,))
    rm.append_records(1_000, 1, {KEY: build_batch([(None, b"new", (), stamp(1))])},
                      lambda results: None)
    assert log.epochs.entries == [(2, 1)]
    earliest, latest = rm.list_offset(KEY, EARLIEST), rm.list_offset(KEY, LATEST)
    assert (earliest.offset, earliest.leader_epoch) == (0, -1)
    assert (latest.offset, latest.leader_epoch) == (2, 2)
