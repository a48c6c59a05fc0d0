"""The controller's epochs across every image it commits, on random walks of its own requests.

A Hypothesis machine drives ControllerState alone (no brokers, a manual clock): brokers register
(a restart is a registration again), heartbeat, expire or are fenced; leaders send AlterPartition
with their epochs or stale ones; elections are asked for (explicit mode); the topic grows. Every
image the controller commits (its on_change hook) is checked against the one before, per
partition, with Kafka's rules (KRaft's PartitionChangeBuilder, ReplicationControlManager):

- a change of leader, ISR or ELR is one new partition epoch: exactly one more, never two;
- the leader epoch never goes down, and moves by one at a time (a new leader is epoch + 1);
- a new partition starts at partition epoch 0, led by its first replica at leader epoch 0, or,
  with explicit elections, offline (leader and leader epoch -1) until its first election.

Both election modes run: automatic (the running cluster) and explicit (the lockstep's). Found by
mutation testing (docs/mutation.md, sample 79fa682): a follower's fencing bumping the partition
epoch by two, and a partition added by CreatePartitions in explicit mode at leader epoch +1.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.state import ControllerState
from kafkaref.impl.core.metadata import ClusterMetadata
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.stateful import bind, note

BROKERS = 4
SESSION_MS = 1000
TOPIC = "t"
BROKER_IDS = st.integers(0, BROKERS - 1)
INDEXES = st.integers(0, 7)  # a partition index, taken modulo the topic's partitions


def partitions_by_key(metadata: ClusterMetadata) -> dict:
    return {(t.topic_id, index): p for t in metadata.topics for index, p in enumerate(t.partitions)}


def epoch_violations(before: ClusterMetadata, after: ClusterMetadata, automatic: bool) -> list[str]:
    """What one committed image breaks of the epoch rules above, partition by partition."""
    old, problems = partitions_by_key(before), []
    for key, new in partitions_by_key(after).items():
        was = old.get(key)
        if was is None:
            led = (new.replicas[0], 0) if automatic else (-1, -1)
            if (new.leader, new.leader_epoch, new.partition_epoch) != (*led, 0):
                problems.append(f"new partition {key} is {new}, not led by {led} at partition epoch 0")
        elif was != new:
            if new.partition_epoch != was.partition_epoch + 1:
                problems.append(f"{key}: partition epoch {was.partition_epoch} -> "
                                f"{new.partition_epoch} for one change ({was} -> {new})")
            if new.leader_epoch not in (was.leader_epoch, was.leader_epoch + 1):
                problems.append(f"{key}: leader epoch {was.leader_epoch} -> {new.leader_epoch}")
    return problems


def kafka_alter_partition_answer(p, alive, sender: int, leader_epoch: int,
                                 partition_epoch: int | None, members: list[int]) -> ErrorCode:
    """Apache Kafka 4.3.1's answer to an AlterPartition (ReplicationControlManager.
    validateAlterPartitionData, read with javap; a partition that exists, a leader not
    recovering from an unclean election), stated here apart from the controller's code."""
    if leader_epoch > p.leader_epoch or (partition_epoch is not None
                                         and partition_epoch > p.partition_epoch):
        return ErrorCode.not_controller
    if leader_epoch < p.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    if sender != p.leader:
        return ErrorCode.invalid_request
    if partition_epoch is not None and partition_epoch < p.partition_epoch:
        return ErrorCode.invalid_update_version
    if sorted(set(members)) != sorted(members) or not set(members) <= set(p.replicas):
        return ErrorCode.invalid_request  # Replicas.validateIsr
    if p.leader not in members:
        return ErrorCode.invalid_request
    if not set(members) <= alive:  # not registered, or fenced
        return ErrorCode.ineligible_replica
    return ErrorCode.none


class ControllerEpochMachine(RuleBasedStateMachine):
    def __init__(self, automatic: bool, unclean: bool) -> None:
        super().__init__()
        self.automatic = automatic
        self.clock = ManualClock()
        self.images: list[ClusterMetadata] = []
        self.state = ControllerState(self.clock, session_timeout_ms=SESSION_MS,
                                     unclean_election=unclean, on_change=self.images.append,
                                     automatic_elections=automatic)
        self.checked = self.state.metadata
        for broker_id in range(BROKERS):
            self.state.register(broker_id, "127.0.0.1", 9000 + broker_id)
        error, message = self.state.create_topic(TOPIC, 2, 3, {"min.insync.replicas": "2"})
        assert error == ErrorCode.none, message

    def partition(self, index: int):
        partitions = self.state.metadata.topic(TOPIC).partitions
        return index % len(partitions), partitions[index % len(partitions)]

    # -- membership -----------------------------------------------------------------------------
    @rule(broker_id=BROKER_IDS)
    def register(self, broker_id):
        """A broker (re)starts: a registered one's previous incarnation is fenced first."""
        self.state.register(broker_id, "127.0.0.1", 9000 + broker_id)

    @rule(broker_id=BROKER_IDS)
    def fence(self, broker_id):
        self.state.fence(broker_id)

    @rule(ms=st.sampled_from([100, SESSION_MS // 2, SESSION_MS + 1]),
          beating=st.sets(BROKER_IDS))
    def time_passes(self, ms, beating):
        """Some brokers heartbeat, time moves, the sessions of the silent ones may expire."""
        for broker_id in beating:
            self.state.heartbeat(broker_id)
        self.clock.advance(ms)
        self.state.tick()

    # -- partition changes ----------------------------------------------------------------------
    @rule(index=INDEXES, candidate=BROKER_IDS, unclean=st.booleans())
    def elect(self, index, candidate, unclean):
        index, _ = self.partition(index)
        note(f"elect {candidate} for {index}{' unclean' if unclean else ''}: "
             f"{self.state.elect(TOPIC, index, candidate, unclean)}")

    @rule(index=INDEXES, members=st.sets(BROKER_IDS), stale=st.sampled_from([None, "leader", "partition"]))
    def alter_isr(self, index, members, stale):
        """The leader proposes an ISR (itself and some others) at its epochs, or one stale."""
        index, p = self.partition(index)
        if p.leader < 0:
            return
        leader_epoch = p.leader_epoch - (stale == "leader")
        partition_epoch = p.partition_epoch - (stale == "partition")
        answer = self.state.alter_isr(p.leader, TOPIC, index, leader_epoch, {p.leader, *members},
                                      partition_epoch)
        note(f"alter_isr {index} {sorted({p.leader, *members})} stale={stale}: {answer.name}")

    @rule(index=INDEXES, sender=st.one_of(st.none(), BROKER_IDS), leader_step=st.integers(-1, 1),
          partition_step=st.sampled_from([None, -1, 0, 0, 1]),
          members=st.lists(st.integers(0, BROKERS), max_size=4))
    def any_alter_isr(self, index, sender, leader_step, partition_step, members):
        """Any AlterPartition a broker could send: from the leader (None) or any broker, its
        epochs one below, equal to or one above the controller's (the partition epoch also left
        out, as the core's controller client does), any members (a broker id outside the
        cluster, repeats, the leader left out): answered as Kafka answers, and only NONE
        commits, exactly the members sent."""
        index, p = self.partition(index)
        sender = p.leader if sender is None else sender
        leader_epoch = p.leader_epoch + leader_step
        partition_epoch = None if partition_step is None else p.partition_epoch + partition_step
        expected = kafka_alter_partition_answer(p, self.state.alive, sender, leader_epoch,
                                                partition_epoch, members)
        answer = self.state.alter_isr(sender, TOPIC, index, leader_epoch, members, partition_epoch)
        note(f"alter_isr {index} from {sender} epochs {leader_epoch}/{partition_epoch} "
             f"{members}: {answer.name}")
        assert answer == expected, f"{p}: answered {answer.name}, Kafka answers {expected.name}"
        now = self.state.metadata.topic(TOPIC).partitions[index]
        assert now.isr == (tuple(sorted(members)) if answer == ErrorCode.none else p.isr)

    @rule(more=st.integers(1, 2))
    def grow(self, more):
        count = len(self.state.metadata.topic(TOPIC).partitions) + more
        note(f"create_partitions {count}: {self.state.create_partitions(TOPIC, count)}")

    # -- the rules, on every committed image ----------------------------------------------------
    @invariant()
    def every_commit_keeps_the_epoch_rules(self):
        for image in self.images:
            problems = epoch_violations(self.checked, image, self.automatic)
            assert not problems, "\n".join(problems)
            self.checked = image
        self.images.clear()


TestAutomaticElections = bind(ControllerEpochMachine, automatic=True, unclean=False).TestCase
TestAutomaticUncleanElections = bind(ControllerEpochMachine, automatic=True, unclean=True).TestCase
TestExplicitElections = bind(ControllerEpochMachine, automatic=False, unclean=True).TestCase
