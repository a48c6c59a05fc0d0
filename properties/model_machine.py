"""A reusable Hypothesis state machine over the reference model (like zarr's testing package).

ModelMachine(config, sut_factory=None, ...) is a RuleBasedStateMachine whose rules are client
requests, replica fetches, clock ticks and faults (crashes, restarts, elections, ISR changes,
flushes). Every event goes to the model; when a system under test is given (a factory taking the
ClusterConfig and returning an object with feed(event) -> effects, such as properties/lockstep.py's
adapter over impl/core), the same event goes to it and its effects must equal the model's (or
satisfy `compare`). Invariants: the model's client-level properties (model/properties.py) and the
spec's invariants on the refinement image of every partition. A broker that replicates by itself
has a coarser rule set of its own: properties/threaded_machine.py.

    TestWalk = bind(ModelMachine, config=ClusterConfig(brokers=3)).TestCase
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from kio.schema.errors import ErrorCode

from kafkaref.model import effects as eff
from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel, replica_fetch_for
from kafkaref.model.config import ClusterConfig
from kafkaref.model.effects import (
    COMPLETED,
    EXPIRED,
    IMMEDIATE,
    Disconnected,
    Effect,
    ElectionResult,
    ReplicaFetchResult,
)
from kafkaref.model.refinement import image_violations
from kafkaref.model.render import render_state
from kafkaref.model.step import isr_check_times, lag_check_laggards, parked_answer, step
from kafkaref.model.values import DelayedFetch, DelayedProduce, ModelState
from kafkaref.properties.stateful import note, per_machine


def delete_records_offset(replica, back: int) -> int:
    """The offset a DeleteRecords rule asks for: hw - back; back -1: one past the hw
    (OFFSET_OUT_OF_RANGE), -2: HIGH_WATERMARK (this machine's and the threaded one's)."""
    hw = replica.hw if replica is not None else 0
    return {-2: ev.HIGH_WATERMARK, -1: hw + 1}.get(back, max(0, hw - back))

class SystemUnderTest(Protocol):
    def feed(self, event: ev.Event) -> Sequence[Effect]: ...


Compare = Callable[[Sequence[Effect], Sequence[Effect]], bool]


def _same_effects(expected: Sequence[Effect], actual: Sequence[Effect]) -> bool:
    return list(expected) == list(actual)


@attrs.frozen
class StateCheck:
    """How to compare the system's state with the model's after every step: `image` maps the
    system to a ModelState, `observe` projects a ModelState onto what must be equal, and
    `describe(model_state, system_image)` explains a difference (both sides rendered)."""

    image: Callable[[SystemUnderTest], ModelState]
    observe: Callable[[ModelState], object]
    describe: Callable[[ModelState, ModelState], str]


FIRED: collections.Counter = collections.Counter()
"""How often each rule ("rule NAME": calls that fed at least one event) and each event outcome
fired in this process (properties/lockstep_bench.py prints it)."""


def _pending(state: ModelState, p: int):
    found = state.leader_replica(p)
    return None if found is None else found[1].pending_isr


def fired_labels(event: ev.Event, effects: Sequence[Effect], before: ModelState,
                 after: ModelState) -> list[str]:
    """Names for what one event did: its kind and outcome, plus one per answer that left
    purgatory (completed, expired) or was lost to a crash."""
    kind = type(event).__name__
    errors = sorted({e.error.name for e in effects if hasattr(e, "error")})
    outcome = ",".join(errors) or "no answer"
    labels = []
    if isinstance(event, ev.Produce):
        shape = "+batches" if event.more_batches else ""
        labels.append(f"Produce acks={event.acks}{shape}: {outcome if effects else 'parked/none'}")
    elif isinstance(event, ev.Fetch | ev.ListOffsets | ev.DeleteRecords):
        lagging = ""
        if 0 <= event.partition < before.config.partitions:
            replica = before.partitions[event.partition].replicas[event.broker]
            if replica is not None and replica.hw < replica.leo:
                lagging = " (hw<leo)"
        answered = outcome if any(e.via == IMMEDIATE for e in effects if hasattr(e, "via")
                                  ) or isinstance(event, ev.ListOffsets) else "parked"
        labels.append(f"{kind}{lagging}: {answered}")
    elif isinstance(event, ev.ReplicaFetch):
        (result, *_) = effects or (None,)
        if result is None:
            labels.append("ReplicaFetch: follower down")
        elif result.diverging is not None:
            labels.append("ReplicaFetch: diverging epoch" + (", truncated" if result.truncated_to is not None else ""))
        elif event.response_lost:
            labels.append(f"ReplicaFetch: response lost ({result.error.name})")
        else:
            known = 0 <= event.partition < before.config.partitions
            leader = before.partitions[event.partition].replicas[event.leader] if known else None
            short = leader is not None and 0 < result.appended < leader.leo - event.fetch_offset
            labels.append(f"ReplicaFetch: {result.error.name}" + (", cut by max_bytes" if short else ""))
    elif isinstance(event, ev.Retention):
        def start(state):
            replica = state.partitions[event.partition].replicas[event.broker]
            return None if replica is None else replica.log_start
        moved = start(before) != start(after)
        labels.append(f"Retention: {'log start moved' if moved else 'nothing deleted'}")
    elif isinstance(event, ev.Tick):
        proposed = any(_pending(before, p) is None and _pending(after, p) is not None
                       for p in range(before.config.partitions))
        labels.append(f"Tick: {'expiries' if effects else 'no expiry'}"
                      + (", ISR shrink proposed" if proposed else ""))
    else:
        labels.append(f"{kind}: {outcome}")
    for effect in effects:
        via = getattr(effect, "via", None)
        if via in (COMPLETED, EXPIRED):
            labels.append(f"purgatory {via}: {type(effect).__name__} {effect.error.name}")
        elif isinstance(effect, Disconnected):
            labels.append("answer lost: disconnected")
    return labels


def assert_lost_answer_ignored(event: ev.Event, before: ModelState, after: ModelState,
                               effects: Sequence[Effect]) -> None:
    """A replica fetch whose answer was lost (the leader handled it; the follower never saw the
    answer) leaves the follower as it was and is reported not applied, whatever the follower's
    state: the leader's side may move (its view of the follower, the hw), the follower's not."""
    if not isinstance(event, ev.ReplicaFetch) or not event.response_lost or not (
            0 <= event.partition < before.config.partitions):
        return
    replicas = (before.partitions[event.partition].replicas[event.follower],
                after.partitions[event.partition].replicas[event.follower])
    assert replicas[0] == replicas[1], f"{event!r}: the lost answer changed the follower"
    assert not any(e.applied for e in effects if isinstance(e, ReplicaFetchResult)), (
        f"{event!r}: a lost answer reported applied: {list(effects)!r}")


def assert_election_answered_with_its_epoch(event: ev.Event, before: ModelState,
                                            after: ModelState, effects: Sequence[Effect]) -> None:
    """An election's result names the leader epoch it began, the partition's new one; a refused
    election changes nothing and names none (-1, what the core's controller answers)."""
    if not isinstance(event, ev.Elect):
        return
    [result] = [e for e in effects if isinstance(e, ElectionResult)]
    if result.error != ErrorCode.none:
        assert after is before and result.leader_epoch == -1, f"{event!r} refused: {result!r}"
        return
    control = after.partitions[event.partition].control
    assert (control.leader, control.leader_epoch) == (event.leader, result.leader_epoch), (
        f"{event!r}: {result!r} but the partition's leader and epoch are {control}")
    assert result.leader_epoch > before.partitions[event.partition].control.leader_epoch


def assert_answers_say_unknown_as_kafka(effects: Sequence[Effect]) -> None:
    """Where an answer names no position it says -1, as Kafka's do (its INVALID_OFFSET,
    INVALID_HIGH_WATERMARK, INVALID_LOW_WATERMARK, UNKNOWN_TIMESTAMP; clients read them): a
    produce that appended nothing names no base offset; a failed fetch no hw, log start or first
    offset and no records; a ListOffsets without an offset no timestamp, and a failed one
    neither; a refused DeleteRecords (an error other than the timeout, which reports the low
    watermark reached) no low watermark. Literal -1 here: the answers' defaults must be it."""
    for effect in effects:
        if isinstance(effect, eff.ProduceResponse):
            assert (effect.base_offset == -1) == (not effect.record_ids), f"{effect!r}"
        elif isinstance(effect, eff.FetchResponse) and effect.error != ErrorCode.none:
            assert (effect.high_watermark, effect.log_start_offset, effect.first_offset,
                    effect.records) == (-1, -1, -1, ()), f"{effect!r}"
        elif isinstance(effect, eff.ListOffsetsResponse):
            assert effect.offset != -1 or effect.timestamp == -1, f"{effect!r}"
            assert effect.error == ErrorCode.none or effect.offset == -1, f"{effect!r}"
        elif isinstance(effect, eff.DeleteRecordsResponse) and effect.error not in (
                ErrorCode.none, ErrorCode.request_timed_out):
            assert effect.low_watermark == -1, f"{effect!r}"


def assert_retention_moves_the_log_start(event: ev.Event, before: ModelState,
                                         after: ModelState) -> None:
    """A retention run (events.Retention) on a live replica moves its log start to the offset
    when that lies above the log start and at or below the hw; any other offset deleted
    nothing and leaves the replica as it was."""
    if not isinstance(event, ev.Retention):
        return
    was = before.partitions[event.partition].replicas[event.broker]
    now = after.partitions[event.partition].replicas[event.broker]
    if was is None or not before.alive[event.broker]:
        assert now == was, f"{event!r}: a dead replica's retention run changed it"
    elif was.log_start < event.offset <= was.hw:
        assert now.log_start == event.offset, (
            f"{event!r}: the log start is {now.log_start}, not the offset (it was {was.log_start}, "
            f"hw {was.hw})")
    else:
        assert now == was, f"{event!r}: a run past (log start {was.log_start}, hw {was.hw}] moved it"


def assert_every_leader_checked_its_lag(event: ev.Event, before: ModelState,
                                        after: ModelState) -> None:
    """After a Tick past a lag check (Kafka's isr-expiration task), no partition is left with
    followers that check would drop: each proposed to drop them, whatever the other partitions
    are (leaderless, their leader down or with a change in flight)."""
    if not isinstance(event, ev.Tick):
        return
    checks = isr_check_times(after.config, before.now_ms, after.now_ms)
    for p in range(after.config.partitions) if checks else ():
        laggards = lag_check_laggards(after, p, checks[-1])
        assert not laggards, f"{event!r}: partition {p} kept laggards {sorted(laggards)} in its ISR"


def assert_parked_answers_come_from_their_partition(before: ModelState, after: ModelState,
                                                    effects: Sequence[Effect]) -> None:
    """A request answered out of purgatory is answered from its own partition on its own
    broker: an acks=all produce NONE only once that replica's hw covers its records (Kafka's
    DelayedProduce), a fetch with that replica's records at the offsets it names."""
    parked = {op.request_id: op for op in before.purgatory}
    for effect in effects:
        op = parked.get(getattr(effect, "request_id", None))
        if op is None or getattr(effect, "via", None) != COMPLETED:
            continue
        replica = after.partitions[op.partition].replicas[op.broker]
        if isinstance(op, DelayedProduce) and effect.error == ErrorCode.none:
            assert replica.hw >= op.required_offset, f"{op!r} answered {effect!r} at hw {replica.hw}"
        if isinstance(op, DelayedFetch) and effect.records:
            held = [replica.log[effect.first_offset + i] for i in range(len(effect.records))
                    if effect.first_offset + i < len(replica.log)]
            assert held == list(effect.records), f"{op!r} answered records not its partition's"


def assert_raised_hw_checks_what_waits(event: ev.Event, before: ModelState,
                                       after: ModelState) -> None:
    """Where a step raised a replica's hw, nothing parked on that replica could still be answered
    now: Kafka checks every operation watching a partition when its hw rises (the leader's
    Partition.tryCompleteDelayedRequests; a follower's fetcher completeDelayedFetchRequests for
    the consumer fetches parked on it, KIP-392). Other wake-ups are Kafka's own and narrower (a
    follower that truncates wakes nothing; the parked fetch waits for its expiry)."""
    for op in after.purgatory:
        was = before.partitions[op.partition].replicas[op.broker]
        now = after.partitions[op.partition].replicas[op.broker]
        if was is None or now is None or now.hw <= was.hw:
            continue
        answer = parked_answer(after, op)
        assert answer is None, (f"after {event!r} raised the hw of {op.broker}: {op!r} still "
                                f"parked, though answerable: {answer!r}")


# Rule arguments that depend on the configuration (properties/stateful.py, per_machine).
BROKERS = per_machine(lambda m: st.integers(0, m.config.brokers - 1))
PARTITIONS = per_machine(lambda m: st.integers(0, m.config.partitions - 1))
FETCH_SPOTS = ("before start", "start", "below hw", "hw", "leo", "past leo")
REPLICA_INDEXES = per_machine(lambda m: st.integers(0, m.config.replication_factor - 1))
TICKS = per_machine(lambda m: st.sampled_from((1, 40, 600, m.config.replica_lag_time_max_ms + 1,
                                               2 * m.config.replica_lag_time_max_ms)))


class ModelMachine(RuleBasedStateMachine):
    """Rules: client requests, replica fetches, clock ticks and faults (crashes, restarts,
    elections, ISR changes, flushes), each fed to the model and, when sut_factory is given, to
    the system it builds from the ClusterConfig; its effects must equal the model's (or satisfy
    compare) and, with state_check, its state the model's after every step."""

    def __init__(self, config: ClusterConfig,
                 sut_factory: Callable[[ClusterConfig], SystemUnderTest] | None = None,
                 compare: Compare = _same_effects, check_spec_invariants: bool = True,
                 state_check: StateCheck | None = None) -> None:
        super().__init__()
        self.config = config
        self.compare, self.state_check = compare, state_check
        self.check_spec_invariants = check_spec_invariants
        self.model = ReferenceModel(config)
        self.sut = sut_factory(config) if sut_factory is not None else None
        self.next_request_id = 0
        self._rule_frame = None
        for p in range(config.partitions):  # start with leaders, as a real cluster does
            self.feed(ev.Elect(p, config.assignment(p)[0]))

    # -- plumbing ---------------------------------------------------------------------

    def feed(self, event: ev.Event) -> Sequence[Effect]:
        caller = sys._getframe(1)  # the rule feeding: counted once per call (coverage)
        if caller is not self._rule_frame:
            self._rule_frame = caller
            name = caller.f_code.co_name
            FIRED["rule " + ("(initial elections)" if name == "__init__" else name)] += 1
        before = self.model.state
        expected = self.model.feed(event)
        for label in fired_labels(event, expected, before, self.model.state):
            FIRED[label] += 1
        note(f"{event!r} -> {list(expected)!r}")
        assert_lost_answer_ignored(event, before, self.model.state, expected)
        assert_election_answered_with_its_epoch(event, before, self.model.state, expected)
        assert_answers_say_unknown_as_kafka(expected)
        assert_parked_answers_come_from_their_partition(before, self.model.state, expected)
        assert_retention_moves_the_log_start(event, before, self.model.state)
        assert_every_leader_checked_its_lag(event, before, self.model.state)
        assert_raised_hw_checks_what_waits(event, before, self.model.state)
        if self.sut is not None:
            actual = self.sut.feed(event)
            assert self.compare(expected, actual), (
                f"{event!r}: effects differ\nmodel  {list(expected)!r}\nsystem {list(actual)!r}"
                f"\n{self._states()}")
            if self.state_check is not None:
                image = self.state_check.image(self.sut)
                assert (self.state_check.observe(self.model.state)
                        == self.state_check.observe(image)), (
                    f"after {event!r} the states differ\n"
                    f"{self.state_check.describe(self.model.state, image)}")
        return expected

    def _states(self) -> str:
        if self.state_check is None:
            return ""
        return self.state_check.describe(self.model.state, self.state_check.image(self.sut))

    def request_id(self) -> int:
        self.next_request_id += 1
        return self.next_request_id

    def leader_or_any(self, p: int, pick_leader: bool, broker: int) -> int:
        leader = self.model.state.partitions[p].control.leader
        return leader if pick_leader and leader is not None else broker

    # -- client requests --------------------------------------------------------------

    @rule(p=PARTITIONS, to_leader=st.booleans(), broker=BROKERS, acks=st.sampled_from([-1, -1, 1, 0]),
          count=st.integers(1, 3), timeout_ms=st.sampled_from([0, 50, 1000, 60_000]),
          more=st.sampled_from([0, 0, 0, 0, 0, 0, 0, 1]))
    def produce(self, p, to_leader, broker, acks, count, timeout_ms, more):
        """more=1: a second batch for the partition in the same request (Kafka refuses)."""
        broker = self.leader_or_any(p, to_leader, broker)
        values = tuple(b"v%d" % (self.next_request_id * 4 + i) for i in range(count))
        extra = ((b"x%d" % self.next_request_id,),) if more else ()
        self.feed(ev.Produce(self.request_id(), broker, p, values, acks, timeout_ms, extra))

    @rule(p=PARTITIONS, to_leader=st.booleans(), broker=BROKERS, back=st.integers(-1, 3),
          min_bytes=st.sampled_from([1, 1, 70, 200]), max_wait_ms=st.sampled_from([0, 0, 100, 5000]),
          max_bytes=st.sampled_from([1, 80, 1 << 20]), epoch=st.sampled_from([None, None, 0, -1, 1]),
          client_metadata=st.booleans())
    def consumer_fetch(self, p, to_leader, broker, back, min_bytes, max_wait_ms, max_bytes, epoch,
                       client_metadata):
        """epoch: the current leader epoch the client sends, relative to the broker's (None:
        not sent, as old clients do). client_metadata: the request may be read from a follower
        (KIP-392, Fetch v11+; the lockstep sends it at v11 or v18, else at v4 or v10)."""
        broker = self.leader_or_any(p, to_leader, broker)
        replica = self.model.state.partitions[p].replicas[broker]
        hw = replica.hw if replica is not None else 0
        offset = max(0, hw - back) if back >= 0 else hw + 1
        leader_epoch = -1
        if epoch is not None and replica is not None and replica.leader_epoch + epoch >= 0:
            leader_epoch = replica.leader_epoch + epoch
        self.feed(ev.Fetch(self.request_id(), broker, p, offset, max_bytes, min_bytes,
                           max_wait_ms, leader_epoch, client_metadata))

    @precondition(lambda self: hasattr(self.sut, "fetch_many") and self.up())
    @rule(pick=st.integers(0, 8), spots=st.lists(st.sampled_from(FETCH_SPOTS), min_size=8, max_size=8),
          epochs=st.lists(st.sampled_from([None, None, 0, 0, -1, 1]), min_size=8, max_size=8))
    def fetch_many(self, pick, spots, epochs):
        """One consumer Fetch naming every partition, each in its own state on the broker (led
        or followed here, or not hosted; offsets from below the log start to past the end;
        epochs one below, equal to and one above the broker's, or not sent): each partition
        must be answered as a Fetch of it alone (the model's step, which keeps no state for an
        immediate answer), whatever the others hold."""
        leaders = [c.leader for c in (part.control for part in self.model.state.partitions)
                   if c.leader is not None and self.model.state.alive[c.leader]]
        brokers = leaders + self.up()  # a partition's leader more often than not
        broker = brokers[pick % len(brokers)]
        fetches = [self.fetch_at(broker, p, spots[p % 8], epochs[p % 8])
                   for p in range(self.config.partitions)]
        expected = [effect for e in fetches for effect in step(self.model.state, e)[1]]
        note(f"fetch_many {fetches!r} -> {expected!r}")
        actual = self.sut.fetch_many(broker, fetches)
        assert self.compare(expected, actual), (
            f"fetch of {len(fetches)} partitions from {broker}: answers differ\n"
            f"model  {expected!r}\nsystem {list(actual)!r}\n{self._states()}")

    def fetch_at(self, broker: int, p: int, spot: str, epoch: int | None) -> ev.Fetch:
        replica = self.model.state.partitions[p].replicas[broker]
        if replica is None:
            return ev.Fetch(self.request_id(), broker, p, 0)
        start, hw, leo = replica.log_start, replica.hw, replica.leo
        offset = {"before start": start - 1, "start": start, "below hw": hw - 1, "hw": hw,
                  "leo": leo, "past leo": leo + 1}[spot]
        leader_epoch = -1 if epoch is None else max(-1, replica.leader_epoch + epoch)
        return ev.Fetch(self.request_id(), broker, p, max(0, offset),
                        current_leader_epoch=leader_epoch)

    @rule(p=PARTITIONS, to_leader=st.booleans(), broker=BROKERS, latest=st.booleans())
    def list_offsets(self, p, to_leader, broker, latest):
        broker = self.leader_or_any(p, to_leader, broker)
        timestamp = ev.LATEST if latest else ev.EARLIEST
        self.feed(ev.ListOffsets(self.request_id(), broker, p, timestamp))

    @rule(p=PARTITIONS, to_leader=st.booleans(), broker=BROKERS, back=st.integers(-2, 2),
          timeout_ms=st.sampled_from([0, 50, 1000, 60_000]))
    def delete_records(self, p, to_leader, broker, back, timeout_ms):
        """Up to hw - back; back -1: one past the hw (OFFSET_OUT_OF_RANGE), -2: HIGH_WATERMARK."""
        broker = self.leader_or_any(p, to_leader, broker)
        offset = delete_records_offset(self.model.state.partitions[p].replicas[broker], back)
        self.feed(ev.DeleteRecords(self.request_id(), broker, p, offset, timeout_ms))

    @rule(kind=st.sampled_from(["produce", "fetch", "list", "empty", "acks", "replica", "elect",
                                "stranger", "time", "commit"]),
          broker=BROKERS, other=BROKERS, when=st.sampled_from([0, 12345, -3]))
    def bad_input(self, kind, broker, other, when):
        """Requests the model calls impossible get the same error code on both sides: an
        unknown partition, an empty produce, invalid acks, a fetch from a broker that holds
        no replica, an election of a non-replica or of a broker id outside the cluster, an
        ISR commit for an unknown partition; and a ListOffsets by time (outside the
        client alphabet: the model has no timestamps, docs/lockstep.md)."""
        unknown = self.config.partitions
        if kind == "stranger":
            self.feed(ev.Elect(0, self.config.brokers + broker))
            return
        if kind == "time":
            self.feed(ev.ListOffsets(self.request_id(), broker, 0, when))
            return
        if kind == "commit":
            self.feed(ev.CommitIsrChange(unknown))
            return
        if kind == "produce":
            self.feed(ev.Produce(self.request_id(), broker, unknown, (b"u",), 1))
        elif kind == "fetch":
            self.feed(ev.Fetch(self.request_id(), broker, unknown, 0))
        elif kind == "list":
            self.feed(ev.ListOffsets(self.request_id(), broker, unknown))
        elif kind == "empty":
            self.feed(ev.Produce(self.request_id(), broker, 0, (), 1))
        elif kind == "acks":
            self.feed(ev.Produce(self.request_id(), broker, 0, (b"a",), 2))
        elif kind == "replica":
            self.feed(ev.ReplicaFetch(broker, other, 0, 0, -1, -1) if other not in
                      self.config.assignment(0) or broker == other else
                      ev.ReplicaFetch(broker, other, unknown, 0, -1, -1))
        else:
            outsiders = [b for b in range(self.config.brokers) if b not in self.config.assignment(0)]
            self.feed(ev.Elect(0, outsiders[0]) if outsiders else ev.Elect(unknown, broker))

    # -- replication and time ---------------------------------------------------------

    def fetchers(self) -> list[tuple[int, int]]:
        state = self.model.state
        return [(p, f) for p in range(self.config.partitions) for f in self.config.assignment(p)
                if state.alive[f] and replica_fetch_for(state, f, p) is not None]

    @precondition(lambda self: self.fetchers())
    @rule(pick=st.integers(0, 8), times=st.integers(1, 3),
          max_bytes=st.sampled_from([1 << 20, 1 << 20, 1 << 20, 1, 150]),
          lost=st.sampled_from([False, False, False, False, True]))
    def replicate(self, pick, times, max_bytes, lost):
        """max_bytes: replica.fetch.max.bytes (1: one batch); lost: the leader handled the
        last fetch but its answer never reached the follower."""
        pairs = self.fetchers()
        p, follower = pairs[pick % len(pairs)]
        for i in range(times):
            event = replica_fetch_for(self.model.state, follower, p, max_bytes,
                                      lost and i == times - 1)
            if event is None or not self.model.state.alive[follower]:
                return
            self.feed(event)

    @rule(ms=TICKS)
    def tick(self, ms):
        self.feed(ev.Tick(ms))

    def pending(self) -> list[int]:
        state = self.model.state
        return [p for p in range(self.config.partitions)
                if (found := state.leader_replica(p)) is not None
                and found[1].pending_isr is not None]

    @precondition(lambda self: self.pending())
    @rule(pick=st.integers(0, 8))
    def commit_isr_change(self, pick):
        pending = self.pending()
        self.feed(ev.CommitIsrChange(pending[pick % len(pending)]))

    @precondition(lambda self: self.pending())
    @rule(pick=st.integers(0, 8), index=REPLICA_INDEXES,
          unclean=st.booleans())
    def elect_right_after_isr_change(self, pick, index, unclean):
        pending = self.pending()
        p = pending[pick % len(pending)]
        self.feed(ev.CommitIsrChange(p))
        self.feed(ev.Elect(p, self.config.assignment(p)[index],
                           unclean and self.config.unclean_leader_election))

    # -- shapes a uniform walk rarely reaches (each a sequence of ordinary events) -----
    # A follower that has fallen out of the ISR while the hw moved past it, and the
    # election of an in-sync replica that holds less than another live replica: where
    # ISR expansion (M15) and truncation on a diverging epoch (M5, B1) have to be right.

    def stallable(self) -> list[tuple[int, int]]:
        """(partition, follower): a live ISR follower behind its live leader's leo, the
        leader with no ISR change in flight."""
        state = self.model.state
        out = []
        for p in range(self.config.partitions):
            found = state.leader_replica(p)
            if found is None or found[1].pending_isr is not None:
                continue
            leader, replica = found
            out += [(p, f) for f in sorted(replica.isr - {leader})
                    if state.alive[f] and state.partitions[p].replicas[f].leo < replica.leo]
        return out

    @precondition(lambda self: self.stallable())
    @rule(pick=st.integers(0, 8))
    def stall_follower(self, pick):
        """One follower stops fetching: the others catch up to the leader's leo, time
        passes beyond the lag time (2x: a fixed-rate check falls after it), the ISR shrink
        is committed. With enough ISR left, the hw then moves past the stalled one."""
        pairs = self.stallable()
        p, stalled = pairs[pick % len(pairs)]
        for other in self.config.assignment(p):
            for _ in range(4):
                event = replica_fetch_for(self.model.state, other, p)
                if other == stalled or event is None or not self.model.state.alive[other]:
                    break
                self.feed(event)
        self.feed(ev.Tick(2 * self.config.replica_lag_time_max_ms))
        if p in self.pending():
            self.feed(ev.CommitIsrChange(p))

    def below_hw(self) -> list[tuple[int, int]]:
        """(partition, follower): a live follower outside its leader's ISR, below its hw."""
        state = self.model.state
        out = []
        for p in range(self.config.partitions):
            found = state.leader_replica(p)
            if found is None:
                continue
            leader, replica = found
            for f in self.config.assignment(p):
                r = state.partitions[p].replicas[f]
                if (f != leader and f not in replica.isr and state.alive[f] and r.leo < replica.hw
                        and replica_fetch_for(state, f, p) is not None):
                    out.append((p, f))
        return out

    @precondition(lambda self: self.below_hw())
    @rule(pick=st.integers(0, 8), times=st.integers(1, 3),
          max_bytes=st.sampled_from([1 << 20, 1]))
    def catch_up_below_hw(self, pick, times, max_bytes):
        """A follower below the hw fetches: it may join the ISR only once it reaches the hw."""
        pairs = self.below_hw()
        p, follower = pairs[pick % len(pairs)]
        for _ in range(times):
            event = replica_fetch_for(self.model.state, follower, p, max_bytes)
            if event is None:
                return
            self.feed(event)

    def lagging_candidates(self) -> list[tuple[int, int]]:
        """(partition, replica): a live ISR member, not the leader, holding fewer records
        than another live replica that does not yet know they are committed (its hw is
        below the candidate's leo: B1's shape, where truncating to the hw loses them)."""
        state = self.model.state
        out = []
        for p, part in enumerate(state.partitions):
            live = [(b, part.replicas[b]) for b in self.config.assignment(p) if state.alive[b]]
            out += [(p, b) for b, r in live if b in part.control.isr
                    and b != part.control.leader
                    and any(o.leo > r.leo > o.hw for _, o in live)]
        return out

    @precondition(lambda self: self.lagging_candidates())
    @rule(pick=st.integers(0, 8))
    def elect_lagging_isr_member(self, pick):
        """A clean election of an in-sync replica that is behind another: the replicas
        ahead of it must truncate by leader epoch, to what the new leader holds."""
        candidates = self.lagging_candidates()
        p, leader = candidates[pick % len(candidates)]
        self.feed(ev.Elect(p, leader))

    # -- faults -----------------------------------------------------------------------

    def up(self) -> list[int]:
        return [b for b, alive in enumerate(self.model.state.alive) if alive]

    def down(self) -> list[int]:
        return [b for b, alive in enumerate(self.model.state.alive) if not alive]

    @precondition(lambda self: len(self.up()) > 1)
    @rule(pick=st.integers(0, 8))
    def crash(self, pick):
        up = self.up()
        self.feed(ev.CrashBroker(up[pick % len(up)]))

    @precondition(lambda self: self.down())
    @rule(pick=st.integers(0, 8))
    def restart(self, pick):
        down = self.down()
        self.feed(ev.RestartBroker(down[pick % len(down)]))

    @rule(p=PARTITIONS, index=REPLICA_INDEXES, unclean=st.booleans())
    def elect(self, p, index, unclean):
        self.feed(ev.Elect(p, self.config.assignment(p)[index],
                           unclean and self.config.unclean_leader_election))

    @precondition(lambda self: self.up())
    @rule(pick=st.integers(0, 8))
    def flush(self, pick):
        up = self.up()
        self.feed(ev.Flush(up[pick % len(up)]))

    # -- invariants -------------------------------------------------------------------

    @invariant()
    def model_invariants_hold(self):
        assert_model_invariants(self.model, self.check_spec_invariants)


def assert_model_invariants(model: ReferenceModel, check_spec_invariants: bool = True) -> None:
    """The model's client-level properties (model/properties.py) and, on the refinement image of
    every partition, the spec's invariants: what every machine over the model asserts."""
    broken = model.check()
    assert not broken, f"{broken} violated in\n{render_state(model.state)}"
    if check_spec_invariants:
        broken = image_violations(model.state)
        assert not broken, f"spec invariants {broken} violated in\n{render_state(model.state)}"


def run_walk(config: ClusterConfig, events: Sequence[ev.Event]) -> ReferenceModel:
    """Replay a list of events on a fresh model (for reproducing a walk outside Hypothesis)."""
    model = ReferenceModel(config)
    model.feed_all(events)
    return model


class RetentionMachine(ModelMachine):
    """ModelMachine with one rule more: retention runs (model/MODEL.md "Retention"). A class of
    its own because a rule more changes every seeded walk of a machine, and the smoke-size
    mutant matrix (properties/mutant_matrix.py) relies on the walks ModelMachine has."""

    @rule(p=PARTITIONS, broker=BROKERS, where=st.integers(0, 1 << 16))
    def retention_run(self, p, broker, where):
        """A retention run on any replica (a dead one's does nothing) moving its log start up
        to an offset in (log start, hw] picked by `where` (any offset: a superset of the batch
        boundaries a segmented log picks); nothing when the hw is at the log start."""
        replica = self.model.state.partitions[p].replicas[broker]
        start, hw = (0, 0) if replica is None else (replica.log_start, replica.hw)
        offset = start + 1 + where % (hw - start) if hw > start else hw
        self.feed(ev.Retention(broker, p, offset))


class HandoverMachine(ModelMachine):
    """ModelMachine with one rule more: leadership handed over between caught-up ISR members, so
    that leader epochs change between records a lagging follower has not fetched yet and one
    follower fetch carries several epochs (the follower must then start each epoch in its cache
    where the leader did: the invariants' epoch-cache clause). A class of its own for the reason
    RetentionMachine is one."""

    def handovers(self) -> list[tuple[int, int]]:
        """(partition, replica): a live ISR member following the live leader, not the leader."""
        state = self.model.state
        out = []
        for p, part in enumerate(state.partitions):
            leader = part.control.leader
            if leader is None or not state.alive[leader]:
                continue
            out += [(p, b) for b in part.control.isr if b != leader and state.alive[b]
                    and part.replicas[b].leader == leader]
        return out

    @precondition(lambda self: self.handovers())
    @rule(pick=st.integers(0, 8), count=st.integers(1, 3))
    def hand_over(self, pick, count):
        """The leader writes `count` records (acks=1), an ISR member fetches until it holds
        them all, and is elected (a preferred-leader election, a controlled shutdown)."""
        pairs = self.handovers()
        p, candidate = pairs[pick % len(pairs)]
        leader = self.model.state.partitions[p].control.leader
        self.feed(ev.Produce(self.request_id(), leader, p, (b"h",) * count, ev.ACKS_LEADER))
        for _ in range(3):
            replicas = self.model.state.partitions[p].replicas
            event = replica_fetch_for(self.model.state, candidate, p)
            if event is None or replicas[candidate].leo >= replicas[leader].leo:
                break
            self.feed(event)
        self.feed(ev.Elect(p, candidate))


__all__ = ["HandoverMachine", "ModelMachine", "RetentionMachine", "StateCheck", "run_walk", "SystemUnderTest",
           "Compare"]
