"""Running the differential machine against brokers: the pair of endpoints (started here as
peers, or given by address), a walk of N sequences, the replay of a transcript. The command
line (cli.py) and the tests call these.

Outcomes and exit codes (cli.py): 0 the brokers answered alike; 1 diverged (the transcript is
written); 3 could not compare (a broker did not answer, died, or could not be started); 2 bad
input (a file that is not a transcript).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile

from hypothesis import HealthCheck, settings

from kafkaref.properties.differential.endpoints import CouldNotCompare, Endpoint
from kafkaref.properties.differential.machine import (
    Tally,
    differential_machine,
    walk,
    warm_up,
)
from kafkaref.properties.differential.steps import Names
from kafkaref.properties.differential.transcript import (
    CANDIDATE,
    REFERENCE,
    Replay,
    replay_live,
    replay_recorded,
    write,
)
from kafkaref.properties.servers import NO_RETENTION_TASK_MS

SAME, DIVERGED, BAD_INPUT, COULD_NOT_COMPARE = 0, 1, 2, 3
TRANSCRIPT_DIR = os.path.join("runs", "differential")


def endpoints_of(reference_bootstrap: str, candidate_bootstrap: str,
                 reference_version: str = "?", candidate_version: str = "?"
                 ) -> tuple[Endpoint, Endpoint]:
    """The two systems under test by address, warmed up (machine.warm_up)."""
    pair = (Endpoint(REFERENCE, reference_bootstrap, reference_version),
            Endpoint(CANDIDATE, candidate_bootstrap, candidate_version))
    for endpoint in pair:
        warm_up(endpoint)
    return pair


# Both brokers run a retention task (docs/divergences.md, `retention-timing`): the first one,
# 30 s after start, would delete the walk's records, stamped in 1970, on whichever broker ran
# it first, and every answer after it would differ for that reason alone. Both start theirs a
# day late: Kafka's log tasks (server.properties), kafkaref's (its peer's option).
NO_RETENTION_TASK = {"log.initial.task.delay.ms": str(NO_RETENTION_TASK_MS)}
OURS_WITHOUT_RETENTION = {"log_initial_task_delay_ms": NO_RETENTION_TASK_MS}


@contextlib.contextmanager
def started_pair(nodes: int = 1, directory: str | None = None):
    """Apache Kafka and kafkaref started as peers (chaos/peers) of `nodes` nodes each; their
    endpoints. Everything is stopped after. A peer that cannot start is CouldNotCompare."""
    from kafkaref.chaos.peers import PeerError, start_peer

    directory = directory or tempfile.mkdtemp(prefix="kafkaref-differential-")
    with contextlib.ExitStack() as stack:
        try:
            kafka = stack.enter_context(start_peer(REFERENCE, nodes,
                                                   os.path.join(directory, "kafka"),
                                                   overrides=NO_RETENTION_TASK))
            ours = stack.enter_context(start_peer(CANDIDATE, nodes,
                                                  os.path.join(directory, "kafkaref"),
                                                  **OURS_WITHOUT_RETENTION))
        except PeerError as error:
            raise CouldNotCompare(f"a broker could not be started: {error}") from None
        pair = endpoints_of(kafka.bootstrap, ours.bootstrap, kafka.version, ours.version)
        try:
            yield pair
        finally:
            for endpoint in pair:
                endpoint.close()


def walk_settings(examples: int, steps: int, derandomize: bool = True):
    """Hypothesis settings for a walk: no deadline (two brokers on a shared box), no database,
    health checks off (a walk's data is large and its steps slow by nature)."""
    return settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                    derandomize=derandomize, database=None, print_blob=True,
                    suppress_health_check=list(HealthCheck))


def run_walk(pair: tuple[Endpoint, Endpoint], hypothesis_settings,
             transcript_dir: str = TRANSCRIPT_DIR, keep_going: bool = False) -> Tally:
    """One walk over the pair; its Tally (Diverged and CouldNotCompare propagate)."""
    tally = Tally(keep_going=keep_going)
    machine = differential_machine(lambda: pair, tally, transcript_dir)
    return walk(machine, hypothesis_settings)


def recorded_walk(pair: tuple[Endpoint, Endpoint], name: str, examples: int, steps: int,
                  derandomize: bool = True) -> Tally:
    """A walk whose numbers are kept in runs/differential/<name>.json and printed (what the
    tests run). CouldNotCompare and Diverged propagate."""
    tally = run_walk(pair, walk_settings(examples, steps, derandomize))
    os.makedirs(TRANSCRIPT_DIR, exist_ok=True)
    with open(os.path.join(TRANSCRIPT_DIR, f"{name}.json"), "w") as f:
        json.dump({"brokers": [f"{e.name} {e.version}" for e in pair],
                   "nodes": len(pair[0].node_ids), "sequences": tally.sequences,
                   "steps": tally.steps, "requests": 2 * tally.steps,
                   "apis": sorted({api for api, _ in tally.versions}),
                   "versions": sorted(f"{api} v{v}" for api, v in tally.versions)}, f, indent=1)
    print(f"\n{name}: {tally.summary()}")
    return tally


def replay(path: str, pair: tuple[Endpoint, Endpoint] | None = None,
           candidate: Endpoint | None = None) -> Replay:
    """The transcript at `path` sent again: to both brokers (pair), or to kafkaref alone
    compared with the Apache Kafka answers the file recorded (candidate)."""
    prefix = f"r{os.getpid()}-{next(_replays)}-"
    if pair is not None:
        return replay_live(path, Names(pair[0], prefix), Names(pair[1], prefix))
    return replay_recorded(path, Names(candidate, prefix))


def record(path: str, pair: tuple[Endpoint, Endpoint], header: list[str]) -> Replay:
    """Send a transcript's steps to both brokers and write the file again with their answers
    (a new regression transcript: its steps are written first, with empty answers)."""
    from kafkaref.properties.transcripts import parse

    with open(path) as f:
        kept_header = [line.lstrip("# ").rstrip() for line in parse(f.read())[0]
                       if not line.startswith("# recorded from ")]
    result = replay(path, pair)
    if result.diverged_at is None:
        write(path, kept_header + [f"recorded from {line}" for line in header], result.entries)
    return result


def _counter():
    number = 0
    while True:
        number += 1
        yield number


_replays = _counter()
