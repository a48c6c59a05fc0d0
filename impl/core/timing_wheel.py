"""A hierarchical timing wheel (Kafka's purgatory timer) and its naive twin, a sorted list.

Why a wheel: purgatory holds many delayed operations that are usually completed long before they
expire; insert and cancel are O(1) and only buckets, not tasks, are kept in a priority queue.

Shape, as in Kafka's TimingWheel: level 0 has `wheel_size` buckets of `tick_ms`; each overflow
level is created lazily with tick = the interval of the level below (1 ms, 20 ms, 400 ms, 8 s ...).
A task lands in the finest level whose interval covers its expiration; when a coarse bucket
expires its tasks are re-inserted and fall to finer levels, so each task fires exactly at the
first `advance_clock(now)` with `now >= expiration_ms`.

Single-threaded: time is whatever the caller passes to `advance_clock` / the injected clock.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

from kafkaref.impl.core.config import TIMING_WHEEL_SLOTS, TIMING_WHEEL_TICK_MS


class TimerTask:
    """Handle of one scheduled task; `cancel()` is O(1)."""

    __slots__ = ("expiration_ms", "payload", "_bucket", "seq", "cancelled")

    def __init__(self, expiration_ms: int, payload: Any, seq: int):
        self.expiration_ms = expiration_ms
        self.payload = payload
        self.seq = seq
        self._bucket: _Bucket | None = None
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        if self._bucket is not None:
            self._bucket.remove(self)


class _Bucket:
    """Tasks that expire within one tick of one level; expiration_ms is the tick's start."""

    __slots__ = ("tasks", "expiration_ms")

    def __init__(self):
        self.tasks: dict[int, TimerTask] = {}
        self.expiration_ms = -1

    def add(self, task: TimerTask) -> None:
        self.tasks[task.seq] = task
        task._bucket = self

    def remove(self, task: TimerTask) -> None:
        if self.tasks.pop(task.seq, None) is not None:
            task._bucket = None

    def set_expiration(self, expiration_ms: int) -> bool:
        """True if the expiration changed (the bucket must be (re)queued)."""
        changed = self.expiration_ms != expiration_ms
        self.expiration_ms = expiration_ms
        return changed

    def flush(self) -> list[TimerTask]:
        tasks = list(self.tasks.values())
        for task in tasks:
            task._bucket = None
        self.tasks.clear()
        self.expiration_ms = -1
        return tasks


class _Wheel:
    def __init__(self, tick_ms: int, wheel_size: int, start_ms: int, queue: list, counter):
        self.tick_ms = tick_ms
        self.wheel_size = wheel_size
        self.interval_ms = tick_ms * wheel_size
        self.current_ms = start_ms - start_ms % tick_ms
        self.buckets = [_Bucket() for _ in range(wheel_size)]
        self.queue = queue  # shared heap of (expiration_ms, n, bucket) across all levels
        self.counter = counter
        self.overflow: _Wheel | None = None

    def add(self, task: TimerTask) -> bool:
        """Place the task; False if it is already due (expiration within the current tick)."""
        expiration = task.expiration_ms
        if expiration < self.current_ms + self.tick_ms:
            return False
        if expiration < self.current_ms + self.interval_ms:
            virtual_id = expiration // self.tick_ms
            bucket = self.buckets[virtual_id % self.wheel_size]
            bucket.add(task)
            if bucket.set_expiration(virtual_id * self.tick_ms):
                heapq.heappush(self.queue, (bucket.expiration_ms, next(self.counter), bucket))
            return True
        if self.overflow is None:
            self.overflow = _Wheel(
                self.interval_ms, self.wheel_size, self.current_ms, self.queue, self.counter
            )
        return self.overflow.add(task)

    def advance_clock(self, time_ms: int) -> None:
        if time_ms >= self.current_ms + self.tick_ms:
            self.current_ms = time_ms - time_ms % self.tick_ms
            if self.overflow is not None:
                self.overflow.advance_clock(self.current_ms)


class TimingWheelTimer:
    """Kafka's SystemTimer without its executor thread: `advance_clock` returns what expired."""

    def __init__(self, clock: Callable[[], int], tick_ms: int = TIMING_WHEEL_TICK_MS,
                 wheel_size: int = TIMING_WHEEL_SLOTS):
        self.clock = clock
        self._queue: list = []
        self._counter = itertools.count()
        self._seq = itertools.count()
        self._wheel = _Wheel(tick_ms, wheel_size, clock(), self._queue, self._counter)
        self._due: list[TimerTask] = []  # added already expired; returned by the next advance
        self._size = 0
        # Called with a new task's expiration when it is earlier than everything queued, so a
        # caller sleeping until next_expiration_ms() can wake up sooner (the server's ticker).
        self.on_earlier: Callable[[int], None] | None = None

    def __len__(self) -> int:
        return self._size

    def add(self, delay_ms: int, payload: Any) -> TimerTask:
        task = TimerTask(self.clock() + delay_ms, payload, next(self._seq))
        first = self.next_expiration_ms()
        self._insert(task)
        self._size += 1
        if self.on_earlier is not None and (first is None or task.expiration_ms < first):
            self.on_earlier(task.expiration_ms)
        return task

    def next_expiration_ms(self) -> int | None:
        """No task fires before this time; None if none is pending. A lower bound: the earliest
        queued bucket may hold only cancelled tasks, or coarse-level tasks that fall to a finer
        level when it expires (advancing to it fires them, or queues a later bucket)."""
        if self._due:
            return min(task.expiration_ms for task in self._due)
        return self._queue[0][0] if self._queue else None

    def _insert(self, task: TimerTask) -> None:
        if task.cancelled:
            return
        if not self._wheel.add(task):
            self._due.append(task)

    def advance_clock(self, now_ms: int | None = None) -> list[Any]:
        """Expire every live task with expiration_ms <= now; return their payloads."""
        now = self.clock() if now_ms is None else now_ms
        fired = [t for t in self._due if not t.cancelled]
        self._due = []
        while self._queue and self._queue[0][0] <= now:
            expiration, _, bucket = heapq.heappop(self._queue)
            if bucket.expiration_ms != expiration:
                continue  # stale heap entry: the bucket was flushed and reused since
            self._wheel.advance_clock(expiration)
            for task in bucket.flush():
                self._insert(task)
            fired.extend(t for t in self._due if not t.cancelled)
            self._due = []
        self._wheel.advance_clock(now)
        self._size -= len(fired)
        for task in fired:
            task.cancelled = True  # no longer pending: a later cancel() is a no-op
        return [t.payload for t in fired]

    def cancel(self, task: TimerTask) -> None:
        if not task.cancelled:
            task.cancel()
            self._size -= 1


class ListTimer:
    """The naive twin: every task in one list; same interface, same answers. Each answer scans
    the whole list (the earliest expiration by min, an advance by filter), so the list needs no
    order: an advance's tasks are compared with the wheel's as a set (neither timer promises an
    order within one advance, nor does Kafka's)."""

    def __init__(self, clock: Callable[[], int]):
        self.clock = clock
        self._tasks: list[tuple[int, int, TimerTask]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return sum(1 for _, _, t in self._tasks if not t.cancelled)

    def add(self, delay_ms: int, payload: Any) -> TimerTask:
        task = TimerTask(self.clock() + delay_ms, payload, next(self._seq))
        self._tasks.append((task.expiration_ms, task.seq, task))
        return task

    def next_expiration_ms(self) -> int | None:
        """The exact earliest expiration of a live task (the wheel's is a lower bound of it)."""
        return min((e for e, _, t in self._tasks if not t.cancelled), default=None)

    def advance_clock(self, now_ms: int | None = None) -> list[Any]:
        now = self.clock() if now_ms is None else now_ms
        fired = [t for e, _, t in self._tasks if e <= now and not t.cancelled]
        self._tasks = [(e, s, t) for e, s, t in self._tasks if e > now and not t.cancelled]
        return [t.payload for t in fired]  # gone from the list: a later cancel() changes nothing

    def cancel(self, task: TimerTask) -> None:
        task.cancelled = True
