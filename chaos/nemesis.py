"""Faults on a cluster of broker processes, drawn from one seed and recorded as nemesis ops.

A schedule is a list of steps (when, which fault, against whom, for how long), drawn from the
seed before anything runs and printed first, so a run is reproduced from its seed. The nemesis
applies one step at a time and undoes it before the next: the undo (restart, resume, heal) is an
op of its own, so every fault is a window [start op, end op] in the history.

Fault kinds (Jepsen's names where they exist):

    kill        SIGKILL the target brokers, restart them after the duration
    pause       SIGSTOP, then SIGCONT
    partition   cut links of the proxy mesh (chaos/proxy.py): isolate a broker from the other
                brokers (or from them and the controller), split the brokers in two halves,
                cut clients from a broker, one-way cuts between brokers, or delay every link
    clock       jump a broker's clock (impl/clock.py SkewFile): its wall clock (record time,
                retention, segment.ms) forward or back by up to an hour, or its monotonic clock
                (timeouts, ISR lag, sessions) forward by up to a minute; undone by setting the
                wall clock back (a monotonic clock never goes back)
    lose-unfsynced  SIGKILL brokers that run in power-loss mode (impl/storage
                LogConfig.lose_unflushed_on_crash): what they had not fsynced is gone when they
                restart. With this kind in a run every broker runs in that mode, so every kill
                is a power loss. Outside the safety phase: a restarted broker still in the ISR
                can lead without what it lost (what Kafka's KIP-966 addresses)
    corrupt     SIGKILL a follower, flip bits in / truncate the tail of one of its segment
                files at rest, restart it (outside the safety phase: no replicated log
                survives every corruption of a replica that recovery cannot see)
    corrupt-net flip a bit in the last record's value of a share of the Produce requests
                crossing the client links (chaos/proxy.py corrupt_produce): the batch CRC must
                catch it (CORRUPT_MESSAGE), so acks=all survives it; not in the default kinds
                only so that the default schedules of a seed stay what they were

Targets: the leader of a partition, a follower of one, a random broker, a minority, or the
controller (it runs in the runner's process: it is stopped and a successor started from its
snapshot, the brokers' controller links retargeted to it). The safety
phase (the default kinds) injects only faults acks=all, RF 3, min ISR 2, unclean election off
must survive: one broker (a minority of 3) at a time, always healed before the next.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable

import attrs

from kafkaref.chaos.cluster import ProxiedCluster, client_link, controller_link, peer_link
from kafkaref.chaos.proxy import Fault
from kafkaref.chaos.recorder import Recorder
from kafkaref.impl.protocol.records.layout import LOG_OVERHEAD, peek_offset_and_size

SAFE_KINDS = ("kill", "pause", "partition")
ALL_KINDS = ("kill", "pause", "partition", "clock", "lose-unfsynced", "corrupt", "corrupt-net")
CORRUPT_SHARE = 0.3  # of the Produce requests crossing the client links during corrupt-net
# kill's hunting target: the leader killed after its followers' links were slowed for LAG_S
LAGGING_LEADER, LAG_DELAY_MS, LAG_S = "lagging-leader", 300, 1.0
TARGETS = {
    "kill": ("leader", "follower", "random", "minority", "controller"),
    "pause": ("leader", "follower", "random"),
    "partition": ("isolate", "isolate-all", "halves", "clients", "one-way", "delay"),
    "clock": ("wall-forward", "wall-back", "monotonic-forward"),
    "lose-unfsynced": ("leader", "follower", "random"),
    "corrupt": ("bitflip", "truncate"),
    "corrupt-net": ("produce",),
}


@attrs.frozen
class Step:
    at_s: float  # from the start of the fault phase
    kind: str
    target: str
    duration_s: float

    def describe(self) -> str:
        return f"t+{self.at_s:6.1f}s  {self.kind:<9} {self.target:<11} for {self.duration_s:.1f}s"


def parse_kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in ALL_KINDS]
    if unknown:
        raise ValueError(f"unknown nemesis kinds {unknown}; known: {', '.join(ALL_KINDS)}")
    return kinds


def draw_schedule(seed: int, kinds: tuple[str, ...], time_limit_s: float,
                  fault_s: tuple[float, float] = (2.0, 6.0),
                  quiet_s: tuple[float, float] = (1.5, 4.0)) -> list[Step]:
    """Steps drawn from seed alone: the same seed, kinds and limit give the same schedule."""
    rng = random.Random(f"nemesis:{seed}")
    steps: list[Step] = []
    at = rng.uniform(*quiet_s)
    while kinds:
        kind = rng.choice(kinds)
        duration = round(rng.uniform(*fault_s), 1)
        if at + duration > time_limit_s:
            break
        steps.append(Step(round(at, 1), kind, rng.choice(TARGETS[kind]), duration))
        at += duration + rng.uniform(*quiet_s)
    return steps


# The default hunting cycle: a leader cut from the other brokers and the controller (a deposed
# leader keeps answering clients), then a killed leader, then a paused follower.
HUNTING_CYCLE = (("partition", "isolate-all", 4.0), ("kill", "leader", 2.0),
                 ("pause", "follower", 3.0))


def hunting_schedule(time_limit_s: float, corrupt: bool = False,
                     cycle: tuple = HUNTING_CYCLE, gap_s: float = 2.0) -> list[Step]:
    """A fixed schedule for catching broker bugs fast: cycle's (kind, target, duration) in
    turn, gap_s apart (chaos/hunts.py picks one per mutant); with corrupt, the default cycle
    also cuts a follower's segment short at rest."""
    if corrupt:
        cycle = (*cycle, ("corrupt", "truncate", 2.0))
    steps, at, turn = [], 2.0, 0
    while True:
        kind, target, duration = cycle[turn % len(cycle)]
        if at + duration > time_limit_s:
            return steps
        steps.append(Step(at, kind, target, duration))
        at += duration + gap_s
        turn += 1


class ExternalFaults:
    """Process faults against brokers we did not start as a ProxiedCluster (--bootstrap): kill
    and restart, from the user's shell commands or from a peer (chaos/conform AimedFaults).
    available: both are there; describe(): where they come from, for the history."""

    available = False

    def describe(self) -> str:
        return "none"

    def kill(self) -> None:
        raise RuntimeError("no kill fault")

    def restart(self) -> None:
        raise RuntimeError("no restart fault")


@attrs.frozen
class ExternalCommands(ExternalFaults):
    """--kill-cmd / --restart-cmd, each run with `sh -c` (so quotes, pipes and variables work)."""

    kill_cmd: str | None = None
    restart_cmd: str | None = None

    @property
    def available(self) -> bool:
        return bool(self.kill_cmd and self.restart_cmd)

    def describe(self) -> str:
        return f"--kill-cmd {self.kill_cmd!r}, --restart-cmd {self.restart_cmd!r}"

    def kill(self) -> None:
        self._run(self.kill_cmd)

    def restart(self) -> None:
        self._run(self.restart_cmd)

    @staticmethod
    def _run(command: str) -> None:
        done = subprocess.run(["sh", "-c", command], timeout=60, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        if done.returncode != 0:
            stderr = done.stderr.decode(errors="replace").strip().replace("\n", " | ")
            raise RuntimeError(f"`{command}` exited {done.returncode}: {stderr[-300:]}")


class Nemesis:
    """Runs a schedule against a ProxiedCluster (or external commands), recording every step."""

    def __init__(self, recorder: Recorder, schedule: list[Step], topic: str, seed: int, *,
                 cluster: ProxiedCluster | None = None,
                 external: ExternalFaults | None = None,
                 log: Callable[[str], None] = lambda _: None):
        self.recorder, self.schedule, self.topic = recorder, schedule, topic
        self.cluster, self.external, self.log = cluster, external, log
        self.rng = random.Random(f"targets:{seed}")
        self.injected: dict[str, int] = {}
        self.skipped: dict[str, str] = {}  # kind -> why
        self._monotonic: dict[int, int] = {}  # broker -> its clock's monotonic jump so far
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    # -- running ------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True, name="chaos-nemesis")
        self._thread.start()

    def stop(self) -> None:
        """Stop drawing faults (the current one is undone), then heal everything."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(120)
        self.heal_all()

    def _run(self) -> None:
        started = time.monotonic()
        try:
            for step in self.schedule:
                if self._stopping.wait(max(0.0, started + step.at_s - time.monotonic())):
                    return
                undo = self.apply(step)
                if undo is None:
                    continue
                self._stopping.wait(step.duration_s)
                undo()
        except Exception as error:  # noqa: BLE001 -- surfaces as a crashed run
            self.error = error

    def apply(self, step: Step) -> Callable[[], None] | None:
        """Inject step's fault; returns its undo (None if it could not be injected)."""
        why = self._unsupported(step.kind, step.target)
        if why:
            name = step.kind if self._unsupported(step.kind) else f"{step.kind} {step.target}"
            if name not in self.skipped:
                self.log(f"skipping {name} faults: {why}")
            self.skipped[name] = why
            return None
        self.log(f"nemesis: {step.kind} {step.target} for {step.duration_s}s")
        undo = getattr(self, "_" + step.kind.replace("-", "_"))(step)
        if undo is not None:
            self.injected[step.kind] = self.injected.get(step.kind, 0) + 1
        return undo

    def _unsupported(self, kind: str, target: str | None = None) -> str | None:
        """Why the fault cannot be had here (a peer's own list: chaos/peer_cluster.py)."""
        if self.cluster is not None:
            refuses = getattr(self.cluster, "unsupported", None)
            return refuses(kind, target) if refuses is not None else None
        if kind == "kill" and self.external and self.external.available:
            return None
        if kind == "kill":
            return "a broker we did not start needs --kill-cmd and --restart-cmd"
        return "needs the brokers' processes and the proxy mesh (not available with --bootstrap)"

    # -- targets ------------------------------------------------------------------------------
    def _alive(self) -> list[int]:
        return [b for b in self.cluster.broker_ids if self.cluster.alive(b)]

    def _resolve(self, role: str) -> list[int]:
        alive = self._alive()
        partitions = [p for p in self.cluster.partition_meta(self.topic) if p.leader in alive]
        if role == "leader" and partitions:
            return [self.rng.choice(partitions).leader]
        if role == "follower" and partitions:
            partition = self.rng.choice(partitions)
            followers = [b for b in partition.replicas if b != partition.leader and b in alive]
            if followers:
                return [self.rng.choice(followers)]
        if role == "minority":
            return self.rng.sample(alive, max(1, (len(self.cluster.broker_ids) - 1) // 2))
        return [self.rng.choice(alive)] if alive else []

    # -- faults -------------------------------------------------------------------------------
    def _kill(self, step: Step):
        if self.cluster is None:
            target = {"role": step.target, "by": self.external.describe()}
            self.recorder.nemesis("kill", target, self.external.kill)
            return lambda: self.recorder.nemesis("restart", target, self.external.restart)
        if step.target == "controller" and hasattr(self.cluster, "quorum_leader"):
            return self._kill_quorum_leader()
        if step.target == "controller":
            target = {"role": "controller"}
            self.recorder.nemesis("kill", target, self.cluster.stop_controller)
            return lambda: self.recorder.nemesis("restart", target,
                                                 self.cluster.start_controller)
        if step.target == LAGGING_LEADER:
            return self._kill_lagging_leader()
        return self._kill_brokers({"role": step.target, "brokers": self._resolve(step.target)})

    def _kill_brokers(self, target: dict):
        brokers = target["brokers"]
        self.recorder.nemesis("kill", target, lambda: [
            self.cluster.signal(b, signal.SIGKILL) for b in brokers])
        return lambda: self.recorder.nemesis("restart", target, lambda: [
            self.cluster.start_broker(b) for b in brokers])

    def _kill_quorum_leader(self):
        """A peer's controller is a node (KRaft combined mode): SIGKILL the quorum's leader,
        the active controller, and restart it after the duration."""
        leader = self.cluster.quorum_leader()
        return self._kill_brokers({
            "role": "controller",
            "brokers": [leader] if leader is not None else self._resolve("random"),
            "found": "quorum leader" if leader is not None else "none: a random node"})

    def _kill_lagging_leader(self):
        """Slow every link between brokers, let the leader run ahead of its followers, then
        SIGKILL it: it dies holding a tail nobody else has (a hunt's target, chaos/hunts.py;
        not drawn by seeded schedules, which stay as they were)."""
        (leader,) = self._resolve("leader")[:1] or [self.rng.choice(self.cluster.broker_ids)]
        ids = self.cluster.broker_ids
        slow = {peer_link(a, b): Fault(delay_ms=LAG_DELAY_MS) for a in ids for b in ids if a != b}
        target = {"role": LAGGING_LEADER, "brokers": [leader], "delay_ms": LAG_DELAY_MS,
                  "links": sorted(slow)}

        def inject():
            for name, fault in slow.items():
                self.cluster.mesh.set_fault(name, fault)
            time.sleep(LAG_S)
            self.cluster.signal(leader, signal.SIGKILL)
            self.cluster.mesh.heal()

        self.recorder.nemesis("kill", target, inject)
        return lambda: self.recorder.nemesis("restart", target, lambda: [
            self.cluster.start_broker(leader)])

    def _lose_unfsynced(self, step: Step):
        brokers = self._resolve(step.target)
        target = {"role": step.target, "brokers": brokers, "power_loss": True}
        self.recorder.nemesis("lose-unfsynced", target, lambda: [
            self.cluster.signal(b, signal.SIGKILL) for b in brokers])
        return lambda: self.recorder.nemesis("restart", target, lambda: [
            self.cluster.start_broker(b) for b in brokers])

    def _pause(self, step: Step):
        brokers = self._resolve(step.target)
        target = {"role": step.target, "brokers": brokers}
        self.recorder.nemesis("pause", target, lambda: [
            self.cluster.signal(b, signal.SIGSTOP) for b in brokers])
        return lambda: self.recorder.nemesis("resume", target, lambda: [
            self.cluster.signal(b, signal.SIGCONT) for b in brokers])

    def _partition(self, step: Step):
        faults = self._partition_links(step.target)
        target = {"mode": step.target, "links": sorted(faults)}
        self.recorder.nemesis("partition", target, lambda: [
            self.cluster.mesh.set_fault(name, fault) for name, fault in faults.items()])
        return lambda: self.recorder.nemesis("heal", target, self.cluster.mesh.heal)

    def _partition_links(self, mode: str) -> dict[str, Fault]:
        ids = self.cluster.broker_ids
        cut = Fault(cut_up=True, cut_down=True)
        if mode in ("isolate", "isolate-all"):
            (lonely,) = self._resolve("leader")[:1] or [self.rng.choice(ids)]
            faults = {peer_link(a, b): cut for a in ids for b in ids
                      if a != b and lonely in (a, b)}
            if mode == "isolate-all":
                faults[controller_link(lonely)] = cut
            return faults
        if mode == "halves":
            shuffled = self.rng.sample(ids, len(ids))
            small = set(shuffled[: len(ids) // 2])
            return {peer_link(a, b): cut for a in ids for b in ids
                    if a != b and (a in small) != (b in small)}
        if mode == "clients":
            return {client_link(b): cut for b in self._resolve("leader")}
        if mode == "one-way":
            a, b = self.rng.sample(ids, 2)
            # a's requests to b and b's answers to a: a follower that cannot fetch, or a
            # leader whose fetches are never answered.
            return {peer_link(a, b): Fault(cut_down=self.rng.random() < 0.5,
                                           cut_up=True)}
        delay = Fault(delay_ms=self.rng.choice((20, 50, 100, 250)))
        return dict.fromkeys(self.cluster.mesh.links, delay)

    def _corrupt_net(self, step: Step):
        faults = {client_link(b): Fault(corrupt_produce=CORRUPT_SHARE)
                  for b in self.cluster.broker_ids}
        target = {"mode": step.target, "share": CORRUPT_SHARE, "links": sorted(faults)}
        self.recorder.nemesis("corrupt-net", target, lambda: [
            self.cluster.mesh.set_fault(name, fault) for name, fault in faults.items()])
        return lambda: self.recorder.nemesis("heal", target, self.cluster.mesh.heal)

    def _clock(self, step: Step):
        broker = self.rng.choice(self.cluster.broker_ids)
        minutes = self.rng.choice((1, 10, 60))
        if step.target == "monotonic-forward":
            self._monotonic[broker] = self._monotonic.get(broker, 0) + minutes * 1000
        wall = {"wall-forward": 1, "wall-back": -1}.get(step.target, 0) * minutes * 60_000
        target = {"mode": step.target, "broker": broker, "wall_ms": wall,
                  "monotonic_ms": self._monotonic.get(broker, 0)}
        self.recorder.nemesis("clock", target, lambda: self._write_skew(broker, wall))
        return lambda: self.recorder.nemesis("clock-reset", {"broker": broker},
                                             lambda: self._write_skew(broker, 0))

    def _write_skew(self, broker: int, wall_ms: int) -> None:
        path = self.cluster.clock_path(broker)
        with open(path + ".tmp", "w") as handle:
            json.dump({"wall_ms": wall_ms, "monotonic_ms": self._monotonic.get(broker, 0)},
                      handle)
        os.replace(path + ".tmp", path)

    def _corrupt(self, step: Step):
        brokers = self._resolve("follower")
        target = {"mode": step.target, "brokers": brokers}

        def inject():
            for broker in brokers:
                self.cluster.signal(broker, signal.SIGKILL)
            return {**target, "files": [corrupt_segment(self.cluster.data_dir(b), step.target,
                                                        self.rng) for b in brokers]}

        self.recorder.nemesis("corrupt", target, inject)
        return lambda: self.recorder.nemesis("restart", target, lambda: [
            self.cluster.start_broker(b) for b in brokers])

    # -- healing ------------------------------------------------------------------------------
    def heal_all(self) -> None:
        """Every link up, every broker running: recorded as one heal op."""
        if self.cluster is None:
            if self.external and self.external.available and "kill" in self.injected:
                self.recorder.nemesis("heal", {"by": self.external.describe()}, lambda: None)
            return

        if hasattr(self.cluster, "restore"):  # a peer on its own hosts
            self.recorder.nemesis("heal", {"all": True}, self.cluster.restore)
            return

        def heal():
            if self.cluster.controller.stopping.is_set():
                self.cluster.start_controller()
            self.cluster.mesh.heal()
            for broker in self.cluster.broker_ids:
                if os.path.exists(self.cluster.clock_path(broker)):
                    self._write_skew(broker, 0)
            restarted = []
            for broker in self.cluster.broker_ids:
                process = self.cluster.processes.get(broker)
                if process is not None and process.poll() is None:
                    process.send_signal(signal.SIGCONT)
                else:
                    self.cluster.start_broker(broker)
                    restarted.append(broker)
            return {"restarted": restarted}

        self.recorder.nemesis("heal", {"all": True}, heal)


def corrupt_segment(data_dir: str, mode: str, rng: random.Random) -> str | None:
    """Flip a few bits in, or cut the tail off, the newest non-empty .log file of a random
    partition directory; returns the file's path (None if there is none)."""
    candidates = []
    for root, _, _ in os.walk(data_dir):
        newest = newest_segment(root)
        if newest is not None:
            candidates.append(newest)
    if not candidates:
        return None
    path = rng.choice(sorted(candidates))
    size = os.path.getsize(path)
    if mode == "truncate":
        cut_short(path, rng.randrange(size // 2, size))
        return path
    with open(path, "r+b") as handle:
        for _ in range(3):
            position = rng.randrange(size)
            handle.seek(position)
            byte = handle.read(1)[0]
            handle.seek(position)
            handle.write(bytes([byte ^ (1 << rng.randrange(8))]))
    return path


def newest_segment(partition_dir: str) -> str | None:
    """The newest non-empty .log file of one partition directory (its active segment)."""
    try:
        names = os.listdir(partition_dir)
    except OSError:
        return None
    logs = sorted(n for n in names if n.endswith(".log")
                  and os.path.getsize(os.path.join(partition_dir, n)) > 0)
    return os.path.join(partition_dir, logs[-1]) if logs else None


def cut_short(path: str, size: int) -> None:
    """A segment cut short at rest: the file ends at size (what a power loss leaves of
    writes the disk never completed)."""
    os.truncate(path, size)


def tear_last_write(partition_dir: str) -> tuple[str, int, int] | None:
    """A power loss in the middle of the partition's last write: its active segment cut short
    inside its last batch (half of that batch kept), as when the machine dies while the page
    cache is being written back. Returns (file, size before, size after), or None when the
    directory holds no batch."""
    path = newest_segment(partition_dir)
    if path is None:
        return None
    size = os.path.getsize(path)
    position, last = 0, None
    with open(path, "rb") as handle:  # batch by batch, one 12-byte read each
        while True:
            prefix = peek_offset_and_size(os.pread(handle.fileno(), LOG_OVERHEAD, position))
            if prefix is None or prefix[1] <= LOG_OVERHEAD or position + prefix[1] > size:
                break
            last, position = (position, position + prefix[1]), position + prefix[1]
    if last is None:
        return None
    start, end = last
    keep = start + max(1, (end - start) // 2)
    cut_short(path, keep)
    return path, size, keep
