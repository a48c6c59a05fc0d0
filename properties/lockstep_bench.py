"""`kafkaref bench lockstep`: lockstep steps per second on the core, with the model alone measured
in the same run; and how often each rule of the lockstep machine fired (rule coverage).

Throughput: one seeded MIXED workload (model/workload.py: produce, fetch, replica fetch,
ListOffsets, ticks, ISR commits; the faulty mix dies into trivial steps) on 3 x 3 is
generated first, then replayed (a) through the model's step() alone and (b) in lockstep: the
model and CoreLockstep each take the event, their effects are compared, and every
`state_every`-th step the observable states are compared too (core_image decodes every log, so
its cost grows with the logs; the machine compares after every step on short walks). Goal:
2,000 lockstep steps/s on the core; the model alone >= 50,000 events/s.

Coverage: `rule_coverage(profile)` runs the lockstep machines of the test suite under a
Hypothesis profile (ci, deep) and counts per rule outcome how often it fired.
"""

from __future__ import annotations

import collections
import time

from kafkaref.model.config import ClusterConfig
from kafkaref.model.step import step
from kafkaref.model.values import initial_state
from kafkaref.model.workload import MIXED, Workload
from kafkaref.properties.lockstep import (
    CoreLockstep,
    core_image,
    observable_state,
    same_effects_any_order,
)
from kafkaref.properties.walk_configs import WALK_CONFIGS

TARGET_LOCKSTEP_STEPS_PER_SECOND = 2_000
TARGET_MODEL_EVENTS_PER_SECOND = 50_000
EVENTS = 6_000
CONFIG = ClusterConfig(brokers=3, partitions=3, replication_factor=3, min_insync_replicas=2,
                       replica_lag_time_max_ms=10_000)


def _stream(events: int, seed: int):
    start = initial_state(CONFIG)
    return start, list(Workload(seed, MIXED).events(start, events))


def measure_model(events: int = EVENTS * 10, seed: int = 7) -> float:
    """The model alone on the same kind of stream: events/s of CPU time (best of three)."""
    start, stream = _stream(events, seed)
    best = float("inf")
    for _ in range(3):
        began = time.process_time()
        state = start
        for event in stream:
            state, _ = step(state, event)
        best = min(best, time.process_time() - began)
    return len(stream) / best


def measure_lockstep(events: int = EVENTS, seed: int = 7, state_every: int = 1) -> float:
    """Model + core in lockstep, effects compared every step, states every `state_every`-th
    step: steps/s of CPU time. Raises AssertionError on a difference."""
    start, stream = _stream(events, seed)
    began = time.process_time()
    state, core = start, CoreLockstep(CONFIG)
    for index, event in enumerate(stream):
        state, expected = step(state, event)
        actual = core.feed(event)
        assert same_effects_any_order(expected, actual), (index, event, expected, actual)
        if index % state_every == 0:
            assert observable_state(state) == observable_state(core_image(core)), (index, event)
    return len(stream) / (time.process_time() - began)


def bench_lockstep() -> dict:
    model = measure_model()
    every = measure_lockstep(state_every=1)
    sparse = measure_lockstep(state_every=100)
    rows = [
        {"measure": "model step() alone, mixed workload, 3 brokers x 3 partitions",
         "count": EVENTS * 10, "per second": model, "ratio to target": model / TARGET_MODEL_EVENTS_PER_SECOND},
        {"measure": "lockstep on the core: effects + states compared every step",
         "count": EVENTS, "per second": every, "ratio to target": every / TARGET_LOCKSTEP_STEPS_PER_SECOND},
        {"measure": "lockstep on the core: effects every step, states every 100th",
         "count": EVENTS, "per second": sparse, "ratio to target": sparse / TARGET_LOCKSTEP_STEPS_PER_SECOND},
    ]
    return {
        "title": "lockstep model + core (CPU time; ratio to the 2,000 steps/s and 50,000 events/s targets)",
        "rows": rows,
        "figures": {
            "model_events_per_second": model,
            "lockstep_steps_per_second": every,
            "lockstep_steps_per_second_sparse_state_checks": sparse,
            "lockstep_target": TARGET_LOCKSTEP_STEPS_PER_SECOND,
            "model_target": TARGET_MODEL_EVENTS_PER_SECOND,
            "model_per_lockstep_step": model / every,
        },
    }


def rule_coverage(profile: str = "ci") -> collections.Counter:
    """Run the test suite's lockstep machines under `profile`; how often each rule outcome
    fired (labels from properties/model_machine.fired_label)."""
    from hypothesis import settings
    from hypothesis.stateful import run_state_machine_as_test

    from kafkaref.properties import profiles
    from kafkaref.properties.lockstep import lockstep_machine
    from kafkaref.properties.model_machine import FIRED

    profiles.load_from_environment()
    chosen = settings.get_profile(profile)
    FIRED.clear()
    for config in LOCKSTEP_CONFIGS.values():
        run_state_machine_as_test(lockstep_machine(config), settings=chosen)
    return collections.Counter(FIRED)


# the configurations of the lockstep walks (properties/tests/core/test_core_lockstep.py)
LOCKSTEP_CONFIGS = WALK_CONFIGS


def main() -> None:
    """python -m kafkaref.properties.lockstep_bench [PROFILE]: print rule firing counts."""
    import sys

    profile = sys.argv[1] if len(sys.argv) > 1 else "ci"
    began = time.monotonic()
    counts = rule_coverage(profile)
    width = max(map(len, counts), default=10)
    for label, count in sorted(counts.items()):
        print(f"{label:<{width}}  {count:>9,}")
    print(f"profile {profile}: {sum(counts.values()):,} events in {time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    main()
