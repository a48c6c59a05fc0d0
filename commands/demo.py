"""`kafkaref demo`: the main job.

An embedded cluster of 3 broker processes (RF 3, min ISR 2, unclean election off), wired through
a TCP proxy mesh, runs the chaos workload (chaos/workload.py) while the nemesis kills, pauses and
partitions brokers for about 90 seconds; then everything is healed, every partition is read from
the start, and the Spark job (spark_checks/) checks the recorded history: a table of ops,
acknowledged sends, lost writes, duplicates and every anomaly, and the path of report.html.
Then a short run with mutant M2 (acks=all answered before the followers have the batch) must
come out invalid with a lost write named: the checks see a broken broker.

`kafkaref demo --spec` is the specification check (every generation of the replication protocol
explored, which invariant each breaks). Exit code 0 when both verdicts are as expected.
"""

import click

MUTANT_RUN_S = 24


@click.command()
@click.option("--spec", is_flag=True,
              help="Explore the replication spec's variants instead (no cluster).")
@click.option("--time-limit", type=click.FloatRange(5, 3600), default=90, show_default=True,
              help="Seconds of faults in the main run.")
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--runs-dir", default="runs", show_default=True, type=click.Path(file_okay=False))
def demo(spec, time_limit, seed, runs_dir) -> None:
    """Run the main job and print its verdict."""
    if spec:
        from kafkaref.commands.explore import run_demo

        raise SystemExit(run_demo())
    raise SystemExit(run_chaos_demo(time_limit, seed, runs_dir))


def run_chaos_demo(time_limit: float, seed: int, runs_dir: str) -> int:
    import time

    import attrs

    from kafkaref.chaos.nemesis import hunting_schedule
    from kafkaref.chaos.run import RunOptions, run
    from kafkaref.commands.chaos import print_summary
    from kafkaref.spark_checks.checker import history_checker
    from kafkaref.spark_checks.session import run_session

    started = time.monotonic()

    def log(message: str) -> None:
        click.echo(f"[{time.monotonic() - started:5.0f}s] {message}", err=True)

    log("kafkaref demo: 3 brokers (RF 3, min ISR 2), workload under kill, pause and partition "
        "faults, then the Spark check (spec exploration: kafkaref demo --spec)")
    log("starting Spark in the background of the run")
    check = history_checker("spark", spark=_Later(_start_spark(run_session)))
    options = RunOptions(seed=seed, time_limit_s=time_limit, runs_dir=runs_dir)
    main = run(options, log=log, check=check)
    print_summary(main)
    log(f"then the same workload with mutant M2 for {MUTANT_RUN_S}s: it must be caught")
    mutant = run(attrs.evolve(options, time_limit_s=MUTANT_RUN_S, mutants=("M2",),
                              schedule=tuple(hunting_schedule(MUTANT_RUN_S))),
                 log=log, check=check)
    print_summary(mutant)
    lost = (mutant.report.get("anomalies") or {}).get("lost_write", {})
    caught = mutant.exit_code == 1 and lost.get("count", 0) > 0
    click.echo(f"main run: {'valid' if main.exit_code == 0 else 'NOT valid'} "
               f"({main.run_dir}); mutant M2: "
               + (f"caught, {lost['count']} acknowledged writes lost, e.g. "
                  f"{lost['examples'][0]}" if caught else "NOT caught as a lost write")
               + f"; {time.monotonic() - started:.0f}s in all")
    return 0 if main.exit_code == 0 and caught else 1


def _start_spark(factory):
    """Start the JVM while the cluster runs (it takes tens of seconds on a loaded machine)."""
    import concurrent.futures

    return concurrent.futures.ThreadPoolExecutor(1).submit(factory)


class _Later:
    """A Spark session that is a future until first used."""

    def __init__(self, future):
        self._future = future

    def __getattr__(self, name):
        return getattr(self._future.result(), name)
