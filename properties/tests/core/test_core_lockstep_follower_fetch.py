"""KIP-392 in lockstep: the model and the core cluster (properties/lockstep.py) fed the same
events answer a consumer's fetch sent to a follower the same way: served up to the follower's
hw when the request carries client metadata (the core gets it at Fetch v11 or v18), refused
otherwise (v9 or v10); a fetch parked on a follower completes when the follower's hw rises.
A scripted walk, so that the case the random walk reaches only sometimes (a follower holding
records above its hw) is always covered."""

from kio.schema.errors import ErrorCode

from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel, replica_fetch_for
from kafkaref.model.config import ClusterConfig
from kafkaref.model.effects import COMPLETED, FetchResponse
from kafkaref.properties.lockstep import (
    CoreLockstep,
    core_image,
    observable_state,
    same_effects_any_order,
)

LEADER, FOLLOWER, OTHER = 0, 1, 2


class Both:
    """The model and the core fed the same events; every step's effects and the observable
    state compared."""

    def __init__(self):
        config = ClusterConfig()
        self.model, self.core, self.next_id = ReferenceModel(config), CoreLockstep(config), 0

    def feed(self, event) -> tuple:
        expected, actual = self.model.feed(event), self.core.feed(event)
        assert same_effects_any_order(expected, actual), (event, expected, actual)
        assert observable_state(core_image(self.core)) == observable_state(self.model.state)
        return expected

    def replicate(self, follower: int) -> tuple:
        return self.feed(replica_fetch_for(self.model.state, follower, 0))

    def produce(self, *values: bytes) -> None:
        self.next_id += 1
        self.feed(ev.Produce(self.next_id, LEADER, 0, values, ev.ACKS_LEADER))

    def fetch(self, offset: int, client_metadata: bool, max_wait_ms: int = 0,
              epoch: int = -1) -> tuple:
        self.next_id += 1
        return self.feed(ev.Fetch(self.next_id, FOLLOWER, 0, offset, max_wait_ms=max_wait_ms,
                                  current_leader_epoch=epoch,
                                  from_follower_allowed=client_metadata))


def follower_above_its_hw() -> Both:
    """The follower holds offsets 0..2 (batches [0] and [1, 2]) and knows hw 1."""
    both = Both()
    both.feed(ev.Elect(0, LEADER))
    both.produce(b"a")
    for _ in range(2):
        both.replicate(FOLLOWER)
        both.replicate(OTHER)
    both.produce(b"b", b"c")
    both.replicate(FOLLOWER)
    replica = both.model.state.partitions[0].replicas[FOLLOWER]
    assert (replica.leo, replica.hw) == (3, 1)
    return both


def answer(effects) -> FetchResponse:
    (only,) = [e for e in effects if isinstance(e, FetchResponse)]
    return only


def test_a_follower_serves_a_fetch_with_client_metadata_up_to_its_hw():
    both = follower_above_its_hw()
    served = answer(both.fetch(0, client_metadata=True))
    assert (served.error, served.high_watermark, [r.value for r in served.records]) == (
        ErrorCode.none, 1, [b"a"])
    assert answer(both.fetch(0, client_metadata=False)).error == (
        ErrorCode.not_leader_or_follower)
    assert [answer(both.fetch(offset, True)).error for offset in (1, 3, 4)] == [
        ErrorCode.none, ErrorCode.none, ErrorCode.offset_out_of_range]
    assert answer(both.fetch(0, True, epoch=1)).error == ErrorCode.unknown_leader_epoch


def test_a_fetch_parked_on_a_follower_completes_when_its_hw_rises():
    both = follower_above_its_hw()
    assert both.fetch(1, client_metadata=True, max_wait_ms=5_000) == ()  # parked
    completed = []
    for _ in range(3):
        completed += [e for f in (FOLLOWER, OTHER) for e in both.replicate(f)
                      if isinstance(e, FetchResponse)]
    (done,) = completed
    assert (done.via, done.high_watermark, [r.value for r in done.records]) == (
        COMPLETED, 3, [b"b", b"c"])


def test_a_fetch_parked_above_a_follower_that_truncates_is_out_of_range_once_woken():
    """The follower holding records 1..2 above its hw loses them to a new leader that never had
    them; a fetch parked at 3 is answered OFFSET_OUT_OF_RANGE when the follower's hw next rises
    (Kafka's DelayedFetch case F: the fetch offset is past the log end)."""
    both = follower_above_its_hw()
    assert both.fetch(3, client_metadata=True, max_wait_ms=60_000) == ()  # parked
    both.feed(ev.CrashBroker(LEADER))
    both.feed(ev.Elect(0, OTHER))  # OTHER never fetched records 1..2
    both.next_id += 1
    both.feed(ev.Produce(both.next_id, OTHER, 0, (b"d",), ev.ACKS_LEADER))
    completed = []
    for _ in range(4):
        completed += [e for e in both.replicate(FOLLOWER) if isinstance(e, FetchResponse)]
    replica = both.model.state.partitions[0].replicas[FOLLOWER]
    assert replica.leo == 2  # truncated to 1, then "d" copied
    (done,) = completed
    assert (done.error, done.via) == (ErrorCode.offset_out_of_range, COMPLETED)
