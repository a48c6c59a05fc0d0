"""`kafkaref chaos run` and `kafkaref chaos soak`: fault injection with a recorded, checked history;
`kafkaref chaos tear`: one fault by hand, a power loss tearing a stopped broker's last write.

run exits 0 when the history is valid, 1 when it holds anomalies the configuration disallows,
2 when the checker could not decide, 3 when the run itself crashed, 4 when it could not be set
up (--peer did not start, no root for its partitions). soak exits with the worst of its runs
(4 > 3 > 1 > 2 > 0: a harness problem first, then an anomaly). The runs are chaos/run.py's, judged
by the checker spark_checks/checker.py builds from --checker.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import attrs
import click

from kafkaref.chaos.nemesis import SAFE_KINDS, ExternalCommands, parse_kinds

EXIT_HELP = """\b
Exit codes: 0 valid, 1 anomalies the configuration disallows,
2 unknown (the checker could not decide), 3 the run crashed,
4 the run could not be set up (nothing recorded)."""


def _kinds(ctx, param, value: str) -> tuple[str, ...]:
    try:
        return parse_kinds(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def _mutants(values: tuple[str, ...], allow: bool) -> tuple[str, ...]:
    if not values:
        return ()
    if not allow:
        raise click.UsageError("--mutant switches on a deliberate bug in the brokers: "
                               "add --allow-deliberate-bugs")
    try:
        from kafkaref.impl.mutants import parse_mutants
    except ImportError:  # the registry (branch mutants) is not merged yet: pass codes through
        return tuple(values)
    try:
        return tuple(sorted(m.code for m in parse_mutants(list(values))))
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--mutant") from None


def run_options(**kw):
    from kafkaref.chaos.java_workload import JAVA_CLIENTS
    from kafkaref.chaos.run import RunOptions
    from kafkaref.chaos.workload import WorkloadConfig

    acks = "all" if kw["acks"] in ("all", "-1") else kw["acks"]
    try:
        workload = WorkloadConfig(
            acks=acks, idempotence=kw["idempotence"] and acks == "all",
            partitions=kw["partitions"], rate=kw["rate"],
            subscribe_consumers=kw["subscribe"],
            **(JAVA_CLIENTS if kw["java_clients"] else {}))
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    if kw["bootstrap"]:
        workload = attrs.evolve(workload, replication_factor=kw["replication_factor"],
                                min_insync_replicas=kw["min_insync_replicas"])
    return RunOptions(
        seed=kw["seed"], time_limit_s=kw["time_limit"], nemesis=kw["nemesis"],
        workload=workload, bootstrap=kw["bootstrap"],
        external=ExternalCommands(kw["kill_cmd"], kw["restart_cmd"]),
        mutants=_mutants(kw["mutants"], kw["allow_deliberate_bugs"]), runs_dir=kw["runs_dir"],
        peer=kw["peer"])


def checker(kw):
    """The history check of --checker (spark on --master, twin, none)."""
    from kafkaref.spark_checks.checker import history_checker

    return history_checker(kw["checker"], kw["master"])


def hunted(options):
    """options with the hunt of its (single) mutant, or every hunt's faults without one."""
    from kafkaref.chaos.hunts import baseline_options, hunt_for

    if len(options.mutants) > 1:
        raise click.UsageError("--hunt follows one --mutant")
    if options.bootstrap or options.peer not in (None, "kafkaref"):
        raise click.UsageError("--hunt needs the embedded cluster (its faults are on processes)")
    keep = {"seed": options.seed, "runs_dir": options.runs_dir, "mutants": options.mutants}
    if options.mutants:
        hunt = hunt_for(options.mutants[0])
        return attrs.evolve(hunt.options(options.mutants[0], options.time_limit_s), **keep)
    return baseline_options(options.time_limit_s, **keep)


def common_options(function):
    options = [
        click.option("--time-limit", type=click.FloatRange(1, 86_400), default=60,
                     show_default=True, help="Seconds of workload under faults."),
        click.option("--nemesis", default=",".join(SAFE_KINDS), show_default=True,
                     callback=_kinds, help="Fault kinds: kill, pause, partition (the safety "
                     "phase), clock, lose-unfsynced, corrupt, corrupt-net (see chaos/nemesis.py)."),
        click.option("--acks", type=click.Choice(["all", "-1", "1", "0"]), default="all",
                     show_default=True),
        click.option("--idempotence/--no-idempotence", default=True, show_default=True,
                     help="Idempotent producers (needs acks=all; off otherwise)."),
        click.option("--partitions", type=click.IntRange(1, 64), default=3, show_default=True),
        click.option("--rate", type=click.FloatRange(1, 10_000), default=40.0,
                     show_default=True, help="Sends per second per producer (3 producers)."),
        click.option("--subscribe", type=click.IntRange(0, 8), default=0, show_default=True,
                     help="Consumers subscribing in a group (confluent-kafka); judged in "
                     "subscribe mode (skips across rebalances allowed)."),
        click.option("--java-clients", is_flag=True,
                     help="Apache Kafka's Java client writes and reads in a group: 2 "
                     "VerifiableProducer JVMs and 1 VerifiableConsumer instead of kafkaref's and "
                     "confluent-kafka's producers (judged in subscribe mode)."),
        click.option("--peer", type=click.Choice(["kafkaref", "apache-kafka"]), default=None,
                     help="The broker to start and fault: kafkaref (the default, through the "
                     "proxy mesh) or apache-kafka (3 KRaft nodes, each in a network namespace "
                     "of its own: needs root and iproute2; docs/chaos-kafka.md)."),
        click.option("--bootstrap", default=None, metavar="HOST:PORT,...",
                     help="Run against this broker instead of an embedded 3-broker cluster."),
        click.option("--replication-factor", type=click.IntRange(1, 32), default=3,
                     show_default=True, help="With --bootstrap: the topic's RF."),
        click.option("--min-insync-replicas", type=click.IntRange(1, 32), default=2,
                     show_default=True, help="With --bootstrap: the topic's min ISR."),
        click.option("--kill-cmd", default=None,
                     help="With --bootstrap: a command that SIGKILLs the broker."),
        click.option("--restart-cmd", default=None,
                     help="With --bootstrap: a command that starts it again and returns "
                     "(background the broker, e.g. sh -c 'kafkaref broker ... &')."),
        click.option("--mutant", "mutants", multiple=True, metavar="M",
                     help="Switch on a deliberate broker bug (docs/bugs.md), e.g. M2."),
        click.option("--allow-deliberate-bugs", is_flag=True,
                     help="Acknowledge that --mutant makes the brokers wrong on purpose."),
        click.option("--runs-dir", default="runs", show_default=True,
                     type=click.Path(file_okay=False)),
        click.option("--checker", type=click.Choice(["spark", "twin", "none"]),
                     default="spark", show_default=True,
                     help="spark: the Spark job; twin: the in-memory twin (small runs)."),
        click.option("--master", default="local[2]", show_default=True,
                     help="Spark master for the check."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


@click.group()
def chaos():
    """Fault injection against a running cluster, with a recorded and checked history."""


@chaos.command("run", epilog=EXIT_HELP)
@click.option("--seed", type=int, default=0, show_default=True,
              help="Draws the fault schedule and the workload's choices.")
@click.option("--hunt", is_flag=True,
              help="Instead of drawing faults from the seed, use the hunting schedule of the "
              "--mutant (chaos/hunts.py: the faults and workload shape that make it observable; "
              "without --mutant, every hunt's faults in turn, which a correct broker survives).")
@common_options
def run_command(seed, hunt, **kw):
    """One run: workload + faults, heal, final reads, check; writes runs/<id>/."""
    from kafkaref.chaos.run import run

    options = run_options(seed=seed, **kw)
    if hunt:
        options = hunted(options)
    refuse_setup(options)
    result = run(options, log=_log, check=checker(kw))
    print_summary(result)
    sys.exit(result.exit_code)


@chaos.command("soak", epilog=EXIT_HELP)
@click.option("--runs", type=click.IntRange(1, 100_000), default=10, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True,
              help="Run i uses seed SEED+i.")
@common_options
def soak_command(runs, seed, **kw):
    """RUNS seeded runs in a row; a closing note of runs, acked writes, faults and losses."""
    from kafkaref.chaos.run import run
    from kafkaref.chaos.soak import SoakTotals

    refuse_setup(run_options(seed=seed, **kw))
    check = checker(kw)  # one Spark session for every run
    totals = SoakTotals()
    # rewritten after every run, so a soak stopped early still leaves its totals
    totals_path = Path(kw["runs_dir"], f"soak-{seed}-{runs}-{int(time.time())}.json")
    for i in range(runs):
        options = run_options(seed=seed + i, **kw)
        _log(f"=== soak run {i + 1}/{runs} (seed {seed + i})")
        result = run(options, log=_log, check=check)
        totals.add(result)
        print_summary(result)
        totals_path.write_text(json.dumps(attrs.asdict(totals), indent=2) + "\n")
    click.echo(totals.note())
    sys.exit(totals.exit_code())


BROKERS = ("kafkaref", "apache-kafka")


@chaos.command("compare", epilog=EXIT_HELP)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--broker", "brokers", multiple=True, type=click.Choice(BROKERS),
              default=BROKERS, show_default=True, help="Brokers to run, one after the other.")
@common_options
def compare_command(seed, brokers, **kw):
    """The same seeded run against each broker in turn, then compare.html side by side
    (verdicts, anomalies, liveness, fault windows, plots). Exits with the worst run's code."""
    from kafkaref.chaos.compare import write_comparison
    from kafkaref.chaos.run import new_run_id, run
    from kafkaref.chaos.soak import SoakTotals

    if kw["peer"] or kw["bootstrap"]:
        raise click.UsageError("compare starts its own brokers: use --broker, not --peer or "
                               "--bootstrap")
    folder = Path(kw["runs_dir"], "compare-" + new_run_id(seed))
    check, totals, run_dirs = checker(kw), SoakTotals(), []
    for broker in brokers:
        options = run_options(seed=seed, **{**kw, "peer": broker, "runs_dir": str(folder)})
        options = attrs.evolve(options, run_id=broker)
        refuse_setup(options)
        result = run(options, log=_log, check=check)
        totals.add(result)
        print_summary(result)
        run_dirs.append(result.run_dir)
    page = write_comparison(folder / "compare.html", run_dirs)
    click.echo(f"side by side: {page}")
    sys.exit(totals.exit_code())


@chaos.command("side-by-side")
@click.argument("run_dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False))
@click.option("--out", default="compare.html", show_default=True, type=click.Path(dir_okay=False))
def side_by_side_command(run_dirs, out):
    """compare.html from finished runs (each a folder with report.json and history/)."""
    from kafkaref.chaos.compare import write_comparison

    missing = [d for d in run_dirs if not Path(d, "report.json").exists()]
    if missing:
        click.echo(f"error: no report.json in {', '.join(missing)}", err=True)
        sys.exit(2)
    click.echo(f"side by side: {write_comparison(out, list(run_dirs))}")


@chaos.command("liveness")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
def liveness_command(runs):
    """Time from each fault's end (and each leader kill) until every partition took a write
    again, over the runs of each RUNS folder (a soak's --runs-dir, or one run)."""
    from rich.console import Console
    from rich.table import Table

    from kafkaref.chaos.liveness import histories, measure, summarise
    from kafkaref.history.store import read_meta

    table = Table(title="liveness: ms until every partition took a write again")
    console = Console() if Console().is_terminal else Console(width=160)
    for column in ("runs", "from", "events", "censored", "median", "p90", "max"):
        table.add_column(column, justify="left" if column in ("runs", "from") else "right")
    for folder in runs:
        found = histories(folder)
        if not found:
            click.echo(f"error: no run history under {folder}", err=True)
            sys.exit(2)
        measures = [m for history in found for m in measure(history)]
        broker = read_meta(found[0]).get("broker", "kafkaref")
        for s in summarise(measures):
            table.add_row(f"{broker} ({Path(folder).name}: {len(found)} runs)", s.kind, str(s.events), str(s.censored),
                          *("-" if v is None else f"{v:,.0f}"
                            for v in (s.median_ms, s.p90_ms, s.max_ms)))
    console.print(table)


def refuse_setup(options) -> None:
    """A run that cannot be set up here says so in one line before anything starts (exit 4)."""
    from kafkaref.chaos.run import EXIT_SETUP, setup_problem

    problem = setup_problem(options)
    if problem:
        click.echo(f"error: {problem}", err=True)
        sys.exit(EXIT_SETUP)


def _log(message: str) -> None:
    click.echo(message, err=True)


def print_summary(result) -> None:
    """The table of a run: ops, acknowledged, lost, duplicates, every anomaly found."""
    from rich.console import Console
    from rich.table import Table

    report, summary = result.report, result.summary
    anomalies = report.get("anomalies") or {}
    mutants = summary.get("mutants") or []
    label = f" (mutant {', '.join(mutants)})" if mutants else ""
    table = Table(title=f"chaos run {result.run_dir.name}: valid = {report.get('valid')}{label}")
    table.add_column("")
    table.add_column("count", justify="right")
    table.add_column("allowed / first example")
    table.add_row("ops", f"{summary.get('ops', 0):,}", "")
    table.add_row("acknowledged sends", f"{summary.get('acknowledged', 0):,}", "")
    faults = ", ".join(f"{k} {v}" for k, v in sorted(summary.get("faults", {}).items()))
    table.add_row("faults injected", str(sum(summary.get("faults", {}).values())), faults)
    for name in ("lost_write", "duplicate"):
        entry = anomalies.get(name, {})
        table.add_row(name, str(entry.get("count", "-")), _example(entry))
    for name, entry in anomalies.items():
        if name not in ("lost_write", "duplicate") and entry.get("count"):
            style = None if entry.get("allowed") else "red"
            table.add_row(name, str(entry["count"]), _example(entry), style=style)
    console = Console()
    console.print(table)
    if summary.get("skipped"):
        console.print(f"faults skipped: {summary['skipped']}")
    if report.get("error"):
        console.print(f"[bold]could not decide / crashed:[/bold] {report['error']}")
    html = result.run_dir / "report.html"
    console.print(f"report: {html if html.exists() else result.run_dir / 'report.json'}")


def _example(entry: dict) -> str:
    examples = entry.get("examples") or []
    allowed = "allowed" if entry.get("allowed") else "disallowed"
    from kafkaref.chaos.report import clip

    return f"{allowed}: {clip(json.dumps(examples[0]), 70)}" if examples else (
        allowed if entry.get("count") else "")


TEAR_EXIT_HELP = """\b
Exit codes: 0 the last write was torn, 1 nothing to tear (no such partition directory, or no
whole batch in its newest segment), 2 wrong arguments."""


@chaos.command("tear", epilog=TEAR_EXIT_HELP)
@click.option("--data-dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="The stopped broker's data directory (kafkaref broker --data-dir).")
@click.option("--topic", required=True, help="Topic of the partition to tear.")
@click.option("--partition", type=click.IntRange(0, 2**31 - 1), default=0, show_default=True)
def tear_command(data_dir, topic, partition):
    """Simulate a power loss that tore a partition's last write: its newest segment file is
    cut short inside its last batch (half of it kept), as a machine losing power while the page
    cache was written back leaves it. Run it only while the broker is stopped (after SIGKILL);
    the broker's recovery must then truncate the torn tail (Kafka's LogLoader). `kafkaref
    conform --tear-cmd` runs such a command."""
    from kafkaref.chaos.nemesis import tear_last_write

    directory = Path(data_dir, f"{topic}-{partition}")
    torn = tear_last_write(str(directory))
    if torn is None:
        click.echo(f"nothing to tear in {directory}", err=True)
        sys.exit(1)
    path, before, after = torn
    click.echo(f"tore {path}: {before} -> {after} bytes")
