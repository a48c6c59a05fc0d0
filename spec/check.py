"""Check one generation of the replication protocol: explore every state its variant reaches
within bounds, against the invariants. `kafkaref explore` and `kafkaref demo --spec` are the
commands over it (commands/explore.py); the scenario transcripts and `kafkaref bench explore`
call it directly.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkaref.spec.explore import ExploreResult, ExploreStats, explore
from kafkaref.spec.invariants import INVARIANTS
from kafkaref.spec.machine import initial_states, make_successors
from kafkaref.spec.state import Bounds

# The invariants of the TLA+ modules plus the structural ones every generation must keep; the
# demo and the acceptance numbers use this set. The full set (INVARIANTS) adds log-shape facts
# that older generations also break, usually earlier, through divergent logs.
CLASSIC_INVARIANTS = ("StrongIsr", "WeakIsr", "LeaderInIsr", "HwLeLeo")


def run_spec(
    variant: str,
    bounds: Bounds,
    invariant_names: tuple[str, ...] | None = None,
    *,
    keep_graph: bool = False,
    max_states: int | None = None,
    progress: Callable[[ExploreStats], None] | None = None,
) -> ExploreResult:
    """Explore one variant of the spec within bounds, checking the named invariants (default: all)."""
    names = invariant_names or tuple(INVARIANTS)
    return explore(
        initial_states(bounds),
        make_successors(bounds, variant),
        {name: INVARIANTS[name] for name in names},
        keep_graph=keep_graph,
        max_states=max_states,
        progress=progress,
    )
