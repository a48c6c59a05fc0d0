"""An idempotent producer's retry after its leader reopened the log is still a duplicate.

A restarted broker rebuilds its producer state from the batch headers of its log (Kafka loads
snapshots, then the tail): the retry of a batch written before the restart must be answered
with the offsets it already has, and the log must hold its records once. The core machine's
walks crash and restart brokers and retry, but seldom in the order that matters (the retry goes
to the reopened broker once it leads again). Found by mutation testing (docs/mutation.md, the
seed-1 trial: `producer_id >= 0` read as `<= 0` in Partition._rebuild_producer_state forgot every
producer, and the retry was appended a second time)."""

import pytest

from kafkaref.impl.storage import Log, LogConfig
from kafkaref.properties.core_machine import ATTEMPTS_MAX, CoreCluster


def reopened_and_retried(log_factory=None) -> CoreCluster:
    """One broker: an idempotent batch acknowledged, the broker restarted (its log reopened),
    elected again, and the producer's retry of that batch sent to it."""
    c = CoreCluster(brokers=1, min_insync_replicas=1, log_factory=log_factory)
    c.produce(0, -1, 2, idempotent=True)
    assert c.acked, "the first write was not acknowledged"
    c.crash(0)
    c.restart(0)
    c.elect(0)
    c.propagate(0)
    c.retry_idempotent(0)
    return c


@pytest.mark.parametrize("on_disk", [False, True], ids=["memory-log", "storage-log"])
def test_a_retry_after_the_leader_reopened_its_log_is_a_duplicate(tmp_path, on_disk):
    factory = (lambda b: Log(str(tmp_path / f"b{b}"), LogConfig(), clock_ms=lambda: 0)) if on_disk \
        else None
    c = reopened_and_retried(factory)
    p = c.partition(0)
    assert p.is_leader
    ids = [r.id // ATTEMPTS_MAX for r in c.record_ids(0)]
    assert ids == [0, 1], f"the retry was appended again: {ids}"
    assert c.acked == {0: 0, 1: 1}, "the retry was acknowledged at other offsets"
    assert p.log.log_end_offset == 2
