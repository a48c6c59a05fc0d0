"""The state of the abstract replication protocol: one partition, a fixed set of replicas.

A faithful rendering of the variables of the TLA+ module KafkaReplication (hachikuji's
kafka-specification): each replica's log and local state, the controller's quorum state (what
ZooKeeper or the KRaft quorum holds), the set of every LeaderAndIsr request ever sent (so a
request can be delivered late, twice or never), and the counters that hand out record ids and
leader epochs.

Replicas are the ints 0..n-1 and print as r1..rn. "No epoch" is NIL_EPOCH (-1), "no leader" is
None. A log is a tuple of records; a record's offset is its index. The high watermark is
exclusive: hw = 1 means offset 0 is committed.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs

NIL_EPOCH = -1


class Record(NamedTuple):
    """A log entry: a unique record id and the leader epoch it was written in.

    A NamedTuple rather than an attrs class on purpose: records are compared and hashed millions
    of times during exploration, and a tuple does both in C. It is just as immutable.
    """

    id: int
    epoch: int


Log = tuple[Record, ...]


@attrs.frozen(cache_hash=True)
class ReplicaState:
    """What one replica believes: its high watermark and its cached copy of the partition state
    from the last LeaderAndIsr request it handled."""

    hw: int
    leader_epoch: int
    leader: int | None
    isr: frozenset[int]


@attrs.frozen(cache_hash=True)
class QuorumState:
    """The controller's view, also the body of a LeaderAndIsr request."""

    leader_epoch: int
    leader: int | None
    isr: frozenset[int]


@attrs.frozen(cache_hash=True)
class State:
    logs: tuple[Log, ...]
    replicas: tuple[ReplicaState, ...]
    quorum: QuorumState
    requests: frozenset[QuorumState]
    next_record_id: int
    next_leader_epoch: int

    def leo(self, replica: int) -> int:
        """Log end offset of a replica: the offset the next appended record gets."""
        return len(self.logs[replica])

    def presumes_leadership(self, replica: int) -> bool:
        return self.replicas[replica].leader == replica

    def is_following(self, follower: int, leader: int) -> bool:
        return self.replicas[follower].leader == leader


@attrs.frozen
class Bounds:
    """The finite bounds that make the state space explorable (the TLA+ model's constants)."""

    replicas: int = attrs.field(validator=attrs.validators.in_(range(1, 8)))
    log_size: int = attrs.field(validator=attrs.validators.ge(1))
    max_records: int = attrs.field(validator=attrs.validators.ge(1))
    max_epoch: int = attrs.field(validator=attrs.validators.ge(0))

    @property
    def replica_ids(self) -> range:
        return range(self.replicas)


def initial_state(bounds: Bounds) -> State:
    """Init: empty logs, replicas knowing nothing, no leader, every replica in the quorum ISR."""
    nobody = ReplicaState(hw=0, leader_epoch=NIL_EPOCH, leader=None, isr=frozenset())
    return State(
        logs=tuple(() for _ in bounds.replica_ids),
        replicas=tuple(nobody for _ in bounds.replica_ids),
        quorum=QuorumState(NIL_EPOCH, None, frozenset(bounds.replica_ids)),
        requests=frozenset(),
        next_record_id=0,
        next_leader_epoch=0,
    )


def replica_name(replica: int | None) -> str:
    return "none" if replica is None else f"r{replica + 1}"


def isr_name(isr: frozenset[int]) -> str:
    return "{" + ",".join(replica_name(r) for r in sorted(isr)) + "}"
