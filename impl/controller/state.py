"""The controller's decisions as single-threaded logic with an injected clock (steppable).

Membership: a broker is alive from registration until its session expires (no heartbeat for
session_timeout_ms) or it registers again (a restart fences its previous incarnation).
Elections: when a leader is fenced, the first replica in assignment order that is alive and in
the ISR leads with leader_epoch + 1; none -> the partition is offline (leader -1) and keeps its
last ISR, unless unclean election is on (then any live replica leads, ISR = {it}: loss by design).
ISR: fenced brokers leave every ISR (never emptying it); leaders change it with alter_isr, accepted
only from the current leader at the current leader and partition epochs and only with live
members. KIP-966: members leaving an ISR that is then below min.insync.replicas become eligible
leader replicas (ELR); an ISR at or above the minimum clears the ELR.

Two election modes. automatic_elections=True (the running cluster): a fenced leader is replaced
at once and offline partitions are elected when brokers register. False (the lockstep machine,
where the model's Elect events are the controller's elections): fencing only removes the broker
(a fenced leader leaves the partition leaderless, every ISR change bumps the leader epoch, as the
ZooKeeper-era controller did), `elect` picks the leader, and a last ISR member returning from an
unclean shutdown leaves the ISR (KIP-966), so only the ELR or an unclean election brings the
partition back.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller import topic_changes
from kafkaref.impl.controller.config import DEFAULT_SESSION_TIMEOUT_MS
from kafkaref.impl.core.metadata import (
    BrokerEndpoint,
    ClusterMetadata,
    PartitionMeta,
    TopicMeta,
    new_topic_id,
)
from kafkaref.impl.core.topic_rules import check_assignment, check_configs, legal_topic_name
from kafkaref.impl.mutants import parse_mutants, switches


def named_controller(brokers) -> int:
    """The broker Metadata answers name as the controller: clients send their admin requests
    there and it forwards them. Kafka (KRaft) names a random live broker; the lowest registered
    one is as good and keeps answers deterministic; -1 while none is registered."""
    return min((b.broker_id for b in brokers), default=-1)


class ControllerState:
    def __init__(self, clock: Callable[[], int], session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
                 unclean_election: bool = False, metadata: ClusterMetadata | None = None,
                 on_change: Callable[[ClusterMetadata], None] | None = None,
                 mutants=frozenset(), automatic_elections: bool = True):
        self.clock = clock
        self.automatic_elections = automatic_elections
        self.mutants = parse_mutants(mutants)
        # mutant M14: the leader epoch is not bumped on a leader change
        self._epoch_bump = 0 if switches(self.mutants).M14 else 1
        self.session_timeout_ms = session_timeout_ms
        self.unclean_election = unclean_election
        self.metadata = metadata or ClusterMetadata()
        # a reloaded image lists no live broker until they register again
        self.metadata = attrs.evolve(self.metadata, brokers=())
        self.last_heartbeat_ms: dict[int, int] = {}
        self.on_change = on_change

    @property
    def alive(self) -> set[int]:
        return set(self.last_heartbeat_ms)

    def _commit(self, metadata: ClusterMetadata) -> None:
        self.metadata = attrs.evolve(metadata, epoch=self.metadata.epoch + 1,
                                     controller_id=named_controller(metadata.brokers))
        if self.on_change is not None:
            self.on_change(self.metadata)

    # -- membership ---------------------------------------------------------------------------
    def register(self, broker_id: int, host: str, port: int) -> ClusterMetadata:
        if broker_id in self.last_heartbeat_ms:
            self.fence(broker_id)  # a restarted broker: its old incarnation is gone
        self.last_heartbeat_ms[broker_id] = self.clock()
        brokers = tuple(b for b in self.metadata.brokers if b.broker_id != broker_id)
        brokers = tuple(sorted((*brokers, BrokerEndpoint(broker_id, host, port)),
                               key=lambda b: b.broker_id))
        topics = (self._elect_offline(self.metadata.topics) if self.automatic_elections
                  else self._map_partitions(lambda p: self._returning(p, broker_id)))
        self._commit(attrs.evolve(self.metadata, brokers=brokers, topics=topics))
        return self.metadata

    @staticmethod
    def _returning(p: PartitionMeta, broker_id: int) -> PartitionMeta:
        """KIP-966: the last ISR member of a leaderless partition coming back from an unclean
        shutdown may have lost committed records, so it leaves the ISR."""
        if p.leader == -1 and p.isr == (broker_id,):
            return attrs.evolve(p, isr=(), partition_epoch=p.partition_epoch + 1)
        return p

    def _map_partitions(self, change) -> tuple[TopicMeta, ...]:
        return tuple(attrs.evolve(t, partitions=tuple(change(p) for p in t.partitions))
                     for t in self.metadata.topics)

    def heartbeat(self, broker_id: int) -> bool:
        """False if the broker is not registered (it must register again)."""
        if broker_id not in self.last_heartbeat_ms:
            return False
        self.last_heartbeat_ms[broker_id] = self.clock()
        return True

    def tick(self) -> None:
        now = self.clock()
        for broker_id, last in list(self.last_heartbeat_ms.items()):
            if now - last > self.session_timeout_ms:
                self.fence(broker_id)

    def fence(self, broker_id: int) -> None:
        self.last_heartbeat_ms.pop(broker_id, None)
        brokers = tuple(b for b in self.metadata.brokers if b.broker_id != broker_id)
        without = self._without if self.automatic_elections else self._fenced
        topics = self._map_partitions(lambda p: without(p, broker_id))
        self._commit(attrs.evolve(self.metadata, brokers=brokers, topics=topics))

    # -- elections ----------------------------------------------------------------------------
    def _without(self, p: PartitionMeta, dead: int) -> PartitionMeta:
        if dead not in p.replicas:
            return p
        if dead in p.elr:
            p = attrs.evolve(p, elr=tuple(r for r in p.elr if r != dead),
                             partition_epoch=p.partition_epoch + 1)
        isr = tuple(r for r in p.isr if r != dead) or p.isr
        if p.leader != dead:
            if isr == p.isr:
                return p
            return attrs.evolve(p, isr=isr, partition_epoch=p.partition_epoch + 1)
        return self._elect(attrs.evolve(p, isr=isr), exclude={dead})

    def _fenced(self, p: PartitionMeta, dead: int) -> PartitionMeta:
        """Explicit elections: the dead broker leaves the ELR and the ISR (the last member
        stays: the partition is then offline rather than led by a replica without the data);
        losing the leader or an ISR member bumps the leader epoch."""
        if dead not in p.replicas:
            return p
        elr = tuple(r for r in p.elr if r != dead)
        if dead == p.leader or (dead in p.isr and len(p.isr) > 1):
            isr = tuple(r for r in p.isr if r != dead) if len(p.isr) > 1 else p.isr
            leader = -1 if dead == p.leader else p.leader
            return PartitionMeta(leader, p.leader_epoch + 1, p.replicas, isr,
                                 p.partition_epoch + 1, elr)
        if elr != p.elr:
            return attrs.evolve(p, elr=elr, partition_epoch=p.partition_epoch + 1)
        return p

    def _elect(self, p: PartitionMeta, exclude=frozenset()) -> PartitionMeta:
        alive = self.alive - set(exclude)
        bump = self._epoch_bump
        for replica in p.replicas:
            if replica in p.isr and replica in alive:
                isr = tuple(r for r in p.isr if r in alive or r == replica) or (replica,)
                return PartitionMeta(replica, p.leader_epoch + bump, p.replicas, isr,
                                     p.partition_epoch + 1, p.elr)
        if self.unclean_election:
            for replica in p.replicas:
                if replica in alive:
                    return PartitionMeta(replica, p.leader_epoch + bump, p.replicas, (replica,),
                                         p.partition_epoch + 1)
        if p.leader == -1:
            return p
        return PartitionMeta(-1, p.leader_epoch + bump, p.replicas, p.isr, p.partition_epoch + 1,
                             p.elr)

    def _elect_offline(self, topics) -> tuple[TopicMeta, ...]:
        return tuple(
            attrs.evolve(t, partitions=tuple(
                self._elect(p) if p.leader == -1 else p for p in t.partitions))
            for t in topics)

    def elect_leader(self, topic: str, index: int, broker_id: int) -> ErrorCode:
        """Move leadership to broker_id (a live ISR member): a preferred-leader election."""
        return self.elect(topic, index, broker_id)[0]

    def elect(self, topic: str, index: int, candidate: int,
              unclean: bool = False) -> tuple[ErrorCode, int]:
        """Elect `candidate`: clean from the live ISR; from the ELR when no ISR member is alive
        (KIP-966); with unclean=True any live replica, only when unclean election is configured
        and nothing clean is available. Returns (error, new leader epoch or -1)."""
        meta = self.metadata.topic(topic)
        if meta is None or not 0 <= index < len(meta.partitions):
            return ErrorCode.unknown_topic_or_partition, -1
        p = meta.partitions[index]
        if candidate not in p.replicas:
            return ErrorCode.ineligible_replica, -1
        if candidate == p.leader:
            return ErrorCode.election_not_needed, -1
        alive = self.alive
        if candidate not in alive:
            return ErrorCode.ineligible_replica, -1
        live_isr = [r for r in p.isr if r in alive]
        live_elr = [r for r in p.elr if r in alive]
        if unclean:
            if not self.unclean_election or live_isr or live_elr:
                return ErrorCode.ineligible_replica, -1
            isr, elr = (candidate,), ()
        elif candidate in live_isr:
            isr, elr = p.isr, p.elr
        elif not live_isr and candidate in live_elr:
            isr, elr = (candidate,), tuple(r for r in p.elr if r != candidate)
        else:
            return ErrorCode.ineligible_replica, -1
        bump = self._epoch_bump
        new = PartitionMeta(candidate, p.leader_epoch + bump, p.replicas, isr,
                            p.partition_epoch + 1, elr)
        partitions = tuple(new if i == index else q for i, q in enumerate(meta.partitions))
        self._commit(self.metadata.with_topic(attrs.evolve(meta, partitions=partitions)))
        return ErrorCode.none, new.leader_epoch

    # -- requests from brokers ----------------------------------------------------------------
    def alter_isr(self, broker_id: int, topic: str, index: int, leader_epoch: int,
                  isr, partition_epoch: int | None = None) -> ErrorCode:
        """AlterPartition, checked in the order of Kafka's ReplicationControlManager
        (validateAlterPartitionData): epochs above the controller's (NOT_CONTROLLER: the sender
        heard of a newer controller), a stale leader epoch (FENCED_LEADER_EPOCH), a sender that
        is not the leader (INVALID_REQUEST), a stale partition epoch when the leader sends one
        (INVALID_UPDATE_VERSION), an ISR that is not a set of the replicas holding the leader
        (INVALID_REQUEST), a member that is not a live broker (INELIGIBLE_REPLICA). Updates the
        ELR (KIP-966)."""
        meta = self.metadata.topic(topic)
        if meta is None or not 0 <= index < len(meta.partitions):
            return ErrorCode.unknown_topic_or_partition
        p = meta.partitions[index]
        known_partition_epoch = partition_epoch is not None
        if leader_epoch > p.leader_epoch or (known_partition_epoch and partition_epoch > p.partition_epoch):
            return ErrorCode.not_controller
        if leader_epoch < p.leader_epoch:
            return ErrorCode.fenced_leader_epoch
        if p.leader != broker_id:
            return ErrorCode.invalid_request
        if known_partition_epoch and partition_epoch < p.partition_epoch:
            return ErrorCode.invalid_update_version
        members = list(isr)
        if (len(set(members)) != len(members) or not set(members) <= set(p.replicas)
                or broker_id not in members):
            return ErrorCode.invalid_request
        if any(r not in self.alive for r in members):
            return ErrorCode.ineligible_replica
        isr = tuple(sorted(members))
        if isr != tuple(sorted(p.isr)):
            removed = set(p.isr) - set(isr)
            minimum = min(meta.config().min_insync_replicas, len(p.replicas))
            elr = tuple(sorted((set(p.elr) | removed) - set(isr))) if len(isr) < minimum else ()
            new = attrs.evolve(p, isr=isr, partition_epoch=p.partition_epoch + 1, elr=elr)
            partitions = tuple(new if i == index else q for i, q in enumerate(meta.partitions))
            self._commit(self.metadata.with_topic(attrs.evolve(meta, partitions=partitions)))
        return ErrorCode.none

    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     configs: dict, assignment: list[list[int]] | None = None,
                     ) -> tuple[ErrorCode, str | None]:
        """assignment: explicit replicas per partition (validated by the broker that took the
        request; checked again here against the registered brokers)."""
        ids = sorted(self.alive)
        if self.metadata.topic(name) is not None:
            return ErrorCode.topic_already_exists, f"topic {name} exists"
        if not legal_topic_name(name):
            return ErrorCode.invalid_topic_exception, f"invalid topic name {name!r}"
        error, why = check_configs(configs)
        if error != ErrorCode.none:
            return error, why
        if assignment:
            error, text = check_assignment(dict(enumerate(assignment)), set(self.alive), -1, -1)
            if error != ErrorCode.none:
                return error, text
            metas = tuple(topic_changes.new_partition(tuple(map(int, r)), self.automatic_elections)
                          for r in assignment)
            self._commit(self.metadata.with_topic(
                topic_changes.new_topic(name, metas, configs, new_topic_id())))
            return ErrorCode.none, None
        if partitions < 1:
            return ErrorCode.invalid_partitions, "partitions must be >= 1"
        if not 1 <= replication_factor <= len(ids):
            return (ErrorCode.invalid_replication_factor,
                    f"replication factor {replication_factor} with {len(ids)} live brokers")
        count = sum(len(t.partitions) for t in self.metadata.topics)
        metas = []
        for index in range(partitions):
            start = (count + index) % len(ids)  # spread leaders over brokers
            replicas = tuple(ids[(start + k) % len(ids)] for k in range(replication_factor))
            metas.append(topic_changes.new_partition(replicas, self.automatic_elections))
        self._commit(self.metadata.with_topic(
            topic_changes.new_topic(name, tuple(metas), configs, new_topic_id())))
        return ErrorCode.none, None

    def delete_topic(self, name: str) -> tuple[ErrorCode, str | None]:
        """DeleteTopics: every broker drops the topic's partitions when it sees the image."""
        return self._apply(topic_changes.deleted(self.metadata, name))

    def create_partitions(self, name: str, count: int, assignment: list[list[int]] | None = None,
                          ) -> tuple[ErrorCode, str | None]:
        return self._apply(topic_changes.grown(self.metadata, name, count, assignment,
                                               self.alive, self.automatic_elections))

    def alter_configs(self, name: str, configs: dict) -> tuple[ErrorCode, str | None]:
        """Replace the topic's config overrides (every broker's partitions take them)."""
        return self._apply(topic_changes.reconfigured(self.metadata, name, configs))

    def _apply(self, change: topic_changes.Change) -> tuple[ErrorCode, str | None]:
        error, message, metadata = change
        if metadata is not None:
            self._commit(metadata)
        return error, message
