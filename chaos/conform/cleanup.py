"""What a conformance run leaves on the broker under test, and taking it away again.

A vendor runs the suite against a shared staging cluster: every run creating ~30 topics and a
few consumer groups there, and leaving them, is not acceptable. Every topic and group a check
creates is named by Probe.name() (conform-<label>-<id>), and the run collects those names in a
Leftovers; at the end the runner deletes every one of them the broker still lists (DeleteTopics,
DeleteGroups), and those only: a name it did not hand out is never touched. The chaos check's
fixed probe topic is added when the run created it.
"""

from __future__ import annotations

import threading

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.probe import Probe

GONE = (ErrorCode.none, ErrorCode.unknown_topic_or_partition, ErrorCode.group_id_not_found)


class Leftovers:
    """The names of topics and groups a run created (thread-safe: checks run in threads)."""

    def __init__(self):
        self._names: set[str] = set()
        self._lock = threading.Lock()

    def add(self, name: str) -> None:
        with self._lock:
            self._names.add(name)

    @property
    def names(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._names)


@attrs.frozen
class Cleaned:
    """What clean_up() did: the topics and groups deleted, and what it could not delete (each
    a "name: why")."""

    topics: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    left: tuple[str, ...] = ()

    def describe(self) -> str:
        said = f"removed {len(self.topics)} topics and {len(self.groups)} groups"
        return said + (f"; left {len(self.left)}: {', '.join(self.left[:5])}" if self.left
                       else "")


def clean_up(probe: Probe, names: frozenset[str]) -> Cleaned:
    """Delete the topics and groups among names that the broker still lists."""
    topics = sorted(t.name for t in probe.metadata(None).topics if t.name in names)
    groups = sorted(set(_listed_groups(probe)) & names)
    left = []
    if topics:
        left += _delete_topics(probe, topics)
    if groups:
        left += _delete_groups(probe, groups)
    return Cleaned(tuple(t for t in topics if not _named(t, left)),
                   tuple(g for g in groups if not _named(g, left)), tuple(left))


def _named(name: str, left: list[str]) -> bool:
    return any(entry.startswith(f"{name}: ") for entry in left)


def _listed_groups(probe: Probe) -> list[str]:
    """Every group any broker coordinates (ListGroups answers only for its own)."""
    if not probe.supports(16):
        return []
    found = []
    for broker in probe.metadata([]).brokers:
        try:
            conn = probe.connect((broker.host, broker.port))
            found += [g.group_id for g in conn.call(16, {}).groups]
            conn.close()
        except OSError:
            continue  # a broker down: its groups are not listed, so not deleted either
    return found


def _delete_topics(probe: Probe, topics: list[str]) -> list[str]:
    conn = probe.connect()
    try:
        answer = conn.call(20, {"topic_names": topics, "timeout": int(probe.timeout_s * 1000)})
    finally:
        conn.close()
    return [f"{r.name}: {ErrorCode(int(r.error_code)).name}" for r in answer.responses
            if r.error_code not in GONE]


def _delete_groups(probe: Probe, groups: list[str]) -> list[str]:
    """DeleteGroups sent to each group's coordinator; a broker that does not advertise it keeps
    its groups (listed as left)."""
    if not probe.supports(42):
        return [f"{g}: the broker does not advertise DeleteGroups" for g in groups]
    left = []
    for group in groups:
        found = probe.find_coordinator({"key": group, "key_type": 0})
        coordinator = _coordinator_address(found, group)
        conn = probe.connect(coordinator)
        try:
            answer = conn.call(42, {"groups_names": [group]})
        finally:
            conn.close()
        left += [f"{r.group_id}: {ErrorCode(int(r.error_code)).name}" for r in answer.results
                 if r.error_code not in GONE]
    return left


def _coordinator_address(found, group: str) -> tuple[str, int]:
    """The coordinator FindCoordinator named (v4+: in its list of coordinators)."""
    for item in [found, *getattr(found, "coordinators", ())]:
        if getattr(item, "key", group) == group and getattr(item, "host", None):
            return item.host, item.port
    raise OSError(f"no coordinator found for group {group}")
