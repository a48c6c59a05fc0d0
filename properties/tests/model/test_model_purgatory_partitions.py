"""A broker leading several partitions parks requests for each; an hw rising in one answers that
partition's requests only (Kafka's purgatories key each operation by its partition), the other's
wait for their own: an acks=all produce until its own partition's hw covers it, a fetch until
its own partition has what it asks.

Found by mutation testing (session 79fa682's survivor 00199: the purgatory check's `and` read as
`or`, so an hw rising in one partition settled every operation of the broker with that
partition's replica) passed the model layer, whose walks seldom have one broker lead two
partitions with requests parked on both."""

from kio.schema.errors import ErrorCode

from kafkaref.model import effects as eff
from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel, replica_fetch_for
from kafkaref.model.config import ClusterConfig
from kafkaref.properties.model_machine import assert_parked_answers_come_from_their_partition


def fed(model: ReferenceModel, event: ev.Event) -> tuple:
    before = model.state
    effects = model.feed(event)
    assert_parked_answers_come_from_their_partition(before, model.state, effects)
    return effects


def test_an_hw_rising_in_one_partition_answers_only_its_own_parked_requests():
    model = ReferenceModel(ClusterConfig(brokers=3, partitions=2))
    for p in (0, 1):
        fed(model, ev.Elect(p, 0))  # broker 0 leads both
    assert fed(model, ev.Produce(1, 0, 1, (b"one",), ev.ACKS_ALL, 60_000)) == ()  # parked
    assert fed(model, ev.Fetch(2, 0, 1, 0, min_bytes=1 << 20, max_wait_ms=60_000)) == ()
    assert fed(model, ev.Produce(3, 0, 0, (b"zero",), ev.ACKS_ALL, 60_000)) == ()
    answered = []
    for _ in range(2):  # partition 0's followers catch up: its hw rises
        for follower in (1, 2):
            effects = fed(model, replica_fetch_for(model.state, follower, 0))
            answered += [e for e in effects if isinstance(e, eff.Response)]
    assert [(e.request_id, e.error, e.via) for e in answered] == [
        (3, ErrorCode.none, eff.COMPLETED)]
    assert {op.request_id for op in model.state.purgatory} == {1, 2}  # partition 1's wait
    assert [model.state.partitions[p].replicas[0].hw for p in (0, 1)] == [1, 0]
