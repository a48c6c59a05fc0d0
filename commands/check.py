"""`kafkaref synth` and `kafkaref check`: the command-line front of spark_checks/.

check exits 0 when the history is valid, 1 when it holds anomalies the configuration disallows,
2 when the checker could not decide (unreadable history, Spark failure) or the arguments are bad.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kafkaref.history.format import CheckConfig, HistoryError
from kafkaref.spark_checks.synth import INJECTIONS

_BOOLEANS = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}


def _parse_config(items: tuple[str, ...]) -> CheckConfig | None:
    """--config key=value (repeatable) or --config FILE.json."""
    if not items:
        return None
    raw: dict = {}
    for item in items:
        if "=" not in item:
            try:
                raw.update(json.loads(Path(item).read_text()))
            except (OSError, json.JSONDecodeError) as error:
                raise click.BadParameter(f"{item}: not key=value nor a JSON file ({error})") from None
            continue
        key, value = item.split("=", 1)
        raw[key.strip()] = _BOOLEANS.get(value.strip().lower(), value.strip()) if key.strip() in (
            "idempotence", "unclean_election") else value.strip()
    try:
        return CheckConfig.from_dict(raw)
    except (HistoryError, TypeError, ValueError) as error:
        message = error.args[0] if error.args else str(error)
        raise click.BadParameter(str(message), param_hint="--config") from None


def _print_result(console, result, report_path: Path) -> None:
    """The verdict for people: a table of the anomalies when the checker decided; one line
    saying why when it could not (a table of zeros would read as "nothing found")."""
    from rich.table import Table

    from kafkaref.chaos.report import clip

    data = result.to_json()
    if result.valid == "unknown":  # plain lines: rich would wrap them at the terminal width
        click.echo(f"could not decide: {result.error}")
        click.echo(f"report: {report_path}")
        return
    table = Table(title=f"kafkaref check: valid = {result.valid}")
    for column in ("anomaly", "count", "allowed", "first example"):
        table.add_column(column, justify="right" if column == "count" else "left")
    for name, entry in data["anomalies"].items():
        example = json.dumps(entry["examples"][0]) if entry["examples"] else ""
        style = "red" if entry["count"] and not entry["allowed"] else None
        table.add_row(name, f"{entry['count']:,}", "yes" if entry["allowed"] else "no",
                      clip(example, 80), style=style)
    console.print(table)
    console.print(f"configuration judged: {data['config']}", highlight=False, markup=False)
    integrity = data.get("integrity")
    if integrity and not integrity["verified"]:
        console.print(f"files {integrity['note']}", highlight=False, markup=False)
    console.print(f"report: {report_path}", highlight=False, markup=False)


def _history_path(ctx, param, value: str) -> str:
    """A local directory that exists, or a URI (hdfs://, s3a://, ...) Spark will read."""
    if "://" in value and not value.startswith("file://"):
        return value
    if not Path(value.removeprefix("file://")).is_dir():
        raise click.BadParameter(f"{value!r} is not a history directory")
    return value


def _history_paths(ctx, param, values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_history_path(ctx, param, value) for value in values)


def _is_remote(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def _report_path(path: str, report_path: str | None) -> Path:
    if report_path:
        return Path(report_path)
    if _is_remote(path):
        return Path("report.json")  # a remote history: the report goes to the working directory
    return Path(path.removeprefix("file://")) / "report.json"


@click.command()
@click.argument("paths", nargs=-1, required=True, callback=_history_paths, metavar="PATH...")
@click.option("--master", default="local[2]", show_default=True,
              help="Spark master: local[N], spark://HOST:PORT, yarn, k8s://...")
@click.option("--config", "config_items", multiple=True, metavar="KEY=VALUE|FILE",
              help="The configuration to judge (acks, idempotence, unclean_election, mode); "
                   "default: the one in each history's meta.json.")
@click.option("--examples", default=10, show_default=True, type=click.IntRange(0, 10_000),
              help="Example cases kept per anomaly.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="Where to write report.json (default: PATH/report.json; one history only).")
@click.option("--html", is_flag=True,
              help="Also write report.html next to each report.json (plots, anomaly examples).")
@click.option("--twin", is_flag=True, help="Use the in-memory Python twin instead of Spark.")
@click.option("--json", "as_json", is_flag=True,
              help="Print each report.json on stdout (one JSON object a line) instead of the "
                   "table, and no progress on stderr.")
def check(paths, master, config_items, examples, report_path, html, twin, as_json):
    """Check the histories at PATH... for every anomaly in the catalogue, in one Spark session
    (started once), writing a report.json for each.

    Before any anomaly, each history's files are checked against the manifest its writer left
    in meta.json, and its rows against the format's structural rules: a history failing
    either is "corrupt history" (one line naming the file and what is wrong), never judged. A
    history written before manifests is judged and called unverified (docs/histories.md).

    Exit code: 0 all valid, 1 some history holds anomalies its configuration disallows, 2 some
    history could not be decided (corrupt or unreadable, a Spark failure; or bad arguments)."""
    from rich.console import Console

    from kafkaref.commands.progress import Steps

    if report_path and len(paths) > 1:
        raise click.BadParameter("--report names one file: give one history only, or let each "
                                 "report go to PATH/report.json", param_hint="--report")
    if html and any(_is_remote(path) for path in paths):
        raise click.BadParameter("--html needs local histories (it reads their Parquet files)",
                                 param_hint="--html")
    config = _parse_config(config_items)
    codes = []
    with Steps(quiet=as_json) as steps:
        run = _twin_runner(config, examples) if twin else _spark_runner(
            master, config, examples, steps)
        for number, path in enumerate(paths, 1):
            where = f"[{number}/{len(paths)}] {path}: " if len(paths) > 1 else ""
            steps.step(f"{where}checking")
            result = run(path, where)
            out = _report_path(path, report_path)
            out.write_text(result.dumps() + "\n")
            if as_json:
                click.echo(json.dumps(json.loads(result.dumps())))
            else:
                _print_result(Console(), result, out)
            if html:
                from kafkaref.chaos.report import write_report

                steps.step(f"{where}writing report.html")
                page = write_report(out.parent, Path(path.removeprefix("file://")), out)
                if not as_json:
                    Console().print(f"html: {page}")
            codes.append(result.exit_code)
    sys.exit(max(codes))


def _twin_runner(config, examples):
    from kafkaref.history.store import history_config
    from kafkaref.spark_checks import twin as twin_checker

    def run(path, where):
        own = config
        if own is None:
            try:
                own = history_config(path)
            except HistoryError:
                pass
        return twin_checker.check(path, own, examples)

    return run


def _spark_runner(master, config, examples, steps):
    from kafkaref.spark_checks import job, session

    steps.step(f"starting Spark ({master})")
    spark = session.get_session(master)

    def run(path, where):
        def show(name, done, total):
            steps.step(f"{where}[{done}/{total}] {name}")

        return job.check(spark, path, config, examples, progress=show)

    return run


def _parse_rates(items: tuple[str, ...], rate_all: float | None) -> dict:
    rates = {kind: rate_all for kind in INJECTIONS} if rate_all else {}
    for item in items:
        kind, _, value = item.partition("=")
        try:
            rates[kind] = float(value)
        except ValueError:
            raise click.BadParameter(f"{item}: expected KIND=RATE", param_hint="--inject") from None
    return rates


_KINDS_EPILOG = "\b\nInjection kinds (KIND -> the anomaly that must report it):\n" + "\n".join(
    f"  {kind}" + (f" -> {anomaly}" if anomaly != kind else "")
    for kind, anomaly in INJECTIONS.items())


@click.command(epilog=_KINDS_EPILOG)
@click.argument("path", type=click.Path(exists=False, file_okay=False))
@click.option("--sends", default=100_000, show_default=True, type=click.IntRange(1),
              help="Sends to generate (rounded up to whole rounds of producers).")
@click.option("--partitions", default=4, show_default=True, type=click.IntRange(1))
@click.option("--producers", default=4, show_default=True, type=click.IntRange(1))
@click.option("--consumers", default=2, show_default=True, type=click.IntRange(1))
@click.option("--poll-every", default=4, show_default=True, type=click.IntRange(1),
              help="Rounds of a partition between its consumer's polls.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--inject", "inject_items", multiple=True, metavar="KIND=RATE",
              help="Inject an anomaly kind (listed below) at a rate in [0, 1] (repeatable).")
@click.option("--rate", "rate_all", type=click.FloatRange(0, 0.1), default=None,
              help="Inject every kind at this rate.")
@click.option("--config", "config_items", multiple=True, metavar="KEY=VALUE|FILE",
              help="Configuration recorded in meta.json (default: acks=all, idempotent, assign).")
def synth(path, sends, partitions, producers, consumers, poll_every, seed, inject_items,
          rate_all, config_items):
    """Write a seeded synthetic history of a correct log to PATH, with injected anomalies and
    their ground truth (PATH/ground_truth.jsonl)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from kafkaref.spark_checks.synth import SynthSpec, generate

    if (Path(path) / "meta.json").exists():
        raise click.BadParameter(f"{path} already holds a history", param_hint="PATH")
    try:
        spec = SynthSpec(sends=sends, partitions=partitions, producers=producers,
                         consumers=consumers, poll_every=poll_every, seed=seed,
                         rates=_parse_rates(inject_items, rate_all),
                         config=_parse_config(config_items) or CheckConfig())
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    console = Console(stderr=True)
    console.print(f"seed {seed}")
    with Progress(TextColumn("writing"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                  TimeRemainingColumn(), console=console, transient=True) as progress:
        task = progress.add_task("synth", total=spec.rounds)
        summary = generate(spec, path, lambda done, total: progress.update(task, completed=done))
    Console().print_json(json.dumps({"path": str(path), **summary}))
