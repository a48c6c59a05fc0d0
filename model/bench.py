"""`kafkaref bench model`: how fast the model steps, and how large its explored state space is.

- step throughput on a mixed produce / consumer fetch / replica fetch workload on a 3-broker,
  3-partition model (events generated first from one seed, then replayed through step() alone),
  against the target of 50,000 events/s (so the model never limits lockstep tests) and against
  a baseline measured in the same run: dispatch plus one frozen-value rebuild per event, the
  floor any pure step function in Python pays;
- exhaustive exploration of the model at small bounds (distinct states, wall time), next to
  the spec's own exploration at comparable bounds.
"""

from __future__ import annotations

import time

import attrs

from kafkaref.model.config import ClusterConfig
from kafkaref.model.explore_target import build
from kafkaref.model.step import step
from kafkaref.model.values import initial_state
from kafkaref.model.workload import Workload
from kafkaref.spec.explore import explore
from kafkaref.spec.machine import initial_states as spec_initial_states
from kafkaref.spec.machine import make_successors as spec_successors
from kafkaref.spec.state import Bounds

TARGET_EVENTS_PER_SECOND = 50_000
EVENTS = 60_000
EXPLORE_OPTIONS = dict(replicas=2, max_records=1, max_epoch=2, ticks=1, crashes=1, reads=1, flushes=False)


def _best_of(runs: int, work) -> float:
    """Best CPU time of a few runs: CPU time, not wall time, because the machine is shared and
    the work is single-threaded and CPU-bound."""
    best = float("inf")
    for _ in range(runs):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best


def measure_step(events: int = EVENTS, seed: int = 7) -> tuple[float, float]:
    """(model events/s, baseline events/s), best of three replays each."""
    config = ClusterConfig(brokers=3, partitions=3, replication_factor=3, min_insync_replicas=2,
                           replica_lag_time_max_ms=10_000)
    start = initial_state(config)
    stream = list(Workload(seed).events(start, events))

    def model_run():
        state = start
        for event in stream:
            state, _ = step(state, event)

    handlers = {type(e): (lambda s, e: (attrs.evolve(s, now_ms=s.now_ms), ())) for e in stream}

    def baseline_run():
        state = start
        for event in stream:
            state, _ = handlers[type(event)](state, event)

    model_seconds = _best_of(3, model_run)
    baseline_seconds = _best_of(3, baseline_run)
    return len(stream) / model_seconds, len(stream) / baseline_seconds


def measure_explore():
    starts, successors, invariants, _ = build(EXPLORE_OPTIONS)
    model = explore(starts, successors, invariants)
    bounds = Bounds(replicas=2, log_size=2, max_records=2, max_epoch=2)
    from kafkaref.spec.invariants import INVARIANTS

    spec = explore(spec_initial_states(bounds), spec_successors(bounds, "kip320"), INVARIANTS)
    return model, spec


def bench_model() -> dict:
    events_per_second, baseline_per_second = measure_step()
    model, spec = measure_explore()
    rows = [
        {"measure": "model step(), mixed workload, 3 brokers x 3 partitions", "count": EVENTS,
         "per second": events_per_second, "ratio": events_per_second / TARGET_EVENTS_PER_SECOND},
        {"measure": "baseline: dispatch + one frozen-value rebuild per event", "count": EVENTS,
         "per second": baseline_per_second, "ratio": events_per_second / baseline_per_second},
        {"measure": "explore model: 2 replicas, 1 record, epochs 0..2, 1 tick, 1 crash, 1 read",
         "count": model.distinct_states, "per second": model.states_per_second,
         "ratio": model.wall_seconds},
        {"measure": "explore spec kip320: 2 replicas, log 2, 2 records, epochs 0..2",
         "count": spec.distinct_states, "per second": spec.states_per_second,
         "ratio": spec.wall_seconds},
    ]
    return {
        "title": "model: step throughput (ratio to the 50k/s target, to the baseline) and state space "
                 "(ratio column: wall seconds)",
        "rows": rows,
        "figures": {
            "events_per_second": events_per_second,
            "target_events_per_second": TARGET_EVENTS_PER_SECOND,
            "ratio_to_target": events_per_second / TARGET_EVENTS_PER_SECOND,
            "baseline_events_per_second": baseline_per_second,
            "ratio_to_baseline": events_per_second / baseline_per_second,
            "explored_states": model.distinct_states,
            "explore_seconds": model.wall_seconds,
            "explore_complete": int(model.complete),
            "spec_explored_states": spec.distinct_states,
            "spec_explore_seconds": spec.wall_seconds,
        },
    }
