"""flush.messages in the model: a crash keeps exactly the records the flush policy wrote to disk.

Kafka's UnifiedLog flushes a log once its unflushed messages (log end offset - recovery point)
reach flush.messages, and a Flush (here: the broker's own fsync of all its logs) flushes
everything; an unclean shutdown loses what lies past the last flush. The walks flush after every
record (properties/walk_configs.py FLUSHING) or never, so an interval above one was never
judged. Found by mutation testing (docs/mutation.md, sample 79fa682): a fresh replica counted as
flushed up to -1, which flushed an interval of N after N - 1 records."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig

STEPS = st.lists(st.one_of(st.integers(1, 3), st.just("flush")), max_size=8)


@given(interval=st.integers(1, 4), steps=STEPS)
def test_a_crash_keeps_what_the_flush_interval_flushed(interval, steps):
    model = ReferenceModel(ClusterConfig(brokers=1, replication_factor=1, min_insync_replicas=1,
                                         flush_interval_messages=interval))
    model.feed(ev.Elect(0, 0))
    leo = flushed = 0
    for number, step in enumerate(steps, start=1):
        if step == "flush":
            model.feed(ev.Flush(0))
            flushed = leo
            continue
        model.feed(ev.Produce(number, 0, 0, (b"v",) * step, ev.ACKS_LEADER))
        leo += step
        if leo - flushed >= interval:
            flushed = leo
    model.feed(ev.CrashBroker(0))
    assert model.state.partitions[0].replicas[0].leo == flushed
