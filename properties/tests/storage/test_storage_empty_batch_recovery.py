"""A batch whose records were all removed (61 bytes, its header only: what Kafka's log cleaner
keeps to retain a producer's state) is a valid batch: a follower's log takes it, and recovery
after a crash keeps it and everything after it (Kafka's LogSegment.recover refuses only a batch
smaller than its header, RECORD_BATCH_OVERHEAD).

Found by mutation testing (session 79fa682's survivor 00192: recovery refusing a batch of
exactly the header's size, on a line no storage test reached)."""

import pytest

from kafkaref.impl.protocol.records import HEADER_SIZE, build_batch, stamped
from kafkaref.impl.storage import Log, LogConfig


def one_record(value: bytes) -> bytes:
    return build_batch([(b"k", value, (), 1_000)])


@pytest.mark.parametrize("empty_at", [0, 1, 2])
def test_recovery_keeps_an_empty_batch_and_what_follows(tmp_path, empty_at):
    log = Log(str(tmp_path / "t-0"), LogConfig(), clock_ms=lambda: 0)
    batches = [bytes(stamped(build_batch([]) if i == empty_at else one_record(b"v%d" % i), i, 0))
               for i in range(3)]
    assert len(batches[empty_at]) == HEADER_SIZE
    for data in batches:
        assert log.append(data).batches == 1
    log.crash()
    recovered = Log(str(tmp_path / "t-0"), LogConfig(), clock_ms=lambda: 0)
    assert recovered.recovery.bytes_truncated == 0
    assert [bytes(raw) for _, raw in recovered.iter_batches()] == batches
    assert recovered.log_end_offset == 3
