"""Scenario transcripts: one small text file per catalogued bug (properties/scenarios/), replayed
against the model, the core or the spec explorer, with the expected output kept in the file.

The format is etcd raft's datadriven one: a command line, `----`, the output it must print, a
blank line. Lines starting with # are comments. Running a transcript executes every command
and compares outputs; with KAFKAREF_REWRITE=1 (or `rewrite=True`) the file is written back with
the outputs the code printed, so a behaviour change is reviewed as a `git diff`.

    # M14: the leader epoch is not bumped on a leader change
    core brokers=3
    ----
    ok

    produce 0 acks=1 count=1
    ----
    produce [0] to 0 acks=1 -> none at 0

    rerun mutants=M14
    ----
    ...the steps whose output changes with the mutant, and the violated invariants

Targets (the first command of a block of commands picks one; a file may use several):
- `core brokers=N [min_insync=N] [lag_ms=N] [mutants=M5,...]`: a CoreCluster (impl/core
  brokers, the controller's logic, MemoryLogs), driven by its own operations;
- `model [brokers=N] [min_insync=N] [bugs=truncate-to-hw,...]`: the ReferenceModel (model/);
- `log [segment_bytes=N] [index_interval_bytes=N] [mutants=M6,...]`: one impl/storage Log;
- `broker [mutants=M9,...]`: `check NAME` runs a threaded-broker check (broker_checks.py);
- `explore variant=V replicas=N invariant=I`: the spec explorer's shortest counterexample;
- `model-explore bugs=B replicas=N ... [invariant=I]`: the model explorer's (model/
  explore_target.py options), for the model's bug variants.
`rerun mutants=...` / `rerun bugs=...` replays the commands since the target was created on a
fresh one with the faults switched on and prints what changed and what is violated.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

SCENARIOS = os.path.join(os.path.dirname(__file__), "scenarios")
SEPARATOR = "----"


@attrs.frozen
class Block:
    command: str
    expected: str
    line: int


def parse(text: str) -> tuple[list[str], list[Block]]:
    """(leading comment lines, blocks)."""
    lines = text.splitlines()
    header, blocks, i = [], [], 0
    while i < len(lines) and (lines[i].startswith("#") or not lines[i].strip()):
        header.append(lines[i])
        i += 1
    while i < len(lines):
        if not lines[i].strip() or lines[i].startswith("#"):
            i += 1
            continue
        command, start = lines[i].strip(), i + 1
        i += 1
        if i >= len(lines) or lines[i].strip() != SEPARATOR:
            raise ValueError(f"line {i + 1}: expected {SEPARATOR} after {command!r}")
        i += 1
        out = []
        while i < len(lines) and lines[i].strip():
            out.append(lines[i])
            i += 1
        blocks.append(Block(command, "\n".join(out), start))
    while header and not header[-1].strip():
        header.pop()
    return header, blocks


def format_file(header: list[str], blocks: list[tuple[str, str]]) -> str:
    parts = ["\n".join(header)] if header else []
    parts += [f"{command}\n{SEPARATOR}\n{output}" for command, output in blocks]
    return "\n\n".join(parts) + "\n"


def _args(words: list[str]) -> tuple[list[str], dict[str, str]]:
    positional = [w for w in words if "=" not in w]
    named = dict(w.split("=", 1) for w in words if "=" in w)
    return positional, named


# -- the core target ----------------------------------------------------------------------------
class CoreTarget:
    def __init__(self, named: dict[str, str]):
        from kafkaref.properties.core_machine import CoreCluster

        self.named = named
        mutants = named.get("mutants", "")
        self.cluster = CoreCluster(
            brokers=int(named.get("brokers", 3)),
            min_insync_replicas=int(named.get("min_insync", 2)),
            replica_lag_time_max_ms=int(named.get("lag_ms", 1000)),
            partition_mutants=mutants, controller_mutants=mutants)
        self.notes: list[str] = []
        self.fetches = iter(range(1, 1 << 30))

    def run(self, positional: list[str], named: dict[str, str]) -> str:
        from kafkaref.properties import core_machine

        name, args = positional[0], [int(a) for a in positional[1:]]
        c = self.cluster
        self.notes = []
        previous, core_machine.note = core_machine.note, self.notes.append
        try:
            result = self._dispatch(c, name, args, named)
        finally:
            core_machine.note = previous
        return "\n".join([*self.notes, *([result] if result else [])]) or "ok"

    def _dispatch(self, c, name, args, named) -> str | None:
        if name == "produce":
            c.produce(args[0], int(named.get("acks", -1)), int(named.get("count", 1)),
                      idempotent=named.get("idempotent") == "true")
            return None
        if name == "replicate":
            return c.replicate(args[0], int(named.get("max_bytes", 1 << 20)),
                               drop=named.get("drop") == "true")
        if name == "consumer-fetch":
            c.consumer_fetch(args[0], int(named.get("offset", 0)))
            return f"read {dict(sorted(c.read.items()))}"
        if name == "fetch":
            self._fetch(args[0], int(named.get("offset", 0)), int(named.get("min_bytes", 1)),
                        int(named.get("max_wait_ms", 0)))
            return None
        if name == "commit-isr":
            if not c.proposals:
                return "no ISR change in flight"
            c.commit_isr_change()
            return None
        simple = {"propagate": c.propagate, "elect": c.elect, "crash": c.crash,
                  "restart": c.restart, "tick": c.tick}
        if name in simple:
            simple[name](args[0])
            return None
        if name == "state":
            return self.state()
        if name == "violations":
            return violations_text(self.violations())
        raise ValueError(f"unknown core command {name!r}")

    def _fetch(self, b: int, offset: int, min_bytes: int, max_wait_ms: int) -> None:
        """A consumer fetch that may wait in purgatory; its answer is noted when it comes."""
        from kafkaref.impl.core.delayed import FetchPartition
        from kafkaref.properties import core_machine

        clock = self.cluster.clock
        sent_ms, number = clock.now_ms, next(self.fetches)

        def done(results):
            r = results[core_machine.KEY]
            core_machine.note(f"fetch #{number} answered after {clock.now_ms - sent_ms} ms: "
                              f"{r.error.name} hw {r.high_watermark} {len(r.records)} bytes")

        self.cluster.brokers[b].replica_manager.fetch(
            -1, max_wait_ms, min_bytes, 1 << 20, {core_machine.KEY: FetchPartition(offset)},
            done)

    def state(self) -> str:
        from kafkaref.properties.core_machine import ATTEMPTS_MAX

        c, lines = self.cluster, []
        q = c.quorum
        lines.append(f"controller: leader {q.leader} epoch {q.leader_epoch} isr {list(q.isr)}")
        for b in sorted(c.brokers):
            p = c.partition(b)
            if p is None:
                lines.append(f"b{b} DOWN")
                continue
            ids = [r.id // ATTEMPTS_MAX for r in c.record_ids(b)]
            role = "leader" if p.is_leader else f"follows {p.leader_id}"
            lines.append(f"b{b} {role} epoch {p.leader_epoch} leo {p.log_end_offset} "
                         f"hw {p.high_watermark} log {ids}"
                         + (f" isr {sorted(p.isr)}" if p.is_leader else ""))
        lines.append(f"acked {dict(sorted(c.acked.items()))}")
        return "\n".join(lines)

    def violations(self) -> list[str]:
        from kafkaref.properties.core_machine import CoreMachine

        machine = CoreMachine(lambda: self.cluster)
        broken = []
        for check in (machine.spec_invariants_hold,
                      machine.client_properties_hold,
                      machine.no_record_committed_twice):
            try:
                check()
            except AssertionError as exc:
                why = str(exc).splitlines()[0].split(" in State(")[0][:100]
                broken.append(f"{check.__name__}: {why}")
        return broken


def violations_text(broken: list[str]) -> str:
    return "violations: none" if not broken else "violations:\n" + "\n".join(
        f"  {b}" for b in broken)


# -- the model target ---------------------------------------------------------------------------
class ModelTarget:
    def __init__(self, named: dict[str, str]):
        from kafkaref.model.api import ReferenceModel
        from kafkaref.model.config import Bug, ClusterConfig

        self.named = named
        bugs = frozenset(Bug(b) for b in named.get("bugs", "").split(",") if b)
        brokers = int(named.get("brokers", 3))
        self.model = ReferenceModel(ClusterConfig(
            brokers=brokers, replication_factor=int(named.get("rf", brokers)),
            min_insync_replicas=int(named.get("min_insync", 2)),
            unclean_leader_election=named.get("unclean") == "true", bugs=bugs))
        self.request_ids = iter(range(1, 1 << 30))

    def run(self, positional: list[str], named: dict[str, str]) -> str:
        from kafkaref.model import events as ev

        name, args = positional[0], [int(a) for a in positional[1:]]
        m = self.model
        if name == "produce":
            values = tuple(v.encode() for v in named.get("values", "a").split(","))
            effects = m.feed(ev.Produce(next(self.request_ids), args[0], 0, values,
                                        acks=int(named.get("acks", -1)),
                                        timeout_ms=int(named.get("timeout_ms", 30_000))))
        elif name == "fetch":
            effects = m.feed(ev.Fetch(next(self.request_ids), args[0], 0,
                                      int(named.get("offset", 0)),
                                      min_bytes=int(named.get("min_bytes", 1)),
                                      max_wait_ms=int(named.get("max_wait_ms", 0))))
        elif name == "replicate":
            effects = m.replicate(args[0])
        elif name == "state":
            return m.render()
        elif name == "check":
            verdict = "violated: " + (", ".join(m.check()) or "none")
            if m.ghost.unclean:  # loss is allowed there, and must be reported as such
                verdict += (f"\nunclean election on partitions {sorted(m.ghost.unclean)}: "
                            "acknowledged records may be lost by design")
            return verdict
        else:
            event = {"tick": lambda: ev.Tick(args[0]), "crash": lambda: ev.CrashBroker(args[0]),
                     "restart": lambda: ev.RestartBroker(args[0]),
                     "elect": lambda: ev.Elect(0, args[0], named.get("unclean") == "true"),
                     "commit-isr": lambda: ev.CommitIsrChange(0),
                     "flush": lambda: ev.Flush(args[0])}.get(name)
            if event is None:
                raise ValueError(f"unknown model command {name!r}")
            effects = m.feed(event())
        return "\n".join(effect_text(e) for e in effects) or "ok"


def effect_text(effect) -> str:
    """An effect as `Name field=value ...`, leaving out fields at their defaults."""
    fields = []
    for field in attrs.fields(type(effect)):
        value = getattr(effect, field.name)
        if field.default is not attrs.NOTHING and value == field.default:
            continue
        if isinstance(value, ErrorCode):
            value = value.name
        elif isinstance(value, frozenset):
            value = sorted(value)
        elif isinstance(value, tuple) and value and hasattr(value[0], "id"):
            value = [f"r{e.id}/e{e.epoch}" for e in value]
        fields.append(f"{field.name}={value}")
    return f"{type(effect).__name__} " + " ".join(fields)


# -- the storage target -------------------------------------------------------------------------
class LogTarget:
    """One impl/storage Log in a scratch directory (removed with the target)."""

    def __init__(self, named: dict[str, str]):
        import tempfile

        from kafkaref.impl.storage.config import LogConfig

        self.named = named
        self.scratch = tempfile.TemporaryDirectory(prefix="kafkaref-transcript-")
        self.config = LogConfig(
            segment_bytes=int(named.get("segment_bytes", 1 << 20)),
            index_interval_bytes=int(named.get("index_interval_bytes", 4096)),
            retention_ms=-1, mutants=named.get("mutants", ""))
        self.now_ms = 0
        self.log = self._open()

    def _open(self):
        from kafkaref.impl.storage.log import Log

        return Log(self.scratch.name, self.config, lambda: self.now_ms)

    def run(self, positional: list[str], named: dict[str, str]) -> str:
        from kafkaref.impl.protocol.records import build_batch

        name, log = positional[0], self.log
        if name in ("append", "append-corrupt"):
            count, size = int(named.get("count", 1)), int(named.get("value_bytes", 10))
            batch = bytearray(build_batch([(None, b"v" * size, (), 1000)] * count))
            if name == "append-corrupt":
                batch[len(batch) - 1] ^= 1  # a bit of the last record: covered by the CRC
            info = log.append_as_leader(bytes(batch), 0)
            if info.error != ErrorCode.none:
                return f"refused: {info.error.name}"
            return f"appended {info.first_offset}-{info.last_offset}"
        if name == "read":
            data = log.read(int(named.get("offset", 0)), int(named.get("max_bytes", 1 << 20)))
            return "batches " + (" ".join(_batch_ranges(data)) or "none")
        if name == "roll":
            log.roll()
            return "ok"
        if name == "crash":
            return self._crash(int(named.get("cut", 0)))
        if name in ("state", "check"):
            problems = log.verify()
            verdict = "problems: " + ("; ".join(p.split("/")[-1] for p in problems) or "none")
            if name == "check":
                return verdict
            bases = [s.base_offset for s in log.segments]
            return f"leo {log.log_end_offset} segments at {bases}\n{verdict}"
        raise ValueError(f"unknown log command {name!r}")

    def _crash(self, cut: int) -> str:
        """Process crash, then `cut` bytes torn off the newest segment (a write cut short by a
        power loss), then recovery on reopening."""
        import os

        durable = self.log.crash()
        newest = max(durable, key=lambda path: os.path.basename(path))
        if cut:
            os.truncate(newest, max(0, os.path.getsize(newest) - cut))
        self.log = self._open()
        return f"recovered: leo {self.log.log_end_offset}"


def _batch_ranges(data: bytes) -> list[str]:
    from kafkaref.impl.protocol.records import parse_header, split_batches

    _, views = split_batches(data)
    return [f"{h.base_offset}-{h.last_offset}" for h in map(parse_header, views)]


# -- the threaded broker target -----------------------------------------------------------------
class BrokerTarget:
    """Client-level checks of threaded brokers (properties/broker_checks.py) by name."""

    def __init__(self, named: dict[str, str]):
        from kafkaref.impl.mutants import parse_mutants

        self.named = named
        self.mutants = parse_mutants(named.get("mutants", ""))

    def run(self, positional: list[str], named: dict[str, str]) -> str:
        from kafkaref.properties import broker_checks

        if positional[0] in ("state", "check") and len(positional) == 1:
            return ""  # the checks' own outputs are the state
        checks = {c.function.__name__.replace("_", "-"): c for c in broker_checks.CHECKS}
        if positional[0] != "check" or positional[1] not in checks:
            raise ValueError(f"broker commands: check {{{', '.join(sorted(checks))}}}")
        return checks[positional[1]].function(self.mutants) or "ok"


# -- the spec target ----------------------------------------------------------------------------
def explore_text(named: dict[str, str]) -> str:
    from kafkaref.spec.check import run_spec
    from kafkaref.spec.state import Bounds

    bounds = Bounds(int(named.get("replicas", 2)), log_size=int(named.get("log_size", 2)),
                    max_records=int(named.get("max_records", 2)),
                    max_epoch=int(named.get("max_epoch", 2)))
    return verdict_text(run_spec(named["variant"], bounds, (named["invariant"],)))


def verdict_text(result) -> str:
    """An exploration's verdict (spec/explore.py's result): "holds" or the shortest
    counterexample, one action a line."""
    if result.violation is None:
        return f"holds ({'complete' if result.complete else 'incomplete'})"
    trace = result.violation.trace
    lines = [f"{result.violation.invariant} violated after {len(trace)} states:"]
    lines += [f"  {step.action}" for step in trace[1:]]
    return "\n".join(lines)


def model_explore_text(named: dict[str, str]) -> str:
    """The model explorer's shortest counterexample for a bug variant (model/explore_target)."""
    from kafkaref.model.explore_target import build
    from kafkaref.spec.explore import explore

    options = {k: _option(v) for k, v in named.items() if k != "invariant"}
    starts, successors, invariants, describe = build(options)
    if "invariant" in named:
        invariants = {k: v for k, v in invariants.items() if k == named["invariant"]}
    return verdict_text(explore(starts, successors, invariants))


def _option(value: str):
    if value in ("true", "false"):
        return value == "true"
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    if re.fullmatch(r"\(-?\d+(,-?\d+)*\)", value):
        return tuple(int(v) for v in value.strip("()").split(","))
    return value


# -- running a file -----------------------------------------------------------------------------
TARGETS: dict[str, Callable[[dict[str, str]], object]] = {
    "core": CoreTarget, "model": ModelTarget, "log": LogTarget, "broker": BrokerTarget}


@attrs.frozen
class Mismatch:
    line: int
    command: str
    expected: str
    actual: str


def replay(path: str, rewrite: bool | None = None) -> list[Mismatch]:
    """Run a transcript; return the blocks whose output differs (after rewriting them, if asked:
    rewrite defaults to KAFKAREF_REWRITE=1)."""
    if rewrite is None:
        rewrite = os.environ.get("KAFKAREF_REWRITE") == "1"
    with open(path, encoding="utf-8") as f:
        header, blocks = parse(f.read())
    target, target_kind, history, outputs, mismatches = None, None, [], [], []
    for block in blocks:
        words = shlex.split(block.command)
        positional, named = _args(words)
        kind = positional[0] if positional else ""
        if kind in TARGETS:
            target, target_kind, history = TARGETS[kind](named), kind, []
            actual = "ok"
        elif kind == "explore":
            actual = explore_text(named)
        elif kind == "model-explore":
            actual = model_explore_text(named)
        elif kind == "rerun":
            actual = _rerun(target_kind, target, named, history)
        elif target is None:
            raise ValueError(f"{path}:{block.line}: {block.command!r} before a target")
        else:
            actual = target.run(positional, named)
            if kind not in ("state", "violations") and block.command != "check":
                history.append((block.command, actual))
        outputs.append((block.command, actual))
        if actual.strip() != block.expected.strip():
            mismatches.append(Mismatch(block.line, block.command, block.expected, actual))
    if rewrite and mismatches:
        with open(path, "w", encoding="utf-8") as f:
            f.write(format_file(header, outputs))
    return mismatches


def _rerun(kind: str | None, original, named: dict[str, str],
           history: list[tuple[str, str]]) -> str:
    """The history again on a fresh target with the faults of `named`: the outputs and final
    state lines that changed (- without, + with the faults), and what is violated."""
    if kind is None:
        raise ValueError("rerun before a target")
    target = TARGETS[kind]({**original.named, **named})
    lines = []
    for command, before in history:
        positional, args = _args(shlex.split(command))
        after = target.run(positional, args)
        if after != before:
            lines.append(f"{command}:")
            lines += [f"  - {line}" for line in before.splitlines()]
            lines += [f"  + {line}" for line in after.splitlines()]
    before, after = original.run(["state"], {}), target.run(["state"], {})
    if before != after:
        lines.append("final state:")
        old, new = before.splitlines(), after.splitlines()
        lines += [f"  - {line}" for line in old if line not in new]
        lines += [f"  + {line}" for line in new if line not in old]
    verdict = (violations_text(target.violations()) if kind == "core"
               else target.run(["check"], {}))
    lines = lines or ["nothing changed"]
    return "\n".join([*lines, verdict] if verdict else lines)


def is_slow(path: str) -> bool:
    """A transcript whose header says `# slow` (spec explorations at 3 replicas: ~1 min)."""
    with open(path, encoding="utf-8") as f:
        return any(line.strip() == "# slow" for line in parse(f.read())[0])


def scenario_files() -> list[str]:
    if not os.path.isdir(SCENARIOS):
        return []
    return sorted((os.path.join(SCENARIOS, n) for n in os.listdir(SCENARIOS)
                   if n.endswith(".txt")), key=_natural)


def _natural(path: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", os.path.basename(path))]
