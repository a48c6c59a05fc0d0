"""The one test clock: milliseconds that move only when a test moves them.

Every clock in kafkaref is a callable returning milliseconds (the core, the purgatories, the
timing wheel and the storage logs take one), so a test that controls time passes a ManualClock and
sets or advances `now_ms` itself: no sleeps, no wall-clock races.

Named apart from kafkaref.impl.clock.Clock, the broker's pair of readings (monotonic and wall): a
test drives a whole broker by giving it impl.clock.Clock(monotonic_ms=clock, wall_ms=clock) with
one ManualClock (or two).
"""

from __future__ import annotations


class ManualClock:
    def __init__(self, now_ms: int = 0):
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> int:
        """Move the clock forward by `ms` and return the new time."""
        self.now_ms += ms
        return self.now_ms
