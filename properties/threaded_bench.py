"""`kafkaref bench lockstep-threaded`: lockstep steps per second of the model with the threaded
broker (properties/threaded_machine.py over properties/threaded_cluster.py), against the same
seeded walks on the model alone, in the same run.
"""

from __future__ import annotations

import time

from kafkaref.model.config import ClusterConfig
from kafkaref.properties.stateful import bind
from kafkaref.properties.threaded_cluster import ThreadedCluster
from kafkaref.properties.threaded_machine import ThreadedMachine

BENCH_CONFIG = ClusterConfig(brokers=3, partitions=2, replication_factor=3, min_insync_replicas=2)


def _timed_walk(sut_factory, examples: int, steps: int, label: str) -> tuple[int, float]:
    """(steps taken, seconds) for a seeded walk of the threaded rule set; progress on stderr."""
    import sys

    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.stateful import run_state_machine_as_test

    machine = bind(ThreadedMachine, config=BENCH_CONFIG, sut_factory=sut_factory)
    counted = {"steps": 0, "examples": 0}
    step = machine.step

    def counting_step(self, *args, **kwargs):
        counted["steps"] += 1
        return step(self, *args, **kwargs)

    machine.step = counting_step
    init = machine.__init__

    def counting_init(self):
        counted["examples"] += 1
        print(f"\r{label}: walk {counted['examples']}/{examples}", end="", file=sys.stderr,
              flush=True)
        init(self)

    machine.__init__ = counting_init
    start = time.perf_counter()
    run_state_machine_as_test(machine, settings=settings(
        max_examples=examples, stateful_step_count=steps, derandomize=True, database=None,
        deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck)))
    print(file=sys.stderr)
    return counted["steps"], time.perf_counter() - start


def bench_lockstep_threaded(examples: int = 5, steps: int = 40) -> dict:
    """`kafkaref bench lockstep-threaded`: lockstep steps per second against three in-process
    threaded brokers (cluster start-up and teardown included, as a test pays them), with the
    same seeded walks on the model alone as the baseline. A step is one rule: the event, the
    model's settle, the broker's answers and its settle point."""
    rows = []
    for label, factory in (("model alone", None), ("model + threaded broker", ThreadedCluster)):
        taken, seconds = _timed_walk(factory, examples, steps, label)
        rows.append({"run": label, "walks": examples, "steps": taken, "seconds": seconds,
                     "steps/s": taken / seconds})
    model_rate, broker_rate = rows[0]["steps/s"], rows[1]["steps/s"]
    return {"title": "lockstep of the model with the threaded broker (3 brokers, 2 partitions)",
            "rows": rows,
            "figures": {"threaded_steps_per_s": broker_rate, "model_alone_steps_per_s": model_rate,
                        "slowdown": model_rate / broker_rate}}
