"""A parked consumer fetch completes once the bytes readable for it reach min_bytes, the bound
included (Kafka's DelayedFetch.tryComplete: `accumulatedSize >= fetchMinBytes`): a fetch waiting
at the log end for exactly the bytes of the batch that arrives next is answered when that batch
is committed, and one waiting for a byte more stays parked. Found by mutation testing (the sample
on 9df4313's 00192: the count of available bytes starting at -1, one short, passed the model
layer: no walk parked a fetch for exactly the bytes that came)."""

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.model import effects as eff
from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig
from kafkaref.model.helpers import batch_size

VALUES = st.lists(st.binary(max_size=300), min_size=1, max_size=4).map(tuple)


@given(VALUES, st.integers(0, 1))
def test_a_parked_fetch_completes_at_exactly_min_bytes(values, more):
    """One broker (the hw follows each append): a fetch at offset 0 for min_bytes = the batch's
    bytes + `more` parks, the batch arrives; answered with it at once iff more == 0."""
    model = ReferenceModel(ClusterConfig(brokers=1, replication_factor=1, min_insync_replicas=1))
    model.feed(ev.Elect(0, 0))
    wanted = batch_size([len(v) for v in values]) + more
    assert model.feed(ev.Fetch(1, 0, 0, 0, min_bytes=wanted, max_wait_ms=1000)) == ()
    effects = model.feed(ev.Produce(2, 0, 0, values, ev.ACKS_LEADER))
    fetched = [e for e in effects if isinstance(e, eff.FetchResponse)]
    if more:
        assert fetched == [] and len(model.state.purgatory) == 1
    else:
        assert [(e.via, len(e.records)) for e in fetched] == [(eff.COMPLETED, len(values))]
