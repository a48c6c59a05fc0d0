"""The controller's decisions as single-threaded logic with an injected clock (steppable).

Membership: a broker is alive from registration until its session expires (no heartbeat for
session_timeout_ms) or it registers again (a restart fences its previous incarnation).
Elections: when a leader is fenced, the first replica in assignment order that is alive and in
the ISR leads with leader_epoch + 1; none -> the partition is offline (leader -1) and keeps its
last ISR, unless unclean election is on (then any live replica leads, ISR = {it}: loss by design).
ISR: fenced brokers leave every ISR (never emptying it); leaders change it with alter_isr, accepted
only from the current leader at the current leader epoch and only with live members.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.metadata import BrokerEndpoint, ClusterMetadata, PartitionMeta, TopicMeta
from kafkaref.impl.core.topic_rules import check_assignment, check_configs, legal_topic_name
from kafkaref.impl.mutants import parse_mutants, switches


class ControllerState:
    def __init__(self, clock: Callable[[], int], session_timeout_ms: int = 1500,
                 unclean_election: bool = False, metadata: ClusterMetadata | None = None,
                 on_change: Callable[[ClusterMetadata], None] | None = None,
                 mutants=frozenset()):
        self.clock = clock
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
        # clients send admin requests to "the controller": name a live broker (it forwards)
        controller_id = min((b.broker_id for b in metadata.brokers), default=-1)
        self.metadata = attrs.evolve(metadata, epoch=self.metadata.epoch + 1,
                                     controller_id=controller_id)
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
        self._commit(attrs.evolve(self.metadata, brokers=brokers,
                                  topics=self._elect_offline(self.metadata.topics)))
        return self.metadata

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
        topics = tuple(
            attrs.evolve(t, partitions=tuple(self._without(p, broker_id) for p in t.partitions))
            for t in self.metadata.topics)
        self._commit(attrs.evolve(self.metadata, brokers=brokers, topics=topics))

    # -- elections ----------------------------------------------------------------------------
    def _without(self, p: PartitionMeta, dead: int) -> PartitionMeta:
        if dead not in p.replicas:
            return p
        isr = tuple(r for r in p.isr if r != dead) or p.isr
        if p.leader != dead:
            if isr == p.isr:
                return p
            return attrs.evolve(p, isr=isr, partition_epoch=p.partition_epoch + 1)
        return self._elect(attrs.evolve(p, isr=isr), exclude={dead})

    def _elect(self, p: PartitionMeta, exclude=frozenset()) -> PartitionMeta:
        alive = self.alive - set(exclude)
        bump = self._epoch_bump
        for replica in p.replicas:
            if replica in p.isr and replica in alive:
                isr = tuple(r for r in p.isr if r in alive or r == replica) or (replica,)
                return PartitionMeta(replica, p.leader_epoch + bump, p.replicas, isr,
                                     p.partition_epoch + 1)
        if self.unclean_election:
            for replica in p.replicas:
                if replica in alive:
                    return PartitionMeta(replica, p.leader_epoch + bump, p.replicas, (replica,),
                                         p.partition_epoch + 1)
        if p.leader == -1:
            return p
        return PartitionMeta(-1, p.leader_epoch + bump, p.replicas, p.isr, p.partition_epoch + 1)

    def _elect_offline(self, topics) -> tuple[TopicMeta, ...]:
        return tuple(
            attrs.evolve(t, partitions=tuple(
                self._elect(p) if p.leader == -1 else p for p in t.partitions))
            for t in topics)

    def elect_leader(self, topic: str, index: int, broker_id: int) -> ErrorCode:
        """Move leadership to broker_id (a live ISR member): a preferred-leader election."""
        meta = self.metadata.topic(topic)
        if meta is None or not 0 <= index < len(meta.partitions):
            return ErrorCode.unknown_topic_or_partition
        p = meta.partitions[index]
        if broker_id == p.leader:  # Kafka's ElectLeaders: the preferred replica already leads
            return ErrorCode.election_not_needed
        if broker_id not in p.isr or broker_id not in self.alive:
            return ErrorCode.ineligible_replica
        bump = self._epoch_bump
        new = PartitionMeta(broker_id, p.leader_epoch + bump, p.replicas, p.isr,
                            p.partition_epoch + 1)
        partitions = tuple(new if i == index else q for i, q in enumerate(meta.partitions))
        self._commit(self.metadata.with_topic(attrs.evolve(meta, partitions=partitions)))
        return ErrorCode.none

    # -- requests from brokers ----------------------------------------------------------------
    def alter_isr(self, broker_id: int, topic: str, index: int, leader_epoch: int,
                  isr) -> ErrorCode:
        meta = self.metadata.topic(topic)
        if meta is None or not 0 <= index < len(meta.partitions):
            return ErrorCode.unknown_topic_or_partition
        p = meta.partitions[index]
        if p.leader != broker_id:
            return ErrorCode.not_leader_or_follower
        if leader_epoch != p.leader_epoch:
            return ErrorCode.fenced_leader_epoch
        isr = tuple(sorted(set(isr)))
        if broker_id not in isr or any(r not in p.replicas or r not in self.alive for r in isr):
            return ErrorCode.ineligible_replica
        if isr != tuple(sorted(p.isr)):
            new = attrs.evolve(p, isr=isr, partition_epoch=p.partition_epoch + 1)
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
        if assignment:
            error, text = check_assignment(dict(enumerate(assignment)), set(self.alive), -1, -1)
            if error != ErrorCode.none:
                return error, text
            metas = tuple(PartitionMeta(int(r[0]), 0, tuple(map(int, r)), tuple(map(int, r)))
                          for r in assignment)
            configs = tuple(sorted((str(k), str(v)) for k, v in configs.items()))
            self._commit(self.metadata.with_topic(TopicMeta(name, metas, configs)))
            return ErrorCode.none, None
        if partitions < 1:
            return ErrorCode.invalid_partitions, "partitions must be >= 1"
        error, why = check_configs(configs)
        if error != ErrorCode.none:
            return error, why
        if not 1 <= replication_factor <= len(ids):
            return (ErrorCode.invalid_replication_factor,
                    f"replication factor {replication_factor} with {len(ids)} live brokers")
        count = sum(len(t.partitions) for t in self.metadata.topics)
        metas = []
        for index in range(partitions):
            start = (count + index) % len(ids)  # spread leaders over brokers
            replicas = tuple(ids[(start + k) % len(ids)] for k in range(replication_factor))
            metas.append(PartitionMeta(replicas[0], 0, replicas, replicas))
        configs = tuple(sorted((str(k), str(v)) for k, v in configs.items()))
        self._commit(self.metadata.with_topic(TopicMeta(name, tuple(metas), configs)))
        return ErrorCode.none, None
