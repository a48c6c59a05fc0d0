"""A partition change that moves only the ELR (KIP-966: an ELR member crashed) still reaches
every live broker, as every partition change record does in KRaft: the live replicas learn the
new partition epoch; a crashed replica learns nothing while down, and a broker that holds no
replica of the partition has none to update.

Found by mutation testing (session 79fa682's survivor 00274: `r is not None and alive` read as
`or`, so a crashed replica was updated and a live broker without a replica crashed the step;
the model layer's walks never moved an ELR alone with a broker outside the assignment)."""

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig


def test_an_elr_only_change_reaches_the_live_replicas_only():
    model = ReferenceModel(ClusterConfig(brokers=4, partitions=1, replication_factor=3,
                                         min_insync_replicas=2, replica_lag_time_max_ms=100))
    model.feed(ev.Elect(0, 0))
    model.feed(ev.Produce(1, 0, 0, (b"a",), 1))
    for _ in range(6):  # followers 1 and 2 never fetch: the ISR shrinks to {0}, they go to ELR
        model.feed(ev.Tick(100))
        model.feed(ev.CommitIsrChange(0))
    control = model.state.partitions[0].control
    assert (control.isr, control.elr) == ({0}, {1, 2})
    before = control.partition_epoch
    crashed_knew = model.state.partitions[0].replicas[1].partition_epoch
    model.feed(ev.CrashBroker(1))  # an ELR member down: the ELR alone changes
    part = model.state.partitions[0]
    assert (part.control.isr, part.control.elr) == ({0}, {2})
    assert part.control.partition_epoch == before + 1
    assert [None if r is None else r.partition_epoch for r in part.replicas] == [
        before + 1, crashed_knew, before + 1, None]
