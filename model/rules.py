"""The model's rules where a switchable bug (model/config.py `Bug`) acts, one function each, and
the bugs that take their place.

As in impl/core/rules.py: a bug never branches inside a rule. ClusterConfig.rules holds the
table its bugs make (computed once with the config), and model/step.py calls what it holds;
without bugs every entry is the rule itself.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace


# -- the rules ----------------------------------------------------------------------------------
def hw_members(replica) -> frozenset[int]:
    """Whose log ends bound a leader's hw: the maximal ISR (committed ISR and members of a
    change in flight)."""
    return replica.maximal_isr


def hw_gated(replica, min_isr: int) -> bool:
    """KIP-966: no hw advance while the committed ISR is below min.insync.replicas."""
    return len(replica.isr) < min_isr


def consumer_end(replica) -> int:
    """Consumers read below the hw."""
    return replica.hw


def truncation_on_becoming_follower(replica, leader: int | None) -> int | None:
    """Where a replica becoming follower truncates: nowhere (None), it keeps its log and
    truncates on a diverging-epoch fetch answer instead (KIP-101/320)."""
    return None


# -- the bugs -----------------------------------------------------------------------------------
def committed_isr(replica) -> frozenset[int]:
    """B8 (Bug.HW_WITHOUT_MAXIMAL_ISR), for hw_members: the committed ISR only."""
    return replica.isr


def never_gated(replica, min_isr: int) -> bool:
    """B9 (Bug.HW_UNDER_MIN_ISR), for hw_gated: the hw moves below min.insync.replicas too."""
    return False


def log_end(replica) -> int:
    """Bug.READ_ABOVE_HW (impl's M4), for consumer_end: consumers read up to the log end."""
    return len(replica.log)


def own_hw(replica, leader: int | None) -> int | None:
    """B1 (Bug.TRUNCATE_TO_HW), for truncation_on_becoming_follower: to the own hw when a
    leader is named (pre-KIP-101)."""
    return replica.hw if leader is not None else None


def rules_with(replaced: dict[str, Callable]) -> SimpleNamespace:
    """The table model/step.py calls (ClusterConfig.rules): every rule above by its name,
    the functions in `replaced` (a bug's, model/config.py BUG_RULES) in their place."""
    rules = dict(hw_members=hw_members, hw_gated=hw_gated, consumer_end=consumer_end,
                 truncation_on_becoming_follower=truncation_on_becoming_follower)
    rules.update(replaced)
    return SimpleNamespace(**rules)
