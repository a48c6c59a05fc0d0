"""KIP-207 in the model: a new leader whose hw is still below the offset its epoch started at
answers a consumer's ListOffsets OFFSET_NOT_AVAILABLE where the answer would lie at or above
the hw, until its followers fetch in the new epoch and the hw reaches that offset (Kafka's
Partition.fetchOffsetForTimestamp; found by the mutation sample's 00040, which showed that no
test told ListOffsets' replica ids apart)."""

from kio.schema.errors import ErrorCode

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel
from kafkaref.model.config import ClusterConfig
from kafkaref.model.events import Elect, ListOffsets, Produce


def answer(model, request_id, broker, timestamp):
    (response,) = model.feed(ListOffsets(request_id, broker, 0, timestamp))
    return response.error, response.offset


def test_a_new_leader_answers_offset_not_available_until_its_hw_reaches_its_epoch_start():
    model = ReferenceModel(ClusterConfig(brokers=3))
    model.feed(Elect(0, 0))
    model.feed(Produce(1, 0, 0, (b"a", b"b"), acks=1))
    model.replicate(1)  # broker 1 holds both records, and an hw of 0: it learns more next fetch
    model.feed(Elect(0, 1))  # epoch 1 starts at offset 2 on broker 1, its hw still 0
    assert answer(model, 2, 1, ev.LATEST) == (ErrorCode.offset_not_available, -1)
    assert answer(model, 3, 1, 0) == (ErrorCode.offset_not_available, -1)  # record 0 lies above the hw
    assert answer(model, 4, 1, ev.EARLIEST) == (ErrorCode.none, 0)  # a position, always known
    for follower in (0, 2, 0, 2):
        model.replicate(follower)
    assert model.state.partitions[0].replicas[1].hw == 2
    assert answer(model, 5, 1, ev.LATEST) == (ErrorCode.none, 2)
    assert answer(model, 6, 1, 0) == (ErrorCode.none, 0)
