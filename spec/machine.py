"""The replication spec as a pure machine the explorer can run: initial states, successors and
invariants for a variant and bounds."""

from __future__ import annotations

from collections.abc import Iterator

from kafkaref.spec.state import Bounds, State, initial_state
from kafkaref.spec.variants import VARIANTS, Variant


def variant(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; valid: {', '.join(VARIANTS)}") from None


def successors(state: State, bounds: Bounds, variant_name: str) -> Iterator[tuple[str, State]]:
    """Every (action label, next state) of the variant's next-state relation."""
    for action in variant(variant_name).actions:
        yield from action(state, bounds)


def make_successors(bounds: Bounds, variant_name: str):
    """A one-argument successor function for the explorer (binds bounds and actions once)."""
    chosen = variant(variant_name).actions

    def next_states(state: State) -> Iterator[tuple[str, State]]:
        for action in chosen:
            yield from action(state, bounds)

    return next_states


def initial_states(bounds: Bounds) -> list[State]:
    return [initial_state(bounds)]
