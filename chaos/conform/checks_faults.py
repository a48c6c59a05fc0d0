"""Checks that need faults: a broker restart through the user's --kill-cmd / --restart-cmd, and
the chaos workload (chaos/workload.py) when it is installed."""

from __future__ import annotations

import shutil
import tempfile
import time

from kafkaref.chaos.conform.catalogue import (
    HIGHEST,
    LOWEST,
    CheckFailed,
    CouldNotRun,
    Skip,
    check,
)
from kafkaref.chaos.conform.faults import (
    KILL,
    RESTART,
    Target,
    faults_of,
    inflict,
    replica_faults,
    target_of,
    wait_serving,
)
from kafkaref.chaos.conform.probe import Probe, batch_now


@check("leader_failover", "faults", "KIP-101 / KIP-279 (leader epochs), KIP-320; Kafka "
       "durability: acks=all records survive the loss of the leader", deadline_s=150.0,
       levels=(LOWEST, HIGHEST))
def leader_failover(probe: Probe):
    """When the partition's leader is killed (--kill-cmd aimed at it), a new leader takes over
    with a higher leader epoch and every acks=all record is readable from it, in order; after
    --restart-cmd they are all still there. Run with the records produced, fetched and the
    leaders looked up at the lowest, then the highest, versions the broker advertises (what is
    written and read differs by version: Produce v3 / v13, Fetch v4 / v18 by topic id)."""
    replica_faults(probe, "no other replica to take over", "to kill the leader")
    topic = probe.create_topic("failover", configs={"min.insync.replicas": str(
        min(2, probe.replication_factor()))})
    acked = [b"d%d" % i for i in range(50)]
    for i in range(0, 50, 5):
        probe.produce_ok(topic, _batch(acked[i:i + 5]))
    before = probe.wait_for_leaders(topic, 1).partitions[0]
    target = target_of(probe, before.leader_id)
    inflict(probe, KILL, target)
    try:
        after = new_leader(probe, topic, before.leader_id)
        epochs = (_leader_epoch(before), _leader_epoch(after))
        probe.soft(None in epochs or epochs[1] > epochs[0],
                   f"leader {before.leader_id} -> {after.leader_id} but the leader epoch went "
                   f"{epochs[0]} -> {epochs[1]}", response=after,
                   expected=f"a leader epoch above {epochs[0]}")
        values = [r.value for r in probe.read_all(topic, end=50)]
        probe.soft(values == acked, "acknowledged records lost in the failover",
                   response=str(values[:10]), expected="d0..d49")
    finally:
        inflict(probe, RESTART, target)
        wait_serving(probe, target)
    probe.wait_for_leaders(topic, 1, timeout_s=60)
    values = [r.value for r in probe.read_all(topic, end=50)]
    probe.soft(values == acked, "acknowledged records lost over the restart",
               response=str(values[:10]), expected="d0..d49")
    if None in epochs:
        moved = (f"leader {before.leader_id} -> {after.leader_id} (Metadata v"
                 f"{probe.version(3)} carries no leader epoch)")
    else:
        moved = (f"leader {before.leader_id} (epoch {epochs[0]}) -> {after.leader_id} "
                 f"(epoch {epochs[1]})")
    return f"{moved}; 50 acked records kept"


def _leader_epoch(partition) -> int | None:
    """A Metadata answer's leader epoch; None before v7, which does not carry it."""
    return getattr(partition, "leader_epoch", None)


def new_leader(probe: Probe, topic: str, old: int, timeout_s: float = 60.0):
    """Partition 0's metadata once a broker other than old leads it and serves it."""
    deadline = time.monotonic() + timeout_s
    while True:
        meta = probe.metadata([topic]).topics[0].partitions[0]
        if meta.leader_id >= 0 and meta.leader_id != old:
            try:
                probe.wait_for_leaders(topic, 1, timeout_s=5)
                return meta
            except CheckFailed:
                pass
        probe.expect(time.monotonic() < deadline, f"no new leader {timeout_s:.0f} s after "
                     f"killing leader {old}", response=meta, expected="another leader")
        time.sleep(0.2)


def _batch(values):

    return batch_now([(None, v, (), None) for v in values])


@check("chaos_workload", "faults", "Jepsen-style history of a workload under faults, judged "
       "by the history checks (docs/histories.md; spark_checks)", deadline_s=900.0)
def chaos_workload(probe: Probe):
    """The chaos workload (chaos/workload.py) runs against the broker for --chaos-seconds, with
    broker kills through --kill-cmd / --restart-cmd when given, and its recorded history has no
    anomaly the configuration disallows (judged by the Spark checks, or their twin: the
    options' chaos_check, which `kafkaref conform --chaos-checker` builds)."""
    from kafkaref.chaos import run as chaos_run  # imported here: the runner is heavy to import
    from kafkaref.chaos.nemesis import ExternalFaults
    from kafkaref.chaos.probes import PROBE_TOPIC
    from kafkaref.chaos.workload import WorkloadConfig

    seconds = float(probe.options.get("chaos_seconds", 30))
    if seconds <= 0:
        raise Skip("--chaos-seconds 0")
    check = probe.options.get("chaos_check")  # history directory -> report (handed in)
    if check is None:
        raise Skip("no history checker given (options['chaos_check'])")
    external, nemesis = ExternalFaults(), ()
    if {KILL, RESTART} <= faults_of(probe).kinds:
        victim = target_of(probe, max(b.node_id for b in probe.metadata([]).brokers))
        external = AimedFaults(probe, victim)
        nemesis = ("kill",)
    kept = probe.options.get("runs_dir")
    runs_dir = kept or tempfile.mkdtemp(prefix="conform-chaos-")
    had_probe_topic = _exists(probe, PROBE_TOPIC)
    options = chaos_run.RunOptions(
        seed=int(probe.options.get("seed", 0)), time_limit_s=seconds, nemesis=nemesis,
        bootstrap=",".join(f"{h}:{p}" for h, p in probe.bootstrap), external=external,
        runs_dir=runs_dir, workload=WorkloadConfig(topic=probe.name("chaos")))
    try:
        result = chaos_run.run(options, log=probe.options.get("log") or (lambda line: None),
                               check=check)
    finally:
        if not had_probe_topic and probe.created is not None:
            probe.created.add(PROBE_TOPIC)  # the run created it: removed with the rest
    report = result.report
    failed = result.exit_code != chaos_run.EXIT_VALID
    if kept or probe.options.get("keep") or failed:
        where = f"history in {result.run_dir}"  # kept: asked for, or the evidence of a failure
    else:
        shutil.rmtree(runs_dir, ignore_errors=True)
        where = "history checked and removed (--keep or --runs-dir keeps it)"
    summary = (f"{where}: valid={report.get('valid')}, "
               f"faults {len(result.summary.get('schedule') or [])}")
    if result.exit_code == chaos_run.EXIT_INVALID:
        found = {k: v for k, v in (report.get("anomalies") or {}).items() if v}
        raise probe.fail(f"the history has anomalies: {str(found)[:300]}",
                         response=str(report)[:600], expected="no disallowed anomaly")
    if result.exit_code != chaos_run.EXIT_VALID:
        raise CouldNotRun(f"the chaos run could not decide (exit {result.exit_code}): "
                          f"{report.get('error', '')}"[:400])
    return summary


def _exists(probe: Probe, topic: str) -> bool:
    return any(t.name == topic and t.error_code == 0 for t in probe.metadata([topic]).topics)


class AimedFaults:
    """The run's kill and restart, aimed at one broker, as the chaos nemesis takes them."""

    available = True

    def __init__(self, probe: Probe, victim: Target):
        self.faults, self.victim = faults_of(probe), victim

    def describe(self) -> str:
        return f"{self.faults.describe()} on broker {self.victim.broker_id}"

    def kill(self) -> None:
        self.faults.kill(self.victim)

    def restart(self) -> None:
        self.faults.restart(self.victim)
