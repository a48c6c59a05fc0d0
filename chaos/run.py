"""One chaos run: cluster, workload, nemesis, heal, final reads, Spark check, report.

    runs/<id>/schedule.txt     the nemesis schedule drawn from the seed (printed first)
    runs/<id>/history/         the recorded history (history/format.py format)
    runs/<id>/report.json      the check's verdict, plus a "run" section
    runs/<id>/report.html      the human report (chaos/report.py)
    runs/<id>/cluster/         broker logs and data (an embedded cluster only)

The check is handed in (`check`: history directory -> report, such as spark_checks/checker.py
builds): chaos/ records histories, spark_checks/ judges them, and neither imports the other.

With `peer` (RunOptions.peer: apache-kafka or kafkaref), the run starts that broker with every
node in a network namespace of its own (chaos/netns.py; chaos/peer_cluster.py for a peer of
chaos/peers, chaos/hosted.py for kafkaref) and the same nemesis faults it, partitions cutting
routes. Without it kafkaref runs as a ProxiedCluster, whose proxy mesh cuts the same links.

Exit codes: 0 valid, 1 anomalies the configuration disallows, 2 unknown (the checker could not
decide, or no checker was given), 3 the run itself crashed (the workload raised, a node would
not restart, ...), 4 the run could not be set up (the peer did not start, partitions cannot be
made here): nothing was recorded.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import attrs

from kafkaref.chaos.nemesis import SAFE_KINDS, ExternalFaults, Nemesis, draw_schedule
from kafkaref.chaos.recorder import Recorder
from kafkaref.chaos.workload import Workload, WorkloadConfig, create_topic
from kafkaref.history.store import HistoryWriter, WriterLimits

EXIT_VALID, EXIT_INVALID, EXIT_UNKNOWN, EXIT_CRASHED, EXIT_SETUP = 0, 1, 2, 3, 4
# The brokers the chaos runner starts on hosts of their own, and their node ids.
PEER_NODES = {"apache-kafka": (1, 2, 3), "kafkaref": (0, 1, 2)}
# Row groups small enough that a recorder's buffer stays a few MB whatever the run length.
LIMITS = WriterLimits(row_group_rows=64 * 1024)


@attrs.frozen
class RunOptions:
    seed: int = 0
    time_limit_s: float = 60.0
    nemesis: tuple[str, ...] = SAFE_KINDS
    workload: WorkloadConfig = WorkloadConfig()
    brokers: int = 3
    bootstrap: str | None = None  # run against this broker instead of an embedded cluster
    external: ExternalFaults = ExternalFaults()
    mutants: tuple[str, ...] = ()
    runs_dir: str = "runs"
    run_id: str | None = None
    settle_s: float = 3.0  # healed cluster under load before the writes stop
    record: bool = True  # False: the workload runs but nothing is written (bench baseline)
    schedule: tuple | None = None  # explicit nemesis steps instead of drawing them from the seed
    segment_bytes: int | None = None  # the brokers' segment size (None: chaos/cluster.py's)
    peer: str | None = None  # PEER_NODES: that broker on hosts of its own (chaos/netns.py)


class SetupError(RuntimeError):
    """The run cannot start: no peer, no partitions (said before anything is recorded)."""


def setup_problem(options: RunOptions) -> str | None:
    """Why a run with options cannot be set up here, checked before it starts; None if it can."""
    if options.peer is None:
        return None
    if options.peer not in PEER_NODES:
        return (f"chaos runs start {', '.join(PEER_NODES)}, not {options.peer!r}"
                " (run any other broker yourself and pass --bootstrap)")
    if options.bootstrap:
        return "--peer starts its own cluster: no --bootstrap with it"
    from kafkaref.chaos.netns import unavailable

    return unavailable()


@attrs.define
class RunResult:
    run_dir: Path
    exit_code: int
    report: dict
    summary: dict


def new_run_id(seed: int) -> str:
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-s{seed}-{os.getpid() % 10000}"


def run(options: RunOptions, log: Callable[[str], None] = print,
        check: Callable[[Path], dict] | None = None) -> RunResult:
    """Record a run under options and judge its history with check (None: not checked)."""
    problem = setup_problem(options)
    if problem:
        raise SetupError(problem)
    run_dir = Path(options.runs_dir) / (options.run_id or new_run_id(options.seed))
    run_dir.mkdir(parents=True, exist_ok=False)
    schedule = list(options.schedule) if options.schedule is not None else draw_schedule(
        options.seed, options.nemesis, options.time_limit_s)
    schedule_text = "\n".join(step.describe() for step in schedule) or "(no faults)"
    (run_dir / "schedule.txt").write_text(schedule_text + "\n")
    log(f"run {run_dir} seed {options.seed}: {len(schedule)} faults scheduled")
    log(schedule_text)
    summary: dict = {"seed": options.seed, "run_dir": str(run_dir),
                     "broker": options.peer or "kafkaref",
                     "schedule": [attrs.asdict(s) for s in schedule],
                     "mutants": list(options.mutants)}
    try:
        _record(options, run_dir, schedule, summary, log)
    except SetupError as error:
        summary["setup_error"] = str(error)
        log(f"the run could not be set up: {error}")
        report = {"valid": "unknown", "error": f"not set up: {error}", "run": summary}
        (run_dir / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
        return RunResult(run_dir, EXIT_SETUP, report, summary)
    except Exception as error:  # noqa: BLE001 -- the run crashed: say why, exit 3
        summary["crash"] = f"{type(error).__name__}: {error}"
        summary["traceback"] = traceback.format_exc()
        log(f"the run crashed: {summary['crash']}")
        report = {"valid": "unknown", "error": summary["crash"], "run": summary}
        (run_dir / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
        return RunResult(run_dir, EXIT_CRASHED, report, summary)
    return _check(options, run_dir, summary, log, check)


def _record(options: RunOptions, run_dir: Path, schedule, summary: dict, log) -> None:
    history = run_dir / "history"
    config = attrs.evolve(options.workload.check_config())
    meta = {"seed": options.seed, "broker": options.peer or "kafkaref",
            "workload": attrs.asdict(options.workload),
            "nemesis": list(options.nemesis), "mutants": list(options.mutants)}
    writer = HistoryWriter(history, config=config, meta=meta, limits=LIMITS) \
        if options.record else None
    recorder = Recorder(writer)
    cluster = None
    try:
        if options.peer in PEER_NODES:
            cluster = _start_peer(options, run_dir, log)
        elif options.bootstrap is None:
            from kafkaref.chaos.cluster import ProxiedCluster

            log(f"starting {options.brokers} brokers (through the proxy mesh)")
            sizes = {} if options.segment_bytes is None else {
                "segment_bytes": options.segment_bytes}
            cluster = ProxiedCluster(options.brokers, str(run_dir / "cluster"),
                                     mutants=options.mutants,
                                     power_loss="lose-unfsynced" in options.nemesis, **sizes)
            cluster.start()  # apart: a broker that fails to start still gets cleaned up
        bootstrap = options.bootstrap or cluster.bootstrap
        replicas, min_isr = create_topic(
            bootstrap, options.workload,
            brokers_expected=options.brokers if cluster is not None else None)
        summary["topic"] = {"name": options.workload.topic, "replication_factor": replicas,
                            "min_insync_replicas": min_isr}
        if replicas < options.workload.replication_factor:
            log(f"only {replicas} brokers: topic with RF {replicas}, min ISR {min_isr}")
        workload = Workload(bootstrap, recorder, options.workload, options.seed)
        nemesis = Nemesis(recorder, schedule, options.workload.topic, options.seed,
                          cluster=cluster, external=options.external, log=log)
        started = time.monotonic()
        workload.start()
        nemesis.start()
        _wait(options.time_limit_s, started, recorder, log)
        nemesis.stop()
        log("healed; the cluster settles under load")
        if cluster is not None:
            _wait_in_sync(cluster, options.workload.topic, timeout_s=30)
        time.sleep(options.settle_s)
        workload.stop()
        if workload.errors:
            raise RuntimeError(f"workload failed: {workload.errors}")
        if nemesis.error is not None:
            raise RuntimeError(f"nemesis failed: {nemesis.error!r}") from nemesis.error
        log("final reads")
        read = workload.final_reads()
        if cluster is not None and cluster.mesh.errors:
            summary["proxy_errors"] = cluster.mesh.errors[:5]
        summary.update(
            ops=recorder.ops(), counts=dict(sorted(recorder.counts.items())),
            acknowledged=recorder.acked_sends, final_read=read,
            faults=dict(nemesis.injected), skipped=dict(nemesis.skipped),
            duration_s=round(time.monotonic() - started, 1))
    finally:
        if writer is not None:
            writer.close()
        if cluster is not None:
            cluster.stop()


def _start_peer(options: RunOptions, run_dir: Path, log):
    """The peer's nodes, each in a network namespace of its own; SetupError when either the
    namespaces or the peer cannot be had (whatever was made is removed first)."""
    from kafkaref.chaos.netns import Hosts, NetnsError
    from kafkaref.chaos.peers import PeerError

    ids = PEER_NODES[options.peer]
    try:
        hosts = Hosts(list(ids)).create()
    except NetnsError as error:
        raise SetupError(str(error)) from error
    log(f"starting {options.peer} ({len(ids)} nodes, a network namespace each, "
        f"{hosts.subnet})")
    try:
        return _hosted(options, run_dir, hosts, log)
    except BaseException as error:
        hosts.remove()
        if isinstance(error, (PeerError, OSError, TimeoutError, RuntimeError)):
            raise SetupError(f"{options.peer} did not start: {error}") from error
        raise


def _hosted(options: RunOptions, run_dir: Path, hosts, log):
    """options.peer started on hosts: kafkaref's chaos cluster, or a peer of chaos/peers."""
    if options.peer == "kafkaref":
        from kafkaref.chaos.hosted import HostedCluster

        sizes = {} if options.segment_bytes is None else {"segment_bytes": options.segment_bytes}
        cluster = HostedCluster(len(PEER_NODES["kafkaref"]), str(run_dir / "cluster"), hosts,
                                mutants=options.mutants,
                                power_loss="lose-unfsynced" in options.nemesis, **sizes)
        try:
            return cluster.start()
        except BaseException:
            cluster.stop()
            raise
    from kafkaref.chaos.peer_cluster import PeerCluster
    from kafkaref.chaos.peers import make_peer

    peer = make_peer(options.peer, nodes=len(hosts.node_ids), directory=str(run_dir / "cluster"),
                     keep=True, hosts=hosts)
    peer.start()
    log(peer.describe())
    return PeerCluster(peer, hosts)


def _wait(limit_s: float, started: float, recorder: Recorder, log) -> None:
    next_note = started
    while (elapsed := time.monotonic() - started) < limit_s:
        if time.monotonic() >= next_note:
            counts = recorder.counts
            log(f"  {elapsed:5.0f}s / {limit_s:.0f}s  ops {recorder.ops():,}  "
                f"acked {recorder.acked_sends:,}  "
                f"info {counts.get('send:info', 0):,}  fail {counts.get('send:fail', 0):,}")
            next_note += 10
        time.sleep(min(1.0, max(0.0, limit_s - elapsed)))


def _wait_in_sync(cluster, topic: str, timeout_s: float) -> bool:
    """Until every partition has a leader and its full replica set in the ISR (bounded)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        partitions = cluster.partition_meta(topic)
        if partitions and all(p.leader >= 0 and set(p.isr) == set(p.replicas)
                              for p in partitions):
            return True
        time.sleep(0.2)
    return False


def _check(options: RunOptions, run_dir: Path, summary: dict, log, check) -> RunResult:
    history = run_dir / "history"
    started = time.monotonic()
    if check is None or not options.record:
        report = {"valid": "unknown", "error": "not checked"}
    else:
        log("checking the history")
        report = check(history)
    summary["check_s"] = round(time.monotonic() - started, 1)
    _judge_final_reads(options, summary, report)
    report["run"] = summary
    report_path = run_dir / "report.json"
    report_path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    _write_html(run_dir, history, report_path, log)
    valid = report.get("valid")
    code = {True: EXIT_VALID, False: EXIT_INVALID}.get(valid, EXIT_UNKNOWN)
    return RunResult(run_dir, code, report, summary)


def _judge_final_reads(options: RunOptions, summary: dict, report: dict) -> None:
    """A partition the final phase could not read back has no final log: loss in it cannot be
    told from delay, so "valid" becomes "unknown" (anomalies found stay found)."""
    read = {int(p) for p in summary.get("final_read", {})}
    unread = sorted(set(range(options.workload.partitions)) - read)
    if not unread:
        return
    summary["unread_partitions"] = unread
    if report.get("valid") is True:
        report["valid"] = "unknown"
        report["error"] = (f"the final reads could not read partitions {unread} back after "
                           f"healing: what they hold is unknown")


def _write_html(run_dir: Path, history: Path, report_path: Path, log) -> None:
    """report.html by chaos/report.py; a page that fails is logged, the verdict stands."""
    from kafkaref.chaos.report import write_report

    try:
        write_report(run_dir, history, report_path)
    except Exception as error:  # noqa: BLE001 -- a broken page must not hide the verdict
        log(f"report.html could not be written: {error!r}")
