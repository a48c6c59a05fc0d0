"""`kafkaref conform`: the conformance suite (chaos/conform/) against any Kafka-protocol broker."""

from __future__ import annotations

import sys

import click

from kafkaref.chaos.peers import PEER_NAMES

EXIT_DOC = """\b
Exit codes: 0 every check passed (skips allowed), 1 some check failed, 2 some check could
not run (bootstrap unreachable, the broker closed or answered garbage, a deadline passed) or
the arguments are wrong."""


CLUSTER_WAIT_S = 180.0


def _judge_peer(name, nodes, cluster_dir, options, judge, say):
    """judge(bootstrap) of the --peer started here (and stopped after), or of the running peer
    in cluster_dir; the peer's faults in options, its name and version as the label."""
    from kafkaref.chaos.conform.faults import PeerFaults
    from kafkaref.chaos.peers import PeerError, make_peer
    from kafkaref.commands.peer import peer_error

    try:
        running = _running_peer(cluster_dir, say) if cluster_dir else make_peer(name, nodes)
        if not cluster_dir:
            say(f"starting {running.name} {running.version} ...")
            running.start()
    except PeerError as error:
        peer_error(error)
    options["faults"] = PeerFaults(running)
    say(f"judging {running.describe()}")
    try:
        count = len(running.nodes)
        return judge(running.bootstrap, f"{running.name} {running.version} "
                                        f"({count} node{'s' if count != 1 else ''})")
    finally:
        if not cluster_dir:
            running.stop()


def _running_peer(directory: str, say):
    """The peer running in directory, once it serves: `kafkaref cluster --dir D &` followed at
    once by `kafkaref conform --cluster-dir D` finds D empty for a while, so its peer.json is
    waited for (up to CLUSTER_WAIT_S), then every node's readiness."""
    import os
    import time

    from kafkaref.chaos.peers import PeerError, load_peer
    from kafkaref.chaos.peers.peer import STATE_FILE

    deadline = time.monotonic() + CLUSTER_WAIT_S
    if not os.path.exists(os.path.join(directory, STATE_FILE)):
        say(f"waiting for a cluster in {directory} (kafkaref cluster --dir {directory} or "
            "kafkaref peer start --dir writes its peer.json)")
    while not os.path.exists(os.path.join(directory, STATE_FILE)):
        if time.monotonic() > deadline:
            raise PeerError(f"no cluster in {directory}: no {STATE_FILE} after "
                            f"{CLUSTER_WAIT_S:.0f} s (start one with `kafkaref cluster --dir "
                            f"{directory}`)")
        time.sleep(0.5)
    running = load_peer(directory)
    running.wait_ready(list(running.nodes))
    return running


def _check_bootstrap(ctx, param, value):
    """HOST:PORT[,HOST:PORT...], each a usable address: said at once, in one line."""
    from kafkaref.impl.client.connection import parse_address

    if value is None:
        return None
    addresses = [a for a in value.split(",") if a.strip()]
    if not addresses:
        raise click.BadParameter("no address given", param_hint="--bootstrap")
    for address in addresses:
        try:
            parse_address(address)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--bootstrap") from None
    return value


def _list_checks() -> str:
    from kafkaref.chaos.conform.catalogue import load_catalogue

    return "\n".join(f"{c.name:<26} {c.group:<9} {c.behaviour}"
                     for c in load_catalogue().values())


@click.command(epilog=EXIT_DOC)
@click.option("--bootstrap", callback=_check_bootstrap,
              help="HOST:PORT[,HOST:PORT...] of the broker under test.")
@click.option("--peer", type=click.Choice(PEER_NAMES),
              help="Start this broker (chaos/peers/, docs/peers.md), judge it with every fault "
                   "check (kill, restart, tear through the peer itself), stop and remove it.")
@click.option("--nodes", type=click.IntRange(1, 32), default=None,
              help="Nodes of the --peer (default: apache-kafka and kafkaref 3, tansu 1).")
@click.option("--cluster-dir", type=click.Path(file_okay=False),
              help="Judge the running peer in this directory (`kafkaref peer start --dir`, "
                   "`kafkaref cluster --dir`), faulting it through its peer.json; waits up to "
                   "3 minutes for a cluster still starting there.")
@click.option("--label", help="Name of the broker in the reports (default: the bootstrap).")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False),
              help="Write JUnit XML here.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False),
              help="Write results.json, junit.xml, report.html (the report card) and report.md "
                   "here.")
@click.option("--compare", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Saved results.json of other brokers to show beside this one in the card "
                   "(without --bootstrap: only render the card of these into --report).")
@click.option("--only", multiple=True, help="Run only this check or group (repeatable).")
@click.option("--skip", "skip_", multiple=True, help="Do not run this check or group.")
@click.option("--kill-cmd", help="Command that stops a broker (SIGKILL), run with "
              "CONFORM_BROKER_ID, CONFORM_BROKER_HOST and CONFORM_BROKER_PORT naming the one "
              "the check wants stopped. Enables the fault checks. Each fault command runs "
              "through `sh -c` in a session of its own, and whatever is left of those "
              "sessions (a broker a --restart-cmd started, say) is stopped when the run ends.")
@click.option("--restart-cmd", help="Command that starts that broker again (same environment); "
              "it may return at once, the checks wait for the broker to serve.")
@click.option("--tear-cmd", help="Command that tears the last write of a partition of a "
              "stopped broker, as a power loss in the middle of a write would (the file cut "
              "short inside its last batch). Run after --kill-cmd, before --restart-cmd, with "
              "CONFORM_BROKER_ID/_HOST/_PORT naming the broker and CONFORM_TOPIC and "
              "CONFORM_PARTITION the partition. Enables torn_tail_recovery. For a kafkaref "
              "broker: kafkaref chaos tear --data-dir DIR --topic \"$CONFORM_TOPIC\" "
              "--partition \"$CONFORM_PARTITION\".")
@click.option("--fuzz", type=click.IntRange(0, 10**7), default=300, show_default=True,
              help="Frames the protocol fuzzer sends (0 skips it).")
@click.option("--seed", type=int, default=20261122, show_default=True,
              help="Seed of the fuzzer and the chaos workload.")
@click.option("--chaos-seconds", type=click.FloatRange(0, 86400), default=30, show_default=True,
              help="How long the chaos workload runs (0 skips it).")
@click.option("--chaos-checker", type=click.Choice(["spark", "twin"]), default="spark",
              show_default=True, help="Judge the chaos history with Spark or its Python twin.")
@click.option("--runs-dir", type=click.Path(file_okay=False),
              help="Where the chaos workload keeps its run (default: a temporary directory).")
@click.option("--replication-factor", type=click.IntRange(1, 32),
              help="Replication factor of the topics the checks create (default min(3, "
                   "brokers)).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(0.5, 600), default=10.0,
              show_default=True, help="Socket timeout of every request, in seconds.")
@click.option("--deadline-scale", type=click.FloatRange(0.1, 100), default=1.0,
              show_default=True, help="Multiply every check's deadline (slow machines).")
@click.option("--keep", is_flag=True,
              help="Leave the topics and groups the checks created on the broker, and the "
                   "chaos run's directory, for debugging (by default the run removes them).")
@click.option("--json", "as_json", is_flag=True,
              help="Print results.json on stdout instead of the table, and no progress.")
@click.option("--list", "list_checks", is_flag=True, help="List the checks and exit.")
def conform(bootstrap, peer, nodes, cluster_dir, label, junit_path, report_dir, compare, only,
            skip_, kill_cmd, restart_cmd, tear_cmd, fuzz, seed, chaos_seconds, chaos_checker,
            runs_dir, replication_factor, timeout_s, deadline_scale, keep, as_json,
            list_checks):
    """Run the conformance checks against a broker: --bootstrap (with --kill-cmd /
    --restart-cmd / --tear-cmd for the fault checks), --peer NAME (started here), or
    --cluster-dir DIR (a running peer).

    Each check is a small, named semantic test of one Kafka behaviour (its docstring cites the
    KIP or protocol-guide section) and answers pass, fail (with the request, the response and
    what Kafka requires), skip (not applicable, with the reason) or could not run. Every check
    has a deadline; a broker that does not answer or answers garbage never stops the run.

    At the end the run deletes from the broker the topics and consumer groups its checks
    created (all named conform-*; nothing else is touched) and its temporary directories;
    --keep leaves them. Progress goes to stderr (none with --json).
    """
    from kafkaref.chaos.conform import report, runner
    from kafkaref.spark_checks.checker import history_checker

    if list_checks:
        click.echo(_list_checks())
        return
    compared = [report.load_json(p) for p in compare]
    if not bootstrap:
        if compared and report_dir:
            import os

            os.makedirs(report_dir, exist_ok=True)
            with open(os.path.join(report_dir, "report.html"), "w") as f:
                f.write(report.card(compared))
            with open(os.path.join(report_dir, "report.md"), "w") as f:
                f.write(report.markdown(compared))
            click.echo(f"card of {len(compared)} results in {report_dir}/report.html (.md)")
            return
        if not (peer or cluster_dir):
            raise click.UsageError("give --bootstrap, --peer or --cluster-dir (or --compare "
                                   "with --report)")
    if sum(bool(x) for x in (bootstrap, peer, cluster_dir)) > 1:
        raise click.UsageError("give one of --bootstrap, --peer and --cluster-dir")
    if (peer or cluster_dir) and (kill_cmd or restart_cmd or tear_cmd):
        raise click.UsageError("--peer / --cluster-dir bring their own faults: leave out "
                               "--kill-cmd, --restart-cmd and --tear-cmd")
    if nodes is not None and not peer:
        raise click.UsageError("--nodes goes with --peer")
    skip_ = (*skip_, *(["protocol_fuzz"] if fuzz == 0 else []))
    try:
        checks = runner.select(tuple(only), tuple(skip_))
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc
    from kafkaref.chaos.conform.faults import ShellFaults

    def say(line: str) -> None:
        if not as_json:
            click.echo(line, err=True)

    def chaos_progress(step, done, total):
        say(f"  chaos_workload: checking the history: [{done}/{total}] {step}")

    options = {"fuzz": fuzz, "seed": seed, "faults": ShellFaults(kill_cmd, restart_cmd, tear_cmd),
               "deadline_scale": deadline_scale, "chaos_seconds": chaos_seconds,
               "chaos_check": history_checker(chaos_checker, progress=chaos_progress),
               "runs_dir": runs_dir, "keep": keep,
               "log": lambda text: [say(f"  chaos_workload: {line.strip()}")
                                    for line in text.splitlines()]}

    def progress(index, total, outcome):
        say(f"[{index + 1}/{total}] {outcome.name}: {outcome.status} "
            f"({outcome.duration_s:.1f} s)")

    def judge(address, default_label=None):
        return runner.run(address, checks, label=label or default_label, options=options,
                          timeout_s=timeout_s, replication_factor=replication_factor,
                          progress=progress, keep=keep)

    try:
        if peer or cluster_dir:
            result = _judge_peer(peer, nodes, cluster_dir, options, judge, say)
        else:
            result = judge(bootstrap)
    finally:
        options["faults"].close()  # what a fault command left running
    _show(result, as_json)
    if junit_path:
        with open(junit_path, "w") as f:
            f.write(report.junit(result))
    if report_dir:
        paths = report.write_report(result, report_dir, compared)
        say(f"report card: {paths['report.html']}")
    sys.exit(result.exit_code)


def _show(result, as_json: bool) -> None:
    """The verdicts on stdout: the table (one line when no check could start), or JSON."""
    import json

    from kafkaref.chaos.conform import report

    if as_json:
        click.echo(json.dumps(result.as_dict()))
    elif result.could_not_start:
        click.echo(f"could not judge {result.bootstrap}: {result.could_not_start}")
    else:
        click.echo(report.table(result))
        if result.cleanup:
            click.echo(f"on the broker: {result.cleanup}")
