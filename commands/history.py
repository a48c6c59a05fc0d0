"""`kafkaref history`: histories as files. import/export between the JSON-lines form people write
and read and the Parquet history the checkers read; merge runs (a soak) into one history; check a
directory of runs as one history.

Exit codes: import, export, merge: 0 done, 2 bad input (the error says which file or line and
what is wrong; a failed import or merge leaves nothing behind, so it can be run again).
check: as `kafkaref check`: 0 valid, 1 anomalies the configuration disallows, 2 could not decide
(an unreadable, corrupt or incompatible run, a Spark failure) or bad arguments.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import click


class BadInput(click.ClickException):
    exit_code = 2  # as click's usage errors; 1 would read as "anomalies found" elsewhere


@click.group()
def history():
    """Histories as files: import and export JSON lines (one op per line), merge the runs of a
    soak into one history, check a directory of runs as one history (docs/histories.md)."""


@history.command("import")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.argument("directory", type=click.Path(file_okay=False))
def import_command(source, directory):
    """Read the JSON-lines history SOURCE into a new history DIRECTORY (all or nothing)."""
    from kafkaref.history.format import HistoryError
    from kafkaref.history.store import import_jsonl

    try:
        count = import_jsonl(source, directory)
    except HistoryError as error:
        raise BadInput(f"{source}: {error}") from None
    click.echo(f"imported {count} ops into {directory}")


@history.command("export")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.argument("out", type=click.Path(dir_okay=False, writable=True))
def export_command(directory, out):
    """Write the history at DIRECTORY as JSON lines to OUT (a header line, then one op a line)."""
    from kafkaref.history.format import HistoryError
    from kafkaref.history.store import export_jsonl

    try:
        count = export_jsonl(directory, out)
    except (HistoryError, OSError) as error:
        raise BadInput(str(error)) from None
    click.echo(f"exported {count} ops to {out}")


_MERGE_HELP = """\b
Each RUN is a history (a directory holding meta.json), a run of `kafkaref chaos run` (its
history/ is taken) or a directory of runs (a soak's: every run or history directly in it, by
name, which for run ids is the order they ran in). Runs are placed one after the other:
  - topics of run k become r<k>/<topic> (partitions keep their numbers);
  - op indexes follow on; processes (but the nemesis, -1) are shifted by P_k,
    clear of every earlier run, and values (block << 32 | sequence) with them:
    the chaos workload's value = process << 32 | sequence stays true; blocks
    outside the run's process range (stray garbage values) take free blocks;
  - times: run k starts 1 ns after run k-1's last event.
Every run must be judged under the same configuration (acks, idempotence, ...).
meta.json's merged_from lists each run's source and shifts. Streamed (bounded memory).

\b
Exit codes: 0 merged, 2 a missing, corrupt or incompatible run, or OUT not empty."""


@history.command("merge", epilog=_MERGE_HELP)
@click.argument("out", type=click.Path(file_okay=False))
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
def merge_command(out, runs):
    """Merge the histories of RUN... into one new history OUT, each run's topics, processes,
    op indexes, values and times kept apart (docs/histories.md, "Merging runs")."""
    summary = _merge(runs, out)
    click.echo(f"merged {summary.runs} runs into {summary.out}: {summary.ops:,} ops, "
               f"{summary.records:,} records, {summary.span_ns / 60e9:.1f} minutes of history, "
               f"in {summary.seconds:.1f} s ({summary.records / max(summary.seconds, 1e-9):,.0f} "
               "records/s)")


def _progress_printer():
    """Progress on stderr, once a second (nothing for what takes less)."""
    shown = {"at": time.monotonic(), "line": False}

    def progress(phase, done, total):
        now = time.monotonic()
        if now - shown["at"] >= 1 or (done == total and shown["line"]):
            shown.update(at=now, line=True)
            percent = 100 * done / total if total else 100
            end = "\n" if done == total else ""
            click.echo(f"\rmerge: {phase} {done:,}/{total:,} rows ({percent:.0f}%)  {end}",
                       err=True, nl=False)

    return progress


def _merge(runs, out, quiet=False):
    """merge() with progress on stderr (none when quiet) and errors as exit 2."""
    from kafkaref.history.format import HistoryError
    from kafkaref.history.merge import merge

    try:
        summary = merge(runs, out, progress=None if quiet else _progress_printer())
    except HistoryError as error:
        raise BadInput(str(error)) from None
    _note_clock_faults(summary)
    return summary


def _note_clock_faults(summary):
    if summary.clock_fault_runs and summary.clock_fault_runs < summary.runs:
        click.echo(f"note: {summary.clock_fault_runs} of {summary.runs} runs had clock faults, "
                   "which switch the latency checks (early_empty_fetch, hung_request) off for "
                   "the whole merged history: check those runs apart to judge them",
                   err=True)


_CHECK_HELP = """\b
The runs are merged as `kafkaref history merge` merges them, into a temporary
directory (under $TMPDIR; --merged DIR instead writes it there and keeps it),
and the merged history is checked as `kafkaref check` checks one: the copy is
quick (seconds per million records) and Spark reads one history fastest.
report.json lists in merged_from which run each r<k> label is.
\b
Exit codes: 0 valid, 1 anomalies the configuration disallows, 2 could not decide
(a missing, corrupt or incompatible run, a Spark failure) or bad arguments."""


@history.command("check", epilog=_CHECK_HELP)
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option("--merged", type=click.Path(file_okay=False), default=None,
              help="Write the merged history here and keep it (default: a temporary one).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False), default=None,
              help="Where to write report.json (default: DIR/report.json for one "
                   "directory of runs, MERGED/report.json with --merged; else required: a "
                   "run's own report.json is its own verdict).")
@click.option("--html", is_flag=True, help="Also write report.html (needs --merged: the page "
                                           "shows the history's ops).")
@click.option("--master", default="local[2]", show_default=True,
              help="Spark master: local[N], spark://HOST:PORT, ...")
@click.option("--config", "config_items", multiple=True, metavar="KEY=VALUE|FILE",
              help="The configuration to judge (default: the one the runs were recorded under).")
@click.option("--examples", default=10, show_default=True, type=click.IntRange(0, 10_000),
              help="Example cases kept per anomaly.")
@click.option("--twin", is_flag=True, help="Use the in-memory Python twin instead of Spark "
                                           "(small histories only).")
@click.option("--json", "as_json", is_flag=True,
              help="Print report.json on stdout instead of the table, and no progress.")
@click.pass_context
def check_command(ctx, runs, merged, report_path, html, master, config_items, examples,
                  twin, as_json):
    """Judge RUN... (runs, histories, or a directory of runs such as a soak's) as one history:
    every anomaly of the catalogue over all of them at once, one report.json."""
    if html and merged is None:
        raise click.BadParameter("report.html shows the history's ops: give --merged DIR too",
                                 param_hint="--html")
    report = Path(report_path) if report_path else _default_report(runs, merged)
    _check_a_copy(ctx, runs, merged, report, html, master, config_items, examples, twin,
                  as_json)


def _default_report(runs, merged) -> Path:
    """DIR/report.json for one directory of runs, MERGED/report.json with --merged; otherwise
    there is no right place (a run's or a history's own report.json is its verdict alone, and
    the working directory is nobody's): --report must say."""
    from kafkaref.history.merge import is_history_or_run

    only = Path(runs[0])
    if len(runs) == 1 and only.is_dir() and not is_history_or_run(only):
        return only / "report.json"
    if merged is not None:
        return Path(merged) / "report.json"
    raise click.UsageError("where should the verdict go? Give --report FILE (or --merged DIR "
                           "to keep the merged history and its report.json): a run's own "
                           "report.json is its own verdict, not overwritten")


def _check_a_copy(ctx, runs, merged, report, html, master, config_items, examples, twin,
                  as_json):
    """Merge into merged (or a temporary directory), then `kafkaref check` it."""
    from kafkaref.commands.check import check
    from kafkaref.history.store import read_meta

    scratch = None
    if merged is None:
        scratch = Path(tempfile.mkdtemp(prefix="kafkaref-merged-"))
        merged = scratch / "history"
    try:
        summary = _merge(runs, merged, quiet=as_json)
        if not as_json:
            click.echo(f"merged {summary.runs} runs: {summary.records:,} records, "
                       f"{summary.span_ns / 60e9:.1f} minutes of history "
                       f"({summary.seconds:.1f} s)", err=True)
        try:
            ctx.invoke(check, paths=(str(merged),), master=master, config_items=config_items,
                       examples=examples, report_path=str(report), html=html, twin=twin,
                       as_json=as_json)
        finally:
            if report.exists():
                data = json.loads(report.read_text())
                data["merged_from"] = read_meta(merged)["merged_from"]
                report.write_text(json.dumps(data, indent=2) + "\n")
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
