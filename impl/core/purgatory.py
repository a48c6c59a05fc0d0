"""Purgatory: delayed operations watched by key, completed by triggers or expired by the timer.

Kafka's DelayedOperationPurgatory, single-threaded. The contract that matters:

- `try_complete_else_watch(op, keys)`: try; if not done, watch every key; try AGAIN (a trigger
  that fired between the first try and the watch would otherwise be lost); only then arm the
  timer. In Kafka the second try closes a race between threads; here it keeps the same order of
  checks so the core behaves like Kafka's when stepped in lockstep with model/.
- `check_and_complete(key)`: a trigger (an append, an hw change, a leadership change) retries
  every operation watching the key.
- `advance_clock(now)`: operations whose deadline passed are force-completed, then
  `on_expiration` runs (as in Kafka: on_complete builds the answer; on_expiration is the hook).

An operation completes exactly once: `force_complete` is the only way to completion and flips
`completed` first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

from kafkaref.impl.core.timing_wheel import TimerTask, TimingWheelTimer


class DelayedOperation:
    """Subclasses implement try_complete (call force_complete when satisfied) and on_complete."""

    def __init__(self, delay_ms: int):
        self.delay_ms = delay_ms
        self.completed = False
        self.expired = False
        self._timer_task: TimerTask | None = None
        self._timer: TimingWheelTimer | None = None

    def try_complete(self) -> bool:
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def on_expiration(self) -> None:
        """Hook run after an expiry-driven completion (metrics in Kafka)."""

    def force_complete(self) -> bool:
        if self.completed:
            return False
        self.completed = True
        if self._timer_task is not None and self._timer is not None:
            self._timer.cancel(self._timer_task)
        self.on_complete()
        return True

    def _expire(self) -> None:
        self.expired = True
        if self.force_complete():
            self.on_expiration()


class Purgatory:
    def __init__(self, name: str, clock: Callable[[], int], timer=None):
        self.name = name
        self.clock = clock
        self.timer = timer if timer is not None else TimingWheelTimer(clock)
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        """True if `op` completed now; otherwise it is watched on keys and its timer armed."""
        keys = list(keys)
        if op.try_complete():
            return True
        for key in keys:
            if op.completed:
                return False
            self._watchers.setdefault(key, []).append(op)
        if op.completed or op.try_complete():
            return op.completed
        if op.delay_ms <= 0:  # Kafka's timer runs an already expired task at once
            op._expire()
            return True
        op._timer = self.timer
        op._timer_task = self.timer.add(op.delay_ms, op)
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Retry every operation watching key; return how many completed now."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        remaining = []
        for op in list(ops):
            if op.completed:
                continue
            if op.try_complete():
                completed += 1
            else:
                remaining.append(op)
        current = self._watchers.get(key, [])
        # ops added to this key during the callbacks above are kept too
        added = [op for op in current[len(ops):] if not op.completed]
        if remaining or added:
            self._watchers[key] = remaining + added
        else:
            self._watchers.pop(key, None)
        return completed

    def complete_all(self, key: Hashable) -> int:
        """Force every operation on key to complete now (e.g. leadership lost)."""
        ops = self._watchers.pop(key, [])
        return sum(1 for op in ops if op.force_complete())

    def next_expiration_ms(self) -> int | None:
        """No operation expires before this time (None: none is pending); see the timer's."""
        return self.timer.next_expiration_ms()

    def advance_clock(self, now_ms: int | None = None) -> int:
        """Expire operations whose deadline passed; return how many expired."""
        expired = 0
        for op in self.timer.advance_clock(now_ms):
            if not op.completed:
                op._expire()
                expired += 1
        self._purge_completed()
        return expired

    def _purge_completed(self) -> None:
        """Drop completed operations from every watch list. An operation watched on several keys
        completes through one of them and stays on the others' lists; a key that always has a
        live watcher (an idle partition in every follower fetch) would otherwise keep every
        completed operation for ever: unbounded memory, and ever longer walks. Kafka purges the
        same way (DelayedOperationPurgatory.purgeCompleted); here on every clock advance."""
        for key in list(self._watchers):
            live = [op for op in self._watchers[key] if not op.completed]
            if live:
                self._watchers[key] = live
            else:
                del self._watchers[key]

    def watch_entries(self) -> int:
        """Entries on all watch lists, completed ones included (bounded after a clock advance)."""
        return sum(len(ops) for ops in self._watchers.values())

    def watched(self, key: Hashable) -> int:
        return sum(1 for op in self._watchers.get(key, ()) if not op.completed)

    def delayed(self) -> int:
        """Operations still pending in the timer (Kafka's numDelayed)."""
        return len(self.timer)
