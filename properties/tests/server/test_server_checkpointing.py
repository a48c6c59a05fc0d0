"""The ticker writes due hw checkpoints without the core lock, and checkpoint writes of one log
from two threads (ticker and a request path) never collide."""

import os
import threading

from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.server import KafkaServer, storage_log_factory
from kafkaref.impl.storage.checkpoint import read_entries
from kafkaref.impl.storage.config import LogConfig
from kafkaref.impl.storage.log import CHECKPOINT_FILE, Log


def checkpointed_hw(directory) -> int:
    return dict(read_entries(os.path.join(directory, CHECKPOINT_FILE)))["high_watermark"]


def test_due_checkpoint_is_written_while_another_thread_holds_the_core_lock(tmp_path):
    config = LogConfig(validate_records=False, checkpoint_interval_ms=1)
    server = KafkaServer(BrokerConfig(), ServerConfig(),
                         storage_log_factory(str(tmp_path), config))
    rm = server.broker.replica_manager
    from kafkaref.impl.core.partition import PartitionConfig

    rm.become_leader(("t", 0), PartitionConfig(), 0, (0,), (0,))
    rm.append_records(1000, 1, {("t", 0): build_batch([(None, b"v", (), None)] * 3)},
                      lambda results: None)
    log = rm.partition(("t", 0)).log
    assert isinstance(log, Log) and log.checkpoints_off_lock
    holding, release = threading.Event(), threading.Event()

    def hold_core_lock():
        with server.lock:
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold_core_lock, daemon=True)
    holder.start()
    try:
        assert holding.wait(10)
        server._checkpoint([log])  # would block for ever if it needed the core lock
        assert checkpointed_hw(log.directory) == 3
    finally:
        release.set()
        holder.join(10)
        log.close()


def test_logs_with_a_flush_policy_are_ticked_under_the_lock(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(flush_messages=10))
    try:
        assert not log.checkpoints_off_lock
    finally:
        log.close()


def test_concurrent_checkpoint_writes_of_one_log_serialize(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(checkpoint_interval_ms=1))
    errors = []

    def writer():
        try:
            for _ in range(100):
                log.write_checkpoint()
        except Exception as exc:  # noqa: BLE001 -- collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert errors == []
        assert checkpointed_hw(log.directory) == 0
    finally:
        log.close()
