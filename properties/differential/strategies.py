"""Hypothesis strategies for the differential machine's steps (steps.py), one per step kind.

Each takes the API versions both brokers advertise and `World`, what the run believes exists
(its topics and their partitions and log ends, producers and their sequences, groups and
members), so steps are mostly sensible -- known topics, offsets near the log end, the next
sequence -- and sometimes not: unknown and invalid names, offsets out of range, duplicated and
out-of-order sequences, fenced epochs, corrupt batches, oversize records, versions out of range.
Values are drawn from small lists of the interesting ones (boundaries, defaults, just past them)
rather than from whole integer ranges: two brokers agree or not on the boundaries.
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from kafkaref.properties.differential.frames import MALFORMED
from kafkaref.properties.differential.kept import generated
from kafkaref.properties.differential.steps import LITERAL, LONG, Step

NOW_FREE_TIMESTAMPS = (1_000, 1_001, 5_000)  # far from now: never "wall clock" (normalise.py)
FUTURE_MS = 4_102_444_800_000  # 2100: past Kafka's message.timestamp.after.max.ms
FUTURE = (FUTURE_MS,)
# 2: a level Kafka does not know (IsolationLevel.forId throws): the request fails whole
ISOLATION_LEVELS = st.sampled_from((0, 1, 0, 1, 2))
# (session id, epoch): none, a full fetch (asking for a session), one continuing a session
SESSIONS = st.sampled_from(((0, -1), (0, -1), (0, -1), (7, 1))
                          + (((0, 0),) if generated("fetch-sessions") else ()))
CODECS = (0, 0, 1, 2, 3, 4) + ((6,) if generated("unknown-codec") else ())
# IncrementalAlterConfigs: SET (twice as likely), DELETE, APPEND, SUBTRACT, an unknown one
OPERATIONS = (0, 0, 1, 2, 3) + ((7,) if generated("unknown-config-operation") else ())
INVALID_NAMES = (LITERAL + "bad/name", LITERAL + "", LITERAL + ".", LITERAL + "..",
                 LITERAL + "spa ce", LONG + "250")
# Topic configs and values: valid, invalid, unknown names (what CreateTopics/AlterConfigs see)
CONFIG_VALUES = {
    "cleanup.policy": ["delete", "compact", "delete,compact", "bogus"],
    "compression.type": ["producer", "gzip", "zstd", "uncompressed", "none", "bogus"],
    "max.message.bytes": ["200", "1048588", "0", "-1", "x"],
    "message.timestamp.type": ["CreateTime", "LogAppendTime", "bogus"],
    "min.insync.replicas": ["1", "2", "0", "x"],
    "retention.ms": ["604800000", "-1", "-2", "x"],
    "retention.bytes": ["-1", "1048576"],
    "segment.bytes": ["1073741824", "1048576", "1024", "x"],
    "segment.ms": ["604800000", "0"],
    "message.timestamp.after.max.ms": ["3600000", "9223372036854775807", "-1"],
    "message.timestamp.before.max.ms": ["9223372036854775807", "1000"],
    "unclean.leader.election.enable": ["false", "true", "maybe"],
    "no.such.config": ["1"],
    "message.format.version": ["3.0-IV1"],
}
DESCRIBED_KEYS = sorted(CONFIG_VALUES) + ["message.downconversion.enable", "preallocate",
                                          "remote.storage.enable", "compression.gzip.level"]
BROKER_KEYS = ["num.partitions", "default.replication.factor", "min.insync.replicas",
               "auto.create.topics.enable", "message.max.bytes", "log.retention.hours",
               "no.such.config"]


@attrs.define
class Producer:
    epoch: int = 0
    sequences: dict = attrs.Factory(dict)  # (topic, partition) -> next sequence
    last: dict = attrs.Factory(dict)  # (topic, partition) -> (sequence, record count)


@attrs.define
class World:
    """What the run believes exists, from the answers (both brokers agreed on them)."""

    topics: dict[str, int] = attrs.Factory(dict)  # symbol -> partition count
    log_ends: dict = attrs.Factory(dict)  # (topic, partition) -> next offset
    producers: dict[str, Producer] = attrs.Factory(dict)
    groups: set = attrs.Factory(set)
    members: dict[str, str] = attrs.Factory(dict)  # member symbol -> its group
    counters: dict[str, int] = attrs.Factory(dict)

    def fresh(self, letter: str) -> str:
        number = self.counters.get(letter, 0)
        self.counters[letter] = number + 1
        return f"{letter}{number}"

    def partitions(self) -> list[tuple[str, int]]:
        return [(t, p) for t, count in self.topics.items() for p in range(count)]


def version(versions: dict, api_key: int):
    low, high = versions[api_key]
    return st.integers(low, high)


def one_of_listed(values):
    return st.sampled_from(list(values))


# -- names ------------------------------------------------------------------------------------
def topic_name(world: World, fresh: bool = False):
    """A known topic mostly; an unknown one, an invalid one now and then."""
    choices = [st.just("fresh"), st.sampled_from(INVALID_NAMES)]
    if world.topics and not fresh:
        choices.insert(0, st.sampled_from(sorted(world.topics)))
    return st.one_of(*choices).map(lambda n: world.fresh("t") if n == "fresh" else n)


def partition_of(world: World):
    """(topic, partition): mostly one that exists, sometimes past the last or unknown."""
    known = world.partitions()
    outside = st.tuples(topic_name(world), st.sampled_from([0, 1, 7]))
    return st.one_of(st.sampled_from(known), outside) if known else outside


def partition_list(world: World, entry, max_size: int = 3):
    """A list of [topic, partition, ...entry] with distinct (topic, partition) mostly."""
    return st.lists(st.tuples(partition_of(world), entry), min_size=1, max_size=max_size,
                    unique_by=lambda e: e[0]).map(
        lambda items: [[t, p, *rest] for (t, p), rest in items])


# -- the data plane ---------------------------------------------------------------------------
@st.composite
def produce(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 0))
    acks = draw(st.sampled_from([1, -1, 1, -1, 0]))
    targets = draw(st.lists(partition_of(world), min_size=1, max_size=3, unique=True))
    producer = draw(st.sampled_from([None, None, *sorted(world.producers)]))
    partitions = []
    for topic, partition in targets:
        count = draw(st.sampled_from([1, 1, 1, 2]))
        batches = [draw(batch(world, producer, (topic, partition))) for _ in range(count)]
        partitions.append([topic, partition, batches])
    return Step("produce", v, {"acks": acks, "timeout_ms": 5000, "partitions": partitions})


@st.composite
def batch(draw, world: World, producer: str | None, key) -> dict:
    count = draw(st.integers(1, 4))
    size = draw(st.sampled_from([3, 3, 10, 300, 2000]))
    stamp = draw(st.sampled_from([*NOW_FREE_TIMESTAMPS, *FUTURE]))
    records = [[draw(st.sampled_from([None, "k", "key-2"])), size, stamp + i] for i in range(count)]
    spec = {"records": records, "codec": draw(st.sampled_from(CODECS))}
    if draw(st.integers(0, 15)) == 0:
        spec["corrupt"] = True
    if draw(st.integers(0, 9)) == 0:
        spec["stamped"] = True  # the LogAppendTime bit, set by the producer
    if producer is not None:
        spec.update(producer=producer, **draw(idempotence(world.producers[producer], key, count)))
    return spec


@st.composite
def idempotence(draw, state: Producer, key, count: int) -> dict:
    """Epoch and sequence for an idempotent batch: the next one mostly; a duplicate of the last,
    a gap, a bumped epoch, a fenced (older) epoch."""
    next_sequence = state.sequences.get(key, 0)
    how = draw(st.sampled_from(["next", "next", "next", "duplicate", "gap", "bump", "fenced"]))
    if how == "duplicate" and key in state.last:
        sequence, _ = state.last[key]
        return {"epoch": state.epoch, "sequence": sequence}
    if how == "gap":
        return {"epoch": state.epoch, "sequence": next_sequence + 2}
    if how == "bump":
        return {"epoch": state.epoch + 1, "sequence": 0}
    if how == "fenced":
        return {"epoch": state.epoch - 1, "sequence": next_sequence}
    return {"epoch": state.epoch, "sequence": next_sequence}


def offset_near(world: World, key):
    end = world.log_ends.get(key, 0)
    return st.sampled_from(sorted({0, max(0, end - 1), end, end + 1, 1_000_000, -1}))


FETCH_BY_TOPIC_ID = 13  # Fetch names topics by id from v13 (KIP-516)


@st.composite
def fetch(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 1))
    entries = draw(st.lists(partition_of(world), min_size=1, max_size=3, unique=True))
    if v >= FETCH_BY_TOPIC_ID and not generated("fetch-unknown-topic-id"):
        unknown = [e for e in entries if e[0] not in world.topics]
        if unknown:  # alone, or beside partitions that exist
            entries = [e for e in entries if e[1] < world.topics.get(e[0], 0)] + unknown[:1]
    partitions = [[t, p, draw(offset_near(world, (t, p))),
                   draw(st.sampled_from([1_048_576, 1_048_576, 100, 1, -1])),
                   draw(st.sampled_from([-1, -1, 0, 1]))] for t, p in entries]
    waits = draw(st.sampled_from([(0, 1), (0, 1), (100, 1), (200, 1_000_000)]))
    return Step("fetch", v, {"max_wait_ms": waits[0], "min_bytes": waits[1],
                             "max_bytes": draw(st.sampled_from([52_428_800, 52_428_800, 200, 1, -1])),
                             "session": draw(SESSIONS),
                             "isolation": draw(ISOLATION_LEVELS),
                             "partitions": partitions})


@st.composite
def list_offsets(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 2))
    special = [-1, -2] + ([-3] if v >= 7 else []) + ([-4] if v >= 8 else [])
    stamp = st.sampled_from([*special, -3, -7, 999, 1_000, 1_002, 5_000, FUTURE_MS])
    entries = draw(partition_list(world, st.tuples(stamp, st.sampled_from([-1, -1, 0, 3]))))
    if draw(st.integers(0, 9)) == 0:
        entries.append(list(entries[0]))  # a partition asked twice
    return Step("list_offsets", v, {"isolation": draw(ISOLATION_LEVELS),
                                    "partitions": entries})


@st.composite
def leader_epochs(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 23))
    entries = draw(partition_list(world, st.tuples(st.sampled_from([-1, 0, 0, 1, 2]),
                                                   st.sampled_from([-1, -1, 0, 3]))))
    return Step("offset_for_leader_epoch", v, {"partitions": entries})


@st.composite
def delete_records(draw, versions: dict, world: World) -> Step:
    """Log starts moved up to an offset: below, at and past the log end, -1 the hw."""
    v = draw(version(versions, 21))
    entries = draw(partition_list(world, st.tuples(st.sampled_from([-1, 0, 1, 2, 5, 1_000_000,
                                                                    -2]))))
    return Step("delete_records", v, {"partitions": entries, "timeout_ms": 5000})


@st.composite
def describe_log_dirs(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 35))
    everything = draw(st.integers(0, 3)) == 0  # null topics: every partition of the broker
    entries = None if everything else draw(partition_list(world, st.just(())))
    return Step("describe_log_dirs", v, {"partitions": entries})


def init_producer(versions: dict, world: World):
    return version(versions, 22).map(
        lambda v: Step("init_producer_id", v, {"producer": world.fresh("p")}))


# -- topics and configs -----------------------------------------------------------------------
METADATA_AUTO_CREATE_FLAG = 4  # the first Metadata version with allow_auto_topic_creation


METADATA_ALL_TOPICS_FROM = 1  # Metadata v0's empty list meant "every topic"; null since v1


@st.composite
def metadata(draw, versions: dict, world: World, nodes: int = 1) -> Step:
    v = draw(version(versions, 3))
    everything = draw(st.integers(0, 5)) == 0
    topics = None if everything else draw(st.lists(topic_name(world), min_size=1, max_size=3,
                                                   unique=True))
    # before v4 there is no flag: every Metadata may create the topics it names
    auto_create = v < METADATA_AUTO_CREATE_FLAG or draw(st.booleans())
    if auto_create and not default_replication(nodes):
        topics = [t for t in topics or [] if t in world.topics or t.startswith(LITERAL)] or (
            None if v >= METADATA_ALL_TOPICS_FROM else [])
    return Step("metadata", v, {"topics": topics, "auto_create": auto_create})


@st.composite
def describe_cluster(draw, versions: dict, world: World) -> Step:
    return Step("describe_cluster", draw(version(versions, 60)), {
        "endpoint_type": draw(st.sampled_from([1, 1, 2, 3])), "fenced": draw(st.booleans())})


@st.composite
def describe_topic_partitions(draw, versions: dict, world: World) -> Step:
    """Topics by name with a partition limit and sometimes a cursor (KIP-966's paging)."""
    named = topic_name(world)
    if not generated("describe-topic-partitions-empty-name"):
        named = named.filter(lambda name: name != LITERAL)
    topics = draw(st.lists(named, min_size=1, max_size=3, unique=True))
    args = {"topics": topics, "limit": draw(st.sampled_from([2000, 2000, 1, 2]))}
    if draw(st.integers(0, 3)) == 0:
        args["cursor"] = [draw(st.sampled_from(topics)), draw(st.sampled_from([0, 1, 5]))]
    return Step("describe_topic_partitions", draw(version(versions, 75)), args)


def default_replication(nodes: int) -> bool:
    """Whether the walk may leave a topic's replication factor to the broker's default
    (CreateTopics rf -1, auto-creation): not on several nodes ("default-replication-factor")."""
    return nodes == 1 or generated("default-replication-factor")


@st.composite
def topic_configs(draw) -> dict:
    names = draw(st.lists(st.sampled_from(sorted(CONFIG_VALUES)), max_size=2, unique=True))
    return {n: draw(st.sampled_from(CONFIG_VALUES[n])) for n in names}


@st.composite
def create_topics(draw, versions: dict, world: World, nodes: int) -> Step:
    v = draw(version(versions, 19))
    topics = []
    for name in draw(st.lists(topic_name(world, fresh=draw(st.booleans())), min_size=1,
                              max_size=3)):
        partitions = draw(st.sampled_from([1, 2, 3, 1, -1, 0, -2]))
        topic = {"name": name, "partitions": partitions,
                 "rf": draw(st.sampled_from([nodes, nodes, 0, nodes + 1] + (
                     [-1] if default_replication(nodes) else []))),
                 "configs": draw(topic_configs())}
        if draw(st.integers(0, 7)) == 0 and nodes == 1:  # a replica assignment instead
            topic.update(partitions=-1, rf=-1, assignments=draw(st.sampled_from(
                [[["n0"]], [["n0"], ["n0"]], [["n0", "n0"]], [["n9"]], [[]]])))
        topics.append(topic)
    return Step("create_topics", v, {"topics": topics, "timeout_ms": 10_000,
                                     "validate_only": draw(st.integers(0, 5)) == 0})


@st.composite
def delete_topics(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 20))
    return Step("delete_topics", v, {"topics": draw(st.lists(topic_name(world), min_size=1,
                                                             max_size=2)), "timeout_ms": 10_000})


@st.composite
def create_partitions(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 37))
    name = draw(topic_name(world))
    current = world.topics.get(name, 1)
    count = draw(st.sampled_from([current + 1, current + 2, current, current - 1]))
    topic = {"name": name, "count": count, "assignments": None}
    if draw(st.integers(0, 5)) == 0:
        topic["assignments"] = draw(st.sampled_from(
            [[["n0"]] * max(0, count - current), [["n9"]], [["n0", "n0"]]]))
    return Step("create_partitions", v, {"topics": [topic], "timeout_ms": 10_000,
                                         "validate_only": draw(st.integers(0, 4)) == 0})


def config_resource(world: World, brokers: bool = True):
    """(resource type, name): a topic mostly; a broker (this node, the cluster default, no
    such node) when `brokers`; a type that has no configs (0, 3)."""
    topic = st.tuples(st.just(2), topic_name(world))
    nodes = ["n7"] + (["n0", "n0", ""] if generated("broker-configs") else [])
    broker = st.tuples(st.just(4), st.sampled_from(nodes))
    types = [0, 3] + ([8] if brokers and generated("broker-logger-configs") else [])
    other = st.tuples(st.sampled_from(types), st.just("x"))
    return st.one_of(topic, topic, broker, other) if brokers else st.one_of(topic, topic, other)


def alter_resources(world: World):
    """Resources to alter: never a broker (kafkaref has no dynamic broker configs, a kept
    difference: docs/divergences.md) and never one twice (Apache Kafka 4.3.1 does not answer
    an AlterConfigs naming a resource twice, or two of unknown types under one name:
    docs/divergences.md)."""
    return st.lists(config_resource(world, brokers=False), min_size=1, max_size=2,
                    unique_by=lambda r: (r[0] if r[0] in (2, 4, 8) else "unknown type", r[1]))


@st.composite
def describe_configs(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 32))
    resources = []
    for kind, name in draw(st.lists(config_resource(world), min_size=1, max_size=2)):
        catalogue = BROKER_KEYS if kind == 4 else DESCRIBED_KEYS
        keys = draw(st.one_of(st.none(), st.lists(st.sampled_from(catalogue), min_size=1,
                                                  max_size=3, unique=True)))
        resources.append([kind, name, keys])
    documentation = generated("config-documentation") and draw(st.booleans())
    return Step("describe_configs", v, {"resources": resources, "synonyms": draw(st.booleans()),
                                        "documentation": documentation})


@st.composite
def alter_configs(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 33))
    resources = [[kind, name, draw(topic_configs())] for kind, name in draw(alter_resources(world))]
    return Step("alter_configs", v, {"resources": resources,
                                     "validate_only": draw(st.integers(0, 4)) == 0})


@st.composite
def incremental_alter_configs(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 44))
    resources = []
    for kind, name in draw(alter_resources(world)):
        ops = []
        for config, value in draw(topic_configs()).items():
            op = draw(st.sampled_from(OPERATIONS))
            ops.append([config, op, None if op == 1 else value])
        resources.append([kind, name, ops])
    return Step("incremental_alter_configs", v, {"resources": resources,
                                                 "validate_only": draw(st.integers(0, 4)) == 0})


# -- groups -----------------------------------------------------------------------------------
def group_name(world: World):
    known = sorted(world.groups)
    fresh = st.just("fresh").map(lambda _: world.fresh("g"))
    return st.one_of(st.sampled_from(known), fresh) if known else fresh


@st.composite
def find_coordinator(draw, versions: dict, world: World) -> Step:
    return Step("find_coordinator", draw(version(versions, 10)), {"group": draw(group_name(world))})


def memberless_group(world: World):
    """A group no member of the run is in: a fresh one, or one whose members all left."""
    taken = set(world.members.values())
    free = sorted(world.groups - taken)
    fresh = st.just("fresh").map(lambda _: world.fresh("g"))
    return st.one_of(st.sampled_from(free), fresh) if free else fresh


@st.composite
def join_group(draw, versions: dict, world: World) -> Step:
    """A new member of a group no one is in, or a known member joining again with its id. One
    member per group: a second one's JoinGroup waits in the broker until the first rejoins or a
    rebalance timeout passes, timers the walk does not compare."""
    v = draw(version(versions, 11))
    known = sorted(world.members)
    if known and draw(st.booleans()):
        member = draw(st.sampled_from(known))
        group, known_id = world.members[member], True
    else:
        member, group, known_id = world.fresh("m"), draw(memberless_group(world)), False
    protocol_type = draw(st.sampled_from(["consumer", "consumer", "other"]))
    protocols = draw(st.sampled_from([[["range", "00"]], [["range", "00"], ["rr", "01"]],
                                      [["rr", "0102"]]]))
    return Step("join_group", v, {
        "member": member, "group": group, "known_id": known_id,
        "session_timeout_ms": draw(st.sampled_from([30_000, 30_000, 10, 4_000_000])),
        "rebalance_timeout_ms": 10_000, "protocol_type": protocol_type, "protocols": protocols})


def member_step(kind: str, api_key: int, extra):
    """A step of a known member of a group; extra(member) draws the rest of its arguments."""
    @st.composite
    def strategy(draw, versions: dict, world: World) -> Step:
        member = draw(st.sampled_from(sorted(world.members)))
        args = {"member": member, "group": world.members[member], **draw(extra(member))}
        return Step(kind, draw(version(versions, api_key)), args)
    return strategy


def _generation():
    return st.sampled_from(["current", "current", "current", 0, 99])


sync_group = member_step("sync_group", 14, lambda member: st.fixed_dictionaries({
    "generation": _generation(),
    "assignments": st.sampled_from([[], [[member, "0001"]]])}))
heartbeat = member_step("heartbeat", 12, lambda member: st.fixed_dictionaries({
    "generation": _generation()}))
leave_group = member_step("leave_group", 13, lambda member: st.just({}))


@st.composite
def describe_groups(draw, versions: dict, world: World) -> Step:
    """One group: each is answered by its own coordinator, which another group may not share
    on several nodes (an admin client asks each coordinator for its groups)."""
    return Step("describe_groups", draw(version(versions, 15)), {"groups": [draw(group_name(world))]})


def list_groups(versions: dict, world: World):
    return version(versions, 16).map(lambda v: Step("list_groups", v, {}))


@st.composite
def offset_commit(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 8))
    members = sorted(world.members)
    if members and draw(st.booleans()):
        member = draw(st.sampled_from(members))
        group, generation = world.members[member], draw(_generation())
    else:
        member, group, generation = None, draw(group_name(world)), draw(st.sampled_from([-1, 1]))
    entries = draw(partition_list(world, st.tuples(st.sampled_from([0, 1, 5, -1, 1_000_000]),
                                                   st.sampled_from(["", "meta"]))))
    return Step("offset_commit", v, {"group": group, "member": member,
                                     "generation": generation, "partitions": entries})


@st.composite
def offset_fetch(draw, versions: dict, world: World) -> Step:
    v = draw(version(versions, 9))
    everything = draw(st.booleans())  # null topics: all the group's offsets from v2, closed before
    entries = None if everything else draw(partition_list(world, st.just(())))
    return Step("offset_fetch", v, {"group": draw(group_name(world)), "partitions": entries})


# -- the protocol itself ----------------------------------------------------------------------
@st.composite
def api_versions(draw, versions: dict, advertised: list[dict]) -> Step:
    low, high = versions[18]
    beyond = max(a[18][1] for a in advertised) + 1
    v = draw(st.one_of(st.integers(low, high), st.sampled_from([beyond, 127, -1])))
    return Step("api_versions", v, {})


def malformed(versions: dict, world: World):
    return st.sampled_from(sorted(MALFORMED)).map(lambda f: Step("malformed", 0, {"frame": f}))
