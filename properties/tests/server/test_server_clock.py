"""One clock per broker: KafkaServer hands the core its monotonic reading and every partition
log it opens its wall-clock reading, both from the one Clock it is given (impl/clock.py)."""

from kafkaref.impl.clock import Clock
from kafkaref.impl.core.partition import PartitionConfig
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.server.single import single_broker
from kafkaref.impl.storage.log import Log

WALL_MS = 1_700_000_000_000  # record timestamps are in this time (retention compares them)


class FakeTime:
    def __init__(self, start: int):
        self.now = start

    def __call__(self) -> int:
        return self.now


def test_core_and_logs_run_on_the_clock_the_broker_was_given(tmp_path):
    monotonic, wall = FakeTime(5_000), FakeTime(WALL_MS)
    server = single_broker(str(tmp_path), clock=Clock(monotonic_ms=monotonic, wall_ms=wall))
    try:
        replicas = server.broker.replica_manager
        assert replicas.clock is monotonic
        with server.lock:
            replicas.become_leader(("t", 0), PartitionConfig(), 0, (0,), (0,))
            replicas.append_records(1000, 1, {("t", 0): build_batch([(None, b"v", (), None)])},
                                    lambda results: None)
        log = replicas.partition(("t", 0)).log
        assert isinstance(log, Log) and log.clock_ms is wall
        assert log.active_segment.created_ms == WALL_MS  # not the monotonic reading
    finally:
        server.shutdown()
        server.acceptor.sock.close()  # never started: its thread did not close it
