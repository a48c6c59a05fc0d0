"""`kafkaref report RUN_DIR`: write report.html for a checked run (chaos/report.py renders it).

Exit codes: 0 written, 2 bad arguments (no history, no report.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from kafkaref.chaos.report import write_report


def _find_history(run_dir: Path) -> Path:
    for candidate in (run_dir / "history", run_dir):
        if (candidate / "meta.json").exists():
            return candidate
    raise click.BadParameter(f"{run_dir} holds no history (no meta.json in it or in history/)")


@click.command("report")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--history", "history_dir", type=click.Path(exists=True, file_okay=False),
              default=None, help="The history (default: RUN_DIR/history, else RUN_DIR).")
@click.option("--report", "report_json", type=click.Path(exists=True, dir_okay=False),
              default=None, help="The checker's report.json (default: RUN_DIR/report.json).")
def report_command(run_dir, history_dir, report_json):
    """Write RUN_DIR/report.html from a checked history (run `kafkaref check` first).

    Exit codes: 0 written, 2 bad arguments (no history, no report.json)."""
    run = Path(run_dir)
    history = Path(history_dir) if history_dir else _find_history(run)
    report_json = Path(report_json) if report_json else run / "report.json"
    if not report_json.exists():
        raise click.BadParameter(f"{report_json} not found: run `kafkaref check {history}` first")
    try:
        out = write_report(run, history, report_json)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise click.BadParameter(f"{report_json} is not a report: {error}") from None
    click.echo(str(out))
