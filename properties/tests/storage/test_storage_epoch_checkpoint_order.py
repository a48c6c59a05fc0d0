"""A leader-epoch-checkpoint whose entries do not grow (an epoch not above the one before it, or
a start offset below the one before it) is damage, not a cache: reopening the log rebuilds the
cache from its batches' epochs, as for a missing or unreadable checkpoint.

Found by mutation testing (session 79fa682's survivor 00243: the loop that checks the order
made to run zero times, so such a file was taken as the cache)."""

import os

import pytest

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.impl.storage.checkpoint import write_entries
from kafkaref.impl.storage.epoch_cache import FILE_NAME


def open_log(path) -> Log:
    return Log(str(path), LogConfig(), clock_ms=lambda: 0)


@pytest.mark.parametrize("damaged", [
    [(2, 0), (0, 2)],  # epochs going down
    [(0, 0), (0, 2)],  # an epoch twice
    [(0, 2), (2, 0)],  # starts going down
], ids=["epochs-down", "epoch-twice", "starts-down"])
def test_a_checkpoint_out_of_order_is_rebuilt_from_the_batches(tmp_path, damaged):
    log = open_log(tmp_path / "t-0")
    for epoch in (0, 0, 2, 2):
        log.append_as_leader(build_batch([(b"k", b"v", (), 1_000)]), epoch)
    log.flush()
    log.close()
    write_entries(os.path.join(tmp_path / "t-0", FILE_NAME), damaged)
    assert open_log(tmp_path / "t-0").epochs.entries == [(0, 0), (2, 2)]
