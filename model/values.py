"""The model's state: frozen values with tuples and frozensets inside.

Layout (all indices are ints):
    ModelState.partitions[p]              -> PartitionState
    PartitionState.replicas[broker]       -> Replica (None where `broker` holds no replica of p)
    PartitionState.control                -> PartitionControl (the controller's view of p)
    ModelState.alive[broker]              -> bool (the controller's live-broker set)
    ModelState.purgatory                  -> pending DelayedProduce / DelayedFetch operations

Positions that only grow (the clock, leader epochs, partition epochs, record ids, a leader's hw
within its epoch) are moved by methods that refuse to move them backwards. Transitions build new
values with the class constructor or attrs.evolve; nothing is mutated.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs

from kafkaref.model.config import ClusterConfig
from kafkaref.model.plog import EMPTY, PLog

NO_EPOCH = -1
UNKNOWN_OFFSET = -1


class Entry(NamedTuple):
    """One record in a replica's log. Its offset is its index in the log.

    `id` is unique per partition (handed out in append order), `epoch` is the leader epoch it
    was written in, `base` is the offset of the first record of its batch (batch boundary).
    A NamedTuple so that logs compare and hash in C.
    """

    id: int
    epoch: int
    value: bytes
    base: int


Log = PLog  # persistent sequence of Entry (see plog.py)
EpochCache = tuple[tuple[int, int], ...]  # ((leader epoch, start offset), ...) ascending


@attrs.frozen(slots=True)
class Replica:
    """One broker's replica of one partition.

    Every replica: its log, high watermark (exclusive), flushed offset (the durable prefix
    length), epoch cache, and its cached view of the partition from the last LeaderAndIsr it
    handled (leader, leader epoch, partition epoch, ISR).

    Leader only (meaningless elsewhere): the pending ISR change sent to the controller and not
    yet answered (the maximal ISR is isr | pending_isr while it is in flight), and per broker
    the follower's last fetch offset (UNKNOWN_OFFSET until it fetches in this epoch) and the
    last time it was caught up.

    `synced_epoch` is the leader epoch in which this follower last completed a fetch without a
    diverging epoch: its log is reconciled with the leader of that epoch (used by refinement).
    """

    log: Log
    hw: int
    flushed: int
    epoch_cache: EpochCache
    leader: int | None
    leader_epoch: int
    partition_epoch: int
    isr: frozenset[int]
    pending_isr: frozenset[int] | None
    follower_offsets: tuple[int, ...]
    caught_up_ms: tuple[int, ...]
    synced_epoch: int
    # Leader only, per broker: (the leader's leo at the follower's previous fetch, its time), for
    # Kafka's second catch-up clause; () until a follower fetches in this epoch.
    last_fetch: tuple[tuple[int, int], ...] = ()
    # The first offset still readable (DeleteRecords moves it up; records below it are kept
    # here but never read, as Kafka keeps a segment holding it), and, leader only, per broker,
    # the log start each follower's last fetch said it has (-1 unknown; () all unknown).
    log_start: int = 0
    follower_log_starts: tuple[int, ...] = ()

    @property
    def leo(self) -> int:
        return len(self.log)

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR the hw must respect: the committed ISR plus any member proposed in flight."""
        pending = self.pending_isr
        return self.isr if pending is None else self.isr | pending

    @property
    def latest_epoch(self) -> int:
        return self.epoch_cache[-1][0] if self.epoch_cache else NO_EPOCH

    def raise_hw(self, hw: int) -> Replica:
        """Move a leader's hw forward (never backwards: it only grows within an epoch)."""
        if hw < self.hw:
            raise ValueError(f"leader hw may not move back from {self.hw} to {hw}")
        if hw == self.hw:
            return self
        return Replica(self.log, hw, self.flushed, self.epoch_cache, self.leader, self.leader_epoch,
                       self.partition_epoch, self.isr, self.pending_isr, self.follower_offsets,
                       self.caught_up_ms, self.synced_epoch, self.last_fetch, self.log_start,
                       self.follower_log_starts)

    def follower_log_start(self, broker: int) -> int:
        """A leader's view of a follower's log start (-1 until it fetched in this epoch)."""
        starts = self.follower_log_starts
        return starts[broker] if starts else UNKNOWN_OFFSET


@attrs.frozen(slots=True)
class PartitionControl:
    """The controller's record of one partition: leader, leader epoch, ISR, and KIP-966's
    eligible leader replicas (ELR: members that left the ISR while it was below
    min.insync.replicas, so they still hold everything below the hw). The partition epoch
    versions every change (ISR changes are compare-and-set on it)."""

    leader: int | None
    leader_epoch: int
    partition_epoch: int
    isr: frozenset[int]
    elr: frozenset[int]

    def changed(self, *, leader: int | None, isr: frozenset[int], elr: frozenset[int],
                new_leader_epoch: bool) -> PartitionControl:
        """The next version: the partition epoch always grows; the leader epoch grows when a
        LeaderAndIsr with a new leader epoch is sent."""
        return PartitionControl(
            leader=leader,
            leader_epoch=self.leader_epoch + 1 if new_leader_epoch else self.leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            isr=isr,
            elr=elr,
        )


@attrs.frozen(slots=True)
class PartitionState:
    replicas: tuple[Replica | None, ...]
    control: PartitionControl
    next_record_id: int


@attrs.frozen(slots=True)
class DelayedProduce:
    """An acks=all produce parked until the hw reaches required_offset (= last offset + 1)."""

    request_id: int
    broker: int
    partition: int
    base_offset: int
    required_offset: int
    record_ids: tuple[int, ...]
    deadline_ms: int


@attrs.frozen(slots=True)
class DelayedFetch:
    """A consumer fetch parked until min_bytes are readable or max_wait expires."""

    request_id: int
    broker: int
    partition: int
    offset: int
    min_bytes: int
    max_bytes: int
    deadline_ms: int
    current_leader_epoch: int  # checked again when it completes (KIP-320)
    from_follower_allowed: bool  # a follower may answer it (events.Fetch)


@attrs.frozen(slots=True)
class DelayedDeleteRecords:
    """A DeleteRecords parked until the low watermark (the smallest log start of the leader and
    its live followers) reaches required_offset; low_watermark is the one first seen (the
    answer at expiry)."""

    request_id: int
    broker: int
    partition: int
    required_offset: int
    low_watermark: int
    deadline_ms: int


Delayed = DelayedProduce | DelayedFetch | DelayedDeleteRecords


@attrs.frozen(slots=True)
class ModelState:
    config: ClusterConfig
    now_ms: int
    alive: tuple[bool, ...]
    partitions: tuple[PartitionState, ...]
    purgatory: tuple[Delayed, ...]

    def advance_clock(self, ms: int) -> ModelState:
        """Logical time only moves forward."""
        if ms < 0:
            raise ValueError(f"time cannot go back ({ms} ms)")
        return attrs.evolve(self, now_ms=self.now_ms + ms)

    def replica(self, partition: int, broker: int) -> Replica | None:
        return self.partitions[partition].replicas[broker]

    def leader_replica(self, partition: int) -> tuple[int, Replica] | None:
        """The controller's leader of `partition` if it is alive and acts as leader."""
        part = self.partitions[partition]
        leader = part.control.leader
        if leader is None or not self.alive[leader]:
            return None
        replica = part.replicas[leader]
        if replica is None or replica.leader != leader:
            return None
        return leader, replica


def empty_replica(brokers: int) -> Replica:
    return Replica(
        log=EMPTY,
        hw=0,
        flushed=0,
        epoch_cache=(),
        leader=None,
        leader_epoch=NO_EPOCH,
        partition_epoch=0,
        isr=frozenset(),
        pending_isr=None,
        follower_offsets=(UNKNOWN_OFFSET,) * brokers,
        caught_up_ms=(0,) * brokers,
        synced_epoch=NO_EPOCH,
    )


def initial_state(config: ClusterConfig) -> ModelState:
    """All brokers alive, empty logs, no leader yet, every assigned replica in the ISR (as the
    spec's Init); the first Elect event picks the leaders."""
    partitions = []
    for p in range(config.partitions):
        assigned = config.assignment(p)
        replicas = tuple(
            empty_replica(config.brokers) if b in assigned else None for b in range(config.brokers)
        )
        control = PartitionControl(None, NO_EPOCH, 0, frozenset(assigned), frozenset())
        partitions.append(PartitionState(replicas, control, 0))
    return ModelState(
        config=config,
        now_ms=0,
        alive=(True,) * config.brokers,
        partitions=tuple(partitions),
        purgatory=(),
    )
