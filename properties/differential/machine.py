"""The differential state machine: one generated sequence of requests, sent step by step to
Apache Kafka (the reference) and to kafkaref (the candidate), their answers compared after
normalise.py's rules.

    Walk = differential_machine(lambda: (kafka_endpoint, kafkaref_endpoint), tally)
    walk(Walk, settings)   # its Tally; Diverged or CouldNotCompare otherwise

Each run (one Hypothesis example) uses topic and group names of its own (a prefix per run), so
runs share the two brokers without seeing each other's topics. Versions are drawn from the
intersection of the ranges both brokers advertise (read from their ApiVersions answers), so a
version kafkaref learns later is covered without a change here.

Outcomes, kept apart:
- the answers differ: Diverged (an AssertionError: Hypothesis shrinks the sequence); the run's
  transcript is written to `transcript_dir`, last write wins, so the file left is the shrunk one;
- a broker did not answer, died or cannot be reached: the walk ends at once (StopWalk, which
  Hypothesis does not shrink) and walk() raises CouldNotCompare: never a divergence, never a
  pass, and no shrinking that would wait on a dead broker again and again.
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Callable

import attrs
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from kafkaref.properties.differential import strategies as s
from kafkaref.properties.differential.endpoints import CouldNotCompare, Endpoint, wait_for
from kafkaref.properties.differential.steps import API_NAMES, KINDS, Names, Step, run_step
from kafkaref.properties.differential.transcript import (
    CANDIDATE,
    REFERENCE,
    Entry,
    differences,
    write,
)

WARM_UP_S = 60.0  # Kafka's producer-id block and the group coordinator's partition, at start


class Diverged(AssertionError):
    """Apache Kafka and kafkaref answered one step differently."""


class StopWalk(BaseException):  # noqa: N818 -- not an error of the test: the end of the walk
    """A broker could not be compared: the walk ends at once. A BaseException, so that
    Hypothesis does not take it for a failure to shrink (shrinking would wait on the dead broker
    again and again); walk() turns it back into CouldNotCompare."""


@attrs.define
class Tally:
    """What a walk compared: for the report (issue 20's numbers)."""

    sequences: int = 0
    steps: int = 0
    versions: collections.Counter = attrs.Factory(collections.Counter)  # (api, version) -> n
    could_not_compare: str | None = None
    divergence: str | None = None  # the last (the shrunk) divergence's transcript path
    # keep_going: divergences are collected (first difference -> an example step) and the walk
    # goes on, unshrunk: a survey of what differs, for triage (the __main__ `survey` command)
    keep_going: bool = False
    found: dict = attrs.Factory(dict)
    started: float = attrs.Factory(time.monotonic)

    def summary(self) -> str:
        apis = sorted({api for api, _ in self.versions})
        pairs = len(self.versions)
        return (f"{self.sequences} sequences, {self.steps} steps ({2 * self.steps} requests) "
                f"compared, {len(apis)} kinds of step, {pairs} (api, version) pairs, "
                f"{time.monotonic() - self.started:.0f} s")


# The versions the walk's steps (steps.py, strategies.py) write and read: every version both
# brokers advertise today (Kafka 4.3.1's ranges), topics named by id included (Produce 13,
# Fetch 13+, OffsetCommit / OffsetFetch 10) and KIP-951's leader hints in the answers (nodes
# compared by position, addresses dropped: normalise.py). Produce 0-2 are refused by closing
# the connection (KIP-896), compared by properties/tests/peers/test_peers_api_versions.py; a
# version added later is walked once it is listed here and its fields are written by the
# step's builder.
WALKED: dict[int, tuple[int, int]] = {
    0: (3, 13), 1: (4, 18), 2: (1, 11), 3: (1, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6),
    11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 18: (0, 4),
    19: (2, 7), 20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 32: (1, 4), 33: (0, 2),
    35: (1, 5), 37: (0, 3), 42: (0, 2), 44: (0, 1), 60: (0, 2), 75: (0, 0)}


def shared_versions(a: Endpoint, b: Endpoint) -> dict[int, tuple[int, int]]:
    """api key -> the range both advertise and the walk speaks (keys where the ranges meet)."""
    out = {}
    for key in a.versions.keys() & b.versions.keys() & WALKED.keys():
        low = max(a.versions[key][0], b.versions[key][0], WALKED[key][0])
        high = min(a.versions[key][1], b.versions[key][1], WALKED[key][1])
        if low <= high:
            out[key] = (low, high)
    return out


def warm_up(endpoint: Endpoint) -> None:
    """Wait (bounded) until the broker hands out producer ids and coordinates groups: Apache
    Kafka answers COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE at first while its
    controller hands it a producer-id block and __consumer_offsets is created
    (docs/divergences.md). Not compared: a start-up transient, not a behaviour."""
    def ready(api_key: int, version: int, values: dict) -> Callable[[], bool]:
        return lambda: endpoint.call(api_key, version, values).get("error_code") == "none"

    for what, check in (
            ("producer ids", ready(22, 0, {"transactional_id": None, "transaction_timeout": 60_000})),
            ("a group coordinator", ready(10, 0, {"key": "kafkaref-differential-warm-up"}))):
        if not wait_for(check, WARM_UP_S, interval_s=0.2):
            raise CouldNotCompare(f"{endpoint.name} gave no {what} within {WARM_UP_S:.0f} s")


class DifferentialMachine(RuleBasedStateMachine):
    """Bound to its brokers by differential_machine(); see the module docstring."""

    endpoints: Callable[[], tuple[Endpoint, Endpoint]]
    tally: Tally
    transcript_dir: str = os.path.join("runs", "differential")
    runs = 0

    def __init__(self) -> None:
        super().__init__()
        type(self).runs += 1
        reference, candidate = self.endpoints()
        prefix = f"d{os.getpid()}-{type(self).runs}-"
        self.names = {REFERENCE: Names(reference, prefix), CANDIDATE: Names(candidate, prefix)}
        self.versions = shared_versions(reference, candidate)
        self.nodes = len(reference.node_ids)
        self.world = s.World()
        self.entries: list[Entry] = []
        self.tally.sequences += 1

    # -- comparing ---------------------------------------------------------------------------
    def send(self, step: Step) -> object:
        """Send step to both brokers; the (equal) normalised answer, or Diverged."""
        note(step.command())
        answers = {}
        try:
            for name, names in self.names.items():
                answers[name] = run_step(step, names)
        except CouldNotCompare as error:
            self.tally.could_not_compare = f"could not compare: {error}"
            raise StopWalk(self.tally.could_not_compare) from None
        self.entries.append(Entry(step, answers))
        if isinstance(step.args.get("group"), str):
            self.world.groups.add(step.args["group"])  # a group named once is the run's
        self.tally.steps += 1
        self.tally.versions[(API_NAMES.get(KINDS[step.kind].api_key, step.kind),
                             step.version)] += 1
        if answers[REFERENCE] != answers[CANDIDATE]:
            if self.tally.keep_going:
                first = differences(answers[REFERENCE], answers[CANDIDATE])[:1] or ["?"]
                signature = f"{step.kind}: {_without_indexes(first[0].split(':')[0])}"
                self.tally.found.setdefault(signature, (step, first[0]))
            else:
                self.diverged(step, answers)
        return answers[REFERENCE]

    def diverged(self, step: Step, answers: dict) -> None:
        path = os.path.join(self.transcript_dir, "last-divergence.txt")
        reference, candidate = (self.names[n].endpoint for n in (REFERENCE, CANDIDATE))
        header = [f"{reference.name} {reference.version} against {candidate.name} "
                  f"{candidate.version}: diverged at step {len(self.entries)}",
                  "replay: python -m kafkaref.properties.differential replay " + path]
        write(path, header, self.entries)
        self.tally.divergence = path
        where = "\n".join(differences(answers[REFERENCE], answers[CANDIDATE])[:8])
        raise Diverged(f"{step.kind} v{step.version}: Apache Kafka and kafkaref differ\n{where}\n"
                       f"transcript ({len(self.entries)} steps): {os.path.abspath(path)}")

    def teardown(self) -> None:
        for names in self.names.values() if hasattr(self, "names") else ():
            names.endpoint.forget_members()

    # -- topics ------------------------------------------------------------------------------
    @initialize(data=st.data())
    def first_topic(self, data):
        """Every run starts with a topic of two partitions: most steps need one."""
        name = self.world.fresh("t")
        v = data.draw(s.version(self.versions, 19), label="version")
        self.learn_topics(Step("create_topics", v, {"topics": [
            {"name": name, "partitions": 2, "rf": self.nodes}], "timeout_ms": 10_000}))

    @rule(data=st.data())
    def create_topics(self, data):
        self.learn_topics(data.draw(s.create_topics(self.versions, self.world, self.nodes)))

    def learn_topics(self, step: Step) -> None:
        answer = self.send(step)
        if step.args.get("validate_only"):
            return
        created = {t["name"] for t in answer["topics"] if t["error_code"] == "none"}
        for topic in step.args["topics"]:
            if topic["name"] in created:
                count = len(topic.get("assignments") or []) or topic["partitions"]
                self.world.topics[topic["name"]] = count if count > 0 else 1

    @rule(data=st.data())
    @precondition(lambda self: self.world.topics)
    def delete_topics(self, data):
        step = data.draw(s.delete_topics(self.versions, self.world))
        answer = self.send(step)
        for result in answer["responses"]:
            if result["error_code"] == "none":
                self.world.topics.pop(result["name"], None)

    @rule(data=st.data())
    def create_partitions(self, data):
        step = data.draw(s.create_partitions(self.versions, self.world))
        answer = self.send(step)
        for result, topic in zip(answer["results"], step.args["topics"], strict=False):
            if result["error_code"] == "none" and not step.args["validate_only"]:
                self.world.topics[topic["name"]] = topic["count"]

    @rule(data=st.data())
    def metadata(self, data):
        step = data.draw(s.metadata(self.versions, self.world, self.nodes))
        answer = self.send(step)
        named = step.args["topics"] or ()
        for topic in answer.get("topics", []):
            if topic["error_code"] == "none" and topic["name"] in named:
                self.world.topics[topic["name"]] = len(topic["partitions"])
            elif step.args["auto_create"] and topic["name"] in named and (
                    topic["error_code"] == "unknown_topic_or_partition"):
                self.world.topics.setdefault(topic["name"], 1)  # created in the background

    # -- records -----------------------------------------------------------------------------
    @rule(data=st.data())
    def init_producer_id(self, data):
        step = data.draw(s.init_producer(self.versions, self.world))
        answer = self.send(step)
        if answer["error_code"] == "none":
            self.world.producers[step.args["producer"]] = s.Producer(answer["producer_epoch"])

    @rule(data=st.data())
    def produce(self, data):
        step = data.draw(s.produce(self.versions, self.world))
        answer = self.send(step)
        if "responses" not in answer:
            return
        results = {(t.get("name", t.get("topic_id")), p["index"]): p  # v13+: by id (symbol)
                   for t in answer["responses"] for p in t["partition_responses"]}
        for topic, partition, batches in step.args["partitions"]:
            result = results.get((topic, partition))
            if result is not None and result["error_code"] == "none":
                self.world.log_ends[(topic, partition)] = result["base_offset"] + sum(
                    len(b["records"]) for b in batches)
                self.learn_sequences((topic, partition), batches)

    def learn_sequences(self, key, batches) -> None:
        for spec in batches:
            producer = self.world.producers.get(spec.get("producer"))
            if producer is None:
                continue
            if spec["epoch"] > producer.epoch:
                producer.epoch, producer.sequences = spec["epoch"], {}
            count = len(spec["records"])
            if spec["sequence"] == producer.sequences.get(key, 0):
                producer.sequences[key] = spec["sequence"] + count
                producer.last[key] = (spec["sequence"], count)

    # -- groups ------------------------------------------------------------------------------
    @rule(data=st.data())
    def join_group(self, data):
        step = data.draw(s.join_group(self.versions, self.world))
        answer = self.send(step)
        latest = answer.get("answer", answer)
        if latest.get("member_id"):
            self.world.members[step.args["member"]] = step.args["group"]

    @rule(data=st.data())
    @precondition(lambda self: self.world.members)
    def leave_group(self, data):
        step = data.draw(s.leave_group(self.versions, self.world))
        answer = self.send(step)
        if answer.get("error_code") == "none":
            self.world.members.pop(step.args["member"], None)

    # -- the protocol ------------------------------------------------------------------------
    @rule(data=st.data())
    def api_versions(self, data):
        advertised = [n.endpoint.versions for n in self.names.values()]
        self.send(data.draw(s.api_versions(self.versions, advertised)))


def _sends(strategy, needs_members: bool = False):
    """A rule that sends one step drawn from strategy(versions, world), and learns nothing
    from the answer (the rules above learn topics, producers, members)."""
    @rule(data=st.data())
    def send_one(self, data):
        self.send(data.draw(strategy(self.versions, self.world)))

    send_one.__name__ = strategy.__name__
    return precondition(lambda self: self.world.members)(send_one) if needs_members else send_one


# Rules that only send (bound here rather than written out one by one)
for _name, _strategy, _members in (
        ("describe_configs", s.describe_configs, False), ("alter_configs", s.alter_configs, False),
        ("incremental_alter_configs", s.incremental_alter_configs, False),
        ("fetch", s.fetch, False), ("list_offsets", s.list_offsets, False),
        ("offset_for_leader_epoch", s.leader_epochs, False),
        ("describe_groups", s.describe_groups, False), ("list_groups", s.list_groups, False),
        ("find_coordinator", s.find_coordinator, False), ("offset_commit", s.offset_commit, False),
        ("offset_fetch", s.offset_fetch, False), ("malformed", s.malformed, False),
        ("sync_group", s.sync_group, True), ("heartbeat", s.heartbeat, True),
        ("delete_records", s.delete_records, False),
        ("describe_log_dirs", s.describe_log_dirs, False),
        ("describe_cluster", s.describe_cluster, False),
        ("describe_topic_partitions", s.describe_topic_partitions, False)):
    setattr(DifferentialMachine, _name, _sends(_strategy, _members))


def _without_indexes(path: str) -> str:
    import re

    return re.sub(r"\[\d+\]", "[]", path)


def walk(machine: type[DifferentialMachine], settings) -> Tally:
    """Run the machine under settings: its Tally when every step compared equal; Diverged
    (after shrinking) or CouldNotCompare otherwise."""
    from hypothesis.stateful import run_state_machine_as_test

    try:
        run_state_machine_as_test(machine, settings=settings)
    except StopWalk as stop:
        raise CouldNotCompare(str(stop)) from None
    return machine.tally


def differential_machine(endpoints: Callable[[], tuple[Endpoint, Endpoint]], tally: Tally,
                         transcript_dir: str | None = None) -> type[DifferentialMachine]:
    """The machine bound to its two systems under test: endpoints() returns (Apache Kafka,
    kafkaref), started and warmed up (warm_up)."""
    attributes = {"endpoints": staticmethod(endpoints), "tally": tally, "runs": 0}
    if transcript_dir is not None:
        attributes["transcript_dir"] = transcript_dir
    return type("DifferentialWalk", (DifferentialMachine,), attributes)
