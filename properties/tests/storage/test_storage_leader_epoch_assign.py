"""A leader's append records its epoch in the leader-epoch cache whenever it is not the latest
epoch there, whatever the numbers: here the latest entry (epoch 0) starts at offset 3 and the
new leader epoch is 3, a coincidence that must not be taken for "already recorded"."""

import tempfile

import pytest

from kafkaref.impl.protocol.records import build_batch, parse_header, stamped
from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.storage_machine import scratch_dir


@pytest.mark.parametrize("checked", [False, True], ids=["log-checks", "core-checked"])
def test_a_new_leader_epoch_is_recorded_even_where_it_equals_the_latest_entrys_start(checked):
    """core-checked: the headers come with the batch, as the core hands them (the one-batch
    path); log-checks: the log validates the batch itself."""
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as directory:
        log = Log(directory, LogConfig(retention_ms=-1), clock_ms=lambda: 0)
        try:
            log.append(bytes(stamped(build_batch([(None, b"a", (), 1000)]), 3, 0)))
            assert list(log.epochs.entries) == [(0, 3)]
            batch = build_batch([(None, b"b", (), 1000)])
            log.append_as_leader(batch, 3, checked=[parse_header(batch)] if checked else None)
            assert list(log.epochs.entries) == [(0, 3), (3, 4)]
        finally:
            log.close()
