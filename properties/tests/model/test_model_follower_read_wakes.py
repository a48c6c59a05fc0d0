"""A consumer fetch parked on a follower (KIP-392: it may read there, up to the follower's hw)
completes in the replica fetch that raises that follower's hw, as Kafka's fetcher completes the
delayed fetches of the partitions whose hw it raised (ReplicaFetcherThread:
completeDelayedFetchRequests), not at its timeout. ModelMachine checks the general rule after
every step (model_machine.assert_raised_hw_checks_what_waits); this fixes the case. Found by
mutation testing (the sample on 9df4313's 00195: the check skipped on a raised hw passed the model
layer)."""

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.model import effects as eff
from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig


@given(st.integers(1, 3), st.sampled_from([1, 2]))
def test_a_fetch_parked_on_a_follower_completes_when_its_hw_rises(count, reader):
    model = ReferenceModel(ClusterConfig(brokers=3))
    model.feed(ev.Elect(0, 0))
    model.feed(ev.Produce(1, 0, 0, (b"v",) * count, ev.ACKS_LEADER))
    assert model.feed(ev.Fetch(2, reader, 0, 0, min_bytes=1, max_wait_ms=1000,
                               from_follower_allowed=True)) == ()
    answers = []
    for _ in range(3):  # each follower fetches three times: the records, the leader's hw, ...
        for follower in (1, 2):
            before = model.state.partitions[0].replicas[reader].hw
            effects = model.replicate(follower)
            fetched = [e for e in effects if isinstance(e, eff.FetchResponse)]
            raised = model.state.partitions[0].replicas[reader].hw > before
            assert bool(fetched) == (raised and not answers), (follower, effects)
            answers += fetched
    assert [(e.request_id, e.via, len(e.records)) for e in answers] == [(2, eff.COMPLETED, count)]
