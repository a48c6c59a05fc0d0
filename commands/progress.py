"""Progress of slow commands on stderr, so a step of a minute is never a silent minute.

On a terminal a live line (rich's spinner, replaced as steps go by and gone at the end); anywhere
else (a CI log, a pipe) one plain line per step, with the seconds since the start; nothing at
all when quiet (--json: stdout carries the answer, stderr only errors).
"""

from __future__ import annotations

import sys
import time

import click


class Steps:
    """step(text) says what is being done now; use as a context manager."""

    def __init__(self, quiet: bool = False, stream=None):
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self._live = None
        self._task = None
        self._last = None

    def __enter__(self) -> Steps:
        if not self.quiet and self.stream.isatty():
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._live = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                  TimeElapsedColumn(), console=Console(file=self.stream),
                                  transient=True)
            self._live.__enter__()
            self._task = self._live.add_task("starting", total=None)
        return self

    def step(self, text: str) -> None:
        if self.quiet or text == self._last:
            return
        self._last = text
        if self._live is not None:
            self._live.update(self._task, description=text)
        else:
            click.echo(f"[{time.monotonic() - self.started:5.0f} s] {text}", file=self.stream)

    def note(self, text: str) -> None:
        """A line that stays (the live line is drawn again below it)."""
        if self.quiet:
            return
        if self._live is not None:
            self._live.console.print(text, highlight=False, markup=False)
        else:
            click.echo(text, file=self.stream)

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None
