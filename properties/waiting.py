"""The one wait-until helper for tests that watch real threads or processes.

Tests wait for a condition, never for a duration: a loaded 2-core machine makes any fixed sleep
either too short (flaky) or too long (slow). The timeout only bounds a failing run; it is no
speed assertion.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(done: Callable[[], object], *, step: Callable[[], object] | None = None,
               timeout_s: float = 30.0, what: str = "condition",
               interval_s: float = 0.01) -> None:
    """Return as soon as done() is true; raise AssertionError after timeout_s.

    Between checks, call step() (for example a consumer's poll, which itself waits) or else sleep
    interval_s.
    """
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        if step is not None:
            step()
        else:
            time.sleep(interval_s)
