"""`kafkaref explore`: exhaustive exploration of a spec variant (or of the model) from the shell,
and the spec part of `kafkaref demo`: the flags, the progress line and the printing around
spec/check.py, spec/explore.py and model/explore_target.py.

Exit codes: 0 every invariant holds, 1 an invariant is violated, 2 bad arguments.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click
import networkx as nx
from rich.console import Console
from rich.table import Table

from kafkaref.spec import render
from kafkaref.spec.check import CLASSIC_INVARIANTS, run_spec
from kafkaref.spec.explore import ExploreResult, ExploreStats, explore, format_trace
from kafkaref.spec.invariants import INVARIANTS
from kafkaref.spec.machine import initial_states, make_successors
from kafkaref.spec.state import Bounds
from kafkaref.spec.variants import VARIANTS


class ProgressLine:
    """A live progress line on stderr: redrawn in place on a terminal, a plain line every few
    seconds otherwise (CI logs), nothing for runs that finish quickly."""

    def __init__(self, label: str, quiet: bool = False, every_seconds: float = 5.0):
        self.label = label
        self.quiet = quiet
        self.every_seconds = every_seconds
        self.console = Console(stderr=True)
        self.last_print = time.monotonic()

    def __call__(self, stats: ExploreStats) -> None:
        if self.quiet:
            return
        text = (
            f"{self.label}: {stats.distinct_states:,} states, depth {stats.depth}, "
            f"{stats.states_per_second:,.0f} states/s, {stats.wall_seconds:.0f} s"
        )
        if self.console.is_terminal:
            self.console.file.write("\r" + text + "\x1b[K")
            self.console.file.flush()
        elif time.monotonic() - self.last_print >= self.every_seconds:
            self.console.print(text, highlight=False)
            self.last_print = time.monotonic()

    def done(self) -> None:
        if not self.quiet and self.console.is_terminal:
            self.console.file.write("\r\x1b[K")
            self.console.file.flush()


def result_json(result: ExploreResult, describe: Callable[[object], str], extra: dict) -> dict:
    violation = result.violation
    return {
        **extra,
        "result": "violation" if violation else ("ok" if result.complete else "incomplete"),
        "invariant": violation.invariant if violation else None,
        "counterexample_states": violation.length if violation else None,
        "distinct_states": result.distinct_states,
        "states_generated": result.states_generated,
        "depth": result.depth,
        "terminal_states": result.deadlocks,
        "wall_seconds": round(result.wall_seconds, 3),
        "states_per_second": round(result.states_per_second, 1),
        "trace": [{"action": step.action, "state": describe(step.state)} for step in violation.trace]
        if violation
        else None,
    }


def export_graph(graph: nx.DiGraph, path: Path, describe: Callable[[object], str]) -> None:
    """Write the explored state graph as GraphML (.graphml) or DOT (.dot), states as labels."""
    ids = {state: number for number, state in enumerate(graph.nodes)}
    plain = nx.DiGraph()
    for state, number in ids.items():
        plain.add_node(number, label=describe(state))
    for source, target, data in graph.edges(data=True):
        plain.add_edge(ids[source], ids[target], label=data.get("action", ""))
    if path.suffix == ".dot":
        nx.nx_pydot.write_dot(plain, path)
    else:
        nx.write_graphml(plain, path)


def _load_model_target(options: dict):
    try:
        from kafkaref.model.explore_target import build
    except ImportError as error:
        raise click.UsageError(f"--target model is not available: {error}") from None
    return build(options)


@click.command(name="explore", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--target",
    type=click.Choice(["spec", "model"]),
    default="spec",
    show_default=True,
    help="What to explore: the abstract spec, or the reference model (model/) with its refinement checks.",
)
@click.option(
    "--variant",
    type=click.Choice(list(VARIANTS)),
    default="kip320",
    show_default=True,
    help="Protocol generation (spec target). See spec/SPEC.md for what each one changes.",
)
@click.option("--replicas", type=click.IntRange(1, 5), default=3, show_default=True, help="Number of replicas.")
@click.option("--log-size", type=click.IntRange(1, 6), default=2, show_default=True, help="Offsets per log.")
@click.option("--max-records", type=click.IntRange(1, 6), default=2, show_default=True, help="Records ever written.")
@click.option(
    "--max-epoch", type=click.IntRange(0, 6), default=2, show_default=True, help="Largest leader epoch (epochs 0..E)."
)
@click.option(
    "--invariant",
    "invariant_names",
    multiple=True,
    type=click.Choice(list(INVARIANTS)),
    help="Check only this invariant (repeatable). Default: all of them.",
)
@click.option("--max-states", type=click.IntRange(1), default=None, help="Stop after this many distinct states.")
@click.option(
    "--graph",
    "graph_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the state graph (.graphml or .dot). Keeps every edge in memory: small bounds only.",
)
@click.option("--ticks", type=click.IntRange(0, 5), default=1, show_default=True, help="Model target: lag-time ticks allowed.")
@click.option("--crashes", type=click.IntRange(0, 3), default=1, show_default=True, help="Model target: broker crashes allowed.")
@click.option("--reads", type=click.IntRange(0, 3), default=1, show_default=True, help="Model target: consumer reads allowed.")
@click.option("--min-insync-replicas", type=click.IntRange(1, 5), default=None, help="Model target: min.insync.replicas (default min(2, replicas)).")
@click.option("--unclean", is_flag=True, help="Model target: allow unclean leader election.")
@click.option(
    "--bug",
    "bugs",
    multiple=True,
    type=click.Choice(["truncate-to-hw", "hw-without-maximal-isr", "hw-under-min-isr", "read-above-hw"]),
    help="Model target: switch on a deliberate flaw from docs/bugs.md (repeatable).",
)
@click.option("--refinement", is_flag=True, help="Model target: also check every step maps onto spec steps (slower).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--quiet", is_flag=True, help="No progress line.")
def explore_command(
    target,
    variant,
    replicas,
    log_size,
    max_records,
    max_epoch,
    invariant_names,
    max_states,
    graph_path,
    ticks,
    crashes,
    reads,
    min_insync_replicas,
    unclean,
    bugs,
    refinement,
    output_format,
    quiet,
):
    """Explore every reachable state breadth-first and check the invariants.

    On a violation, prints the shortest counterexample step by step and exits 1; exits 0 when
    every invariant holds in every reachable state, 2 on bad arguments.
    """
    if graph_path is not None and graph_path.suffix not in (".graphml", ".dot"):
        raise click.BadParameter("the graph file must end in .graphml or .dot", param_hint="--graph")
    options = dict(
        variant=variant, replicas=replicas, log_size=log_size, max_records=max_records, max_epoch=max_epoch
    )
    progress = ProgressLine(f"{target} {variant}", quiet=quiet or output_format == "json")
    if target == "spec":
        bounds = Bounds(replicas, log_size, max_records, max_epoch)
        starts, successors = initial_states(bounds), make_successors(bounds, variant)
        invariants = {n: INVARIANTS[n] for n in (invariant_names or INVARIANTS)}
        describe, diff = render.describe, render.diff
    else:
        model_options = dict(
            options, ticks=ticks, crashes=crashes, reads=reads, unclean=unclean, bugs=bugs, refinement=refinement
        )
        if min_insync_replicas is not None:
            if min_insync_replicas > replicas:
                raise click.BadParameter("cannot exceed --replicas", param_hint="--min-insync-replicas")
            model_options["min_insync_replicas"] = min_insync_replicas
        options = model_options
        starts, successors, invariants, describe = _load_model_target(options)
        if invariant_names:
            unknown = set(invariant_names) - set(invariants)
            if unknown:
                raise click.BadParameter(f"not checked on the model: {', '.join(sorted(unknown))}", param_hint="--invariant")
            invariants = {n: invariants[n] for n in invariant_names}
        diff = None
    result = explore(
        starts, successors, invariants, keep_graph=graph_path is not None, max_states=max_states, progress=progress
    )
    progress.done()
    if graph_path is not None:
        export_graph(result.graph, graph_path, describe)
    if output_format == "json":
        json.dump(result_json(result, describe, {"target": target, **options}), sys.stdout)
        sys.stdout.write("\n")
    else:
        _print_text(result, describe, diff, target, options, invariants)
    sys.exit(1 if result.violation else 0)



def _print_text(result, describe, diff, target, options, invariants) -> None:
    console = Console(highlight=False, soft_wrap=True)
    bounds = f"{options['replicas']} replicas, log size {options['log_size']}, {options['max_records']} records, epochs 0..{options['max_epoch']}"
    console.print(f"{target} {options['variant']} ({bounds}); invariants: {', '.join(invariants)}")
    if result.violation:
        console.print(format_trace(result.violation, describe, diff))
    elif result.complete:
        console.print("Every invariant holds in every reachable state.")
    else:
        console.print("Stopped at --max-states: no violation found so far, exploration incomplete.")
    console.print(
        f"{result.distinct_states:,} distinct states, {result.states_generated:,} generated, depth {result.depth}, "
        f"{result.wall_seconds:.1f} s ({result.states_per_second:,.0f} states/s)"
    )


def run_demo() -> int:
    """Explore every variant at the replica count where its bug shows; print one table.
    Returns 0 when every variant behaved as documented (the correct one holds, each buggy one
    is caught), 1 otherwise."""
    console = Console(highlight=False, width=None if Console().is_terminal else 120)
    console.print("kafkaref demo: checking every generation of Kafka's replication protocol (spec/)")
    table = Table(title="Exhaustive exploration, log size 2, 2 records, epochs 0..2")
    for column in ("variant", "replicas", "result", "violated invariant", "counterexample (states)", "distinct states", "depth", "seconds"):
        table.add_column(column, justify="left" if column in ("variant", "result", "violated invariant") else "right")
    as_documented = True
    for variant in VARIANTS.values():
        bounds = Bounds(variant.demo_replicas, 2, 2, 2)
        progress = ProgressLine(f"exploring {variant.name}")
        result = run_spec(variant.name, bounds, CLASSIC_INVARIANTS, progress=progress)
        progress.done()
        violation = result.violation
        caught = violation is not None
        as_documented &= caught == (variant.expected_violation is not None)
        table.add_row(
            variant.name,
            str(bounds.replicas),
            "[red]violated[/red]" if caught else "[green]holds[/green]",
            violation.invariant if caught else "-",
            str(violation.length) if caught else "-",
            f"{result.distinct_states:,}",
            str(result.depth),
            f"{result.wall_seconds:.1f}",
        )
    console.print(table)
    console.print("See a counterexample step by step: kafkaref explore --variant kip279 --invariant StrongIsr")
    console.print("Verdict: " + ("as documented" if as_documented else "[red]NOT as documented[/red]"))
    return 0 if as_documented else 1
