"""The cluster configuration of the model, and the switchable bug variants.

Everything that bounds or parameterises the model lives in one frozen value, so a test, an
exploration or a lockstep run states its whole setup in one place.
"""

from __future__ import annotations

import enum
from types import SimpleNamespace

import attrs

from kafkaref.model import rules


class Bug(enum.Enum):
    """Deliberate flaws from docs/bugs.md, switched on one by one to show the checks catch them."""

    # B1: on becoming follower, truncate the log to the local high watermark (pre-KIP-101).
    TRUNCATE_TO_HW = "truncate-to-hw"
    # B8: the leader computes the hw from the committed ISR only, not the maximal ISR.
    HW_WITHOUT_MAXIMAL_ISR = "hw-without-maximal-isr"
    # B9: the hw keeps advancing while the ISR is below min.insync.replicas (pre-KIP-966).
    HW_UNDER_MIN_ISR = "hw-under-min-isr"
    # M4: consumer fetches are served up to the log end offset instead of the hw.
    READ_ABOVE_HW = "read-above-hw"


# Each bug: the rules of model/rules.py it replaces and with what.
BUG_RULES: dict[Bug, dict[str, object]] = {
    Bug.TRUNCATE_TO_HW: {"truncation_on_becoming_follower": rules.own_hw},
    Bug.HW_WITHOUT_MAXIMAL_ISR: {"hw_members": rules.committed_isr},
    Bug.HW_UNDER_MIN_ISR: {"hw_gated": rules.never_gated},
    Bug.READ_ABOVE_HW: {"consumer_end": rules.log_end},
}


def rules_for(bugs: frozenset[Bug]) -> SimpleNamespace:
    """The model's rules with these bugs in their place."""
    replaced: dict[str, object] = {}
    for bug in bugs:
        replaced.update(BUG_RULES[bug])
    return rules.rules_with(replaced)


def _positive(instance, attribute, value) -> None:
    if value < 1:
        raise ValueError(f"{attribute.name} must be >= 1, got {value}")


@attrs.frozen
class ClusterConfig:
    """Static configuration: topology, replication settings, flush policy and bug switches.

    Partition p is replicated on brokers (p + i) % brokers for i in range(replication_factor);
    its preferred (first) replica is p % brokers.
    """

    brokers: int = attrs.field(default=3, validator=_positive)
    partitions: int = attrs.field(default=1, validator=_positive)
    replication_factor: int = attrs.field(default=3, validator=_positive)
    min_insync_replicas: int = attrs.field(default=2, validator=_positive)
    unclean_leader_election: bool = False
    replica_lag_time_max_ms: int = attrs.field(default=30_000, validator=_positive)
    # Flush policy: flush a replica once this many records are unflushed (Kafka's
    # flush.messages). None = never flush by itself (Kafka's default): only Flush events do.
    flush_interval_messages: int | None = None
    bugs: frozenset[Bug] = attrs.field(default=frozenset(), converter=frozenset)
    # Derived, computed once: the replica assignment of every partition, and the rules the
    # model follows where a bug acts (model/rules.py), the bugs in their place.
    _assignments: tuple[tuple[int, ...], ...] = attrs.field(init=False, repr=False, eq=False)
    rules: SimpleNamespace = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        if self.replication_factor > self.brokers:
            raise ValueError("replication_factor cannot exceed the number of brokers")
        assignments = tuple(
            tuple((p + i) % self.brokers for i in range(self.replication_factor))
            for p in range(self.partitions)
        )
        object.__setattr__(self, "_assignments", assignments)
        object.__setattr__(self, "rules", rules_for(self.bugs))

    @property
    def min_isr(self) -> int:
        """The effective minimum ISR size: Kafka caps min.insync.replicas at the replica count."""
        return min(self.min_insync_replicas, self.replication_factor)

    def assignment(self, partition: int) -> tuple[int, ...]:
        """The brokers holding a replica of `partition`, preferred replica first."""
        return self._assignments[partition]

    def has(self, bug: Bug) -> bool:
        return bug in self.bugs
