"""A reopened log's recovery report says whether it found a valid partition checkpoint (the
diagnostic `kafkaref` logs and the storage machine's notes print): yes after a clean close, no
when the file is gone or unreadable (recovery then scans from the first segment).

Found by mutation testing (session 2225a175104f's survivor 00337): `saved is not None` read
`is None` passed every storage test, none of which read the field."""

import os

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.impl.storage.recovery import CHECKPOINT_FILE

CONFIG = LogConfig(retention_ms=-1)


@pytest.mark.parametrize("damage", [None, "gone", "garbage"])
def test_the_report_says_whether_the_checkpoint_was_valid(tmp_path, damage):
    log = Log(str(tmp_path), CONFIG, clock_ms=lambda: 0)
    assert log.append_as_leader(build_batch([(b"k", b"v", (), 1)]), 0).error == ErrorCode.none
    log.close()
    path = tmp_path / CHECKPOINT_FILE
    if damage == "gone":
        os.unlink(path)
    elif damage == "garbage":
        path.write_bytes(b"not a checkpoint\n")
    reopened = Log(str(tmp_path), CONFIG, clock_ms=lambda: 0)
    assert reopened.recovery.checkpoint_valid == (damage is None)
    assert reopened.log_end_offset == 1
    reopened.close()
