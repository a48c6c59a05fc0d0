"""Truncating at or beyond the log end still cuts the epoch cache at the leo, as Kafka's
UnifiedLog.truncateTo does: a broker that led an epoch without appending keeps an entry at its
leo, which a new leader's divergence answer must clear. Found by the threaded lockstep
(properties/threaded_machine.py): the follower fetched with that epoch for ever."""

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage.log import Log


def test_truncating_at_the_leo_drops_an_epoch_that_starts_there(tmp_path):
    log = Log(str(tmp_path / "t-0"))
    try:
        log.append_as_leader(build_batch([(None, b"a", (), None), (None, b"b", (), None)]), 0)
        log.epochs.assign(1, log.log_end_offset)  # led epoch 1 at offset 2, wrote nothing
        assert log.epochs.latest_epoch == 1
        log.truncate_to(2)
        assert log.epochs.latest_epoch == 0 and log.log_end_offset == 2
    finally:
        log.close()
