"""`kafkaref bench NAME [--json]`: the single entry point for benchmarks.

A benchmark is a function in the layer it measures that returns a BenchReport-shaped dict (its
only arguments are what this command hands it: a progress display, or what it needs from a layer
it must not import, see _arguments):

    {"title": str, "rows": [ {column: value, ...}, ... ], "figures": {name: number, ...}}

rows are printed as a table for people; --json prints {"bench": NAME, **figures, "rows": rows}
as one JSON object for machines. Every benchmark measures its own baseline in the same run and
reports the ratio, so numbers from different machines stay comparable.
"""

import importlib
import json
import sys

import click

BENCHMARKS = {
    "explore": "kafkaref.spec.bench:bench_explore",
    "broker": "kafkaref.impl.server.bench:bench_broker",
    "model": "kafkaref.model.bench:bench_model",
    "lockstep": "kafkaref.properties.lockstep_bench:bench_lockstep",
    "lockstep-threaded": "kafkaref.properties.threaded_bench:bench_lockstep_threaded",
    "storage": "kafkaref.impl.storage.bench:bench_storage",
    "spark": "kafkaref.spark_checks.bench:bench_spark",
    "chaos": "kafkaref.chaos.bench:bench_chaos",
    "peers": "kafkaref.chaos.peer_bench:bench_peers",
    "groups": "kafkaref.impl.core.groups_bench:bench_groups",
    "liveness": "kafkaref.impl.controller.bench:bench_liveness",
}


def _run(name: str) -> dict:
    module_name, attribute = BENCHMARKS[name].split(":")
    return getattr(importlib.import_module(module_name), attribute)(**_arguments(name))


def _arguments(name: str) -> dict:
    """The progress display of the benchmarks that show one (on stderr: stdout stays the table
    or the JSON); for chaos, the Spark side of its figures (chaos/ does not import
    spark_checks/)."""
    if name == "explore":
        from kafkaref.commands.explore import ProgressLine

        return {"progress_line": ProgressLine}
    if name in ("broker", "storage"):
        from rich.console import Console
        from rich.progress import Progress

        return {"progress": Progress(transient=True, console=Console(stderr=True))}
    if name == "chaos":
        from kafkaref.spark_checks.bench import check_speed

        return {"check_speed": check_speed}
    return {}


def _print_table(name: str, report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # a pipe or a CI log: wide enough for every column
        console = Console(width=200)
    rows = report.get("rows", [])
    if rows:
        table = Table(title=report.get("title", name))
        columns = list(rows[0])
        for column in columns:
            table.add_column(column, justify="right" if isinstance(rows[0][column], int | float) else "left")
        for row in rows:
            table.add_row(*(_format(row.get(c)) for c in columns))
        console.print(table)
    for key, value in report.get("figures", {}).items():
        console.print(f"{key}: {_format(value)}")


def _format(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


@click.command()
@click.argument("name", type=click.Choice(sorted(BENCHMARKS)))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object of figures instead of a table.")
def bench(name: str, as_json: bool) -> None:
    """Run benchmark NAME and print its figures, each with a baseline measured in the same run."""
    report = _run(name)
    if as_json:
        json.dump({"bench": name, **report.get("figures", {}), "rows": report.get("rows", [])}, sys.stdout)
        sys.stdout.write("\n")
    else:
        _print_table(name, report)
