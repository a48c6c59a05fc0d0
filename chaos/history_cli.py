"""`kafkaref history import FILE DIR` and `kafkaref history export DIR FILE`: between the JSON-lines
form people write and read and the Parquet history the checkers read.

Exit codes: 0 done, 2 bad input (the error names the line; an import that fails leaves nothing
behind, so it can be run again once the file is fixed).
"""

from __future__ import annotations

import click


class BadInput(click.ClickException):
    exit_code = 2  # as click's usage errors; 1 would read as "anomalies found" elsewhere


@click.group()
def history():
    """Import and export histories as JSON lines (one op per line; docs/histories.md)."""


@history.command("import")
@click.argument("source", type=click.Path(exists=True, dir_okay=False))
@click.argument("directory", type=click.Path(file_okay=False))
def import_command(source, directory):
    """Read the JSON-lines history SOURCE into a new history DIRECTORY (all or nothing)."""
    from kafkaref.chaos.history_store import import_jsonl
    from kafkaref.spec.history import HistoryError

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
    from kafkaref.chaos.history_store import export_jsonl
    from kafkaref.spec.history import HistoryError

    try:
        count = export_jsonl(directory, out)
    except (HistoryError, OSError) as error:
        raise BadInput(str(error)) from None
    click.echo(f"exported {count} ops to {out}")
