"""The broker's clock: ONE object, handed by KafkaServer to the core and to every log it opens.

Like Kafka's Time (hiResClockMs() and milliseconds()) it has two readings, because a broker
measures two kinds of time:

- monotonic_ms: durations and deadlines inside the broker: purgatory timeouts (the timing
  wheel), ISR lag (replica.lag.time.max.ms), group session timeouts, the ticker, controller
  sessions. It never jumps when the system clock is set, so an NTP step can neither expire every
  waiting produce at once nor keep them waiting for ever. The core (impl/core) runs on it.
- wall_ms: milliseconds since the Unix epoch, the time record timestamps are in. The storage
  Log runs on it, as Kafka's Log runs on time.milliseconds(): retention.ms compares it with a
  segment's largest record timestamp (CreateTime, set by the producers' wall clocks), and
  segment.ms, flush.ms and the checkpoint interval are measured with it. Timestamps that go on
  the wire are wall-clock time too: a LogAppendTime topic's batches are stamped with the log's
  wall_ms (and the Produce answer's log_append_time is it), and ListOffsets by time answers with
  the record timestamps of the time index: the producers' (CreateTime) or that stamp.

Tests inject one fake Clock (both readings from one counter, or two) and control all of it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

import attrs


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@attrs.frozen
class Clock:
    monotonic_ms: Callable[[], int] = monotonic_ms
    wall_ms: Callable[[], int] = wall_clock_ms


SYSTEM_CLOCK = Clock()


class SkewFile:
    """Offsets added to both readings of the system clock, read from a JSON file
    {"wall_ms": W, "monotonic_ms": M} that chaos/ rewrites to make a broker's clock jump
    (`kafkaref broker --clock-skew-file`). A missing or unreadable file is no skew. The file is
    looked at no more than every RECHECK_S, so a reading costs a monotonic() call."""

    RECHECK_S = 0.05

    def __init__(self, path: str):
        self.path = path
        self._next_check = 0.0
        self._mtime: float | None = None
        self.wall, self.monotonic = 0, 0

    def _refresh(self) -> None:
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + self.RECHECK_S
        try:
            mtime = os.stat(self.path).st_mtime_ns
            if mtime == self._mtime:
                return
            with open(self.path) as handle:
                skew = json.load(handle)
            wall, monotonic = int(skew.get("wall_ms", 0)), int(skew.get("monotonic_ms", 0))
        except (OSError, ValueError, TypeError, AttributeError):
            return
        self._mtime = mtime
        # a monotonic reading never goes back, whatever the file says
        self.wall, self.monotonic = wall, max(self.monotonic, monotonic)

    def wall_ms(self) -> int:
        self._refresh()
        return wall_clock_ms() + self.wall

    def monotonic_ms(self) -> int:
        self._refresh()
        return monotonic_ms() + self.monotonic


def skewed_clock(path: str) -> Clock:
    skew = SkewFile(path)
    return Clock(monotonic_ms=skew.monotonic_ms, wall_ms=skew.wall_ms)
