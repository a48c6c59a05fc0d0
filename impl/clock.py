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
  the wire are wall-clock time too: a LogAppendTime stamp would be wall_ms (this broker serves
  CreateTime topics only and answers log_append_time -1), and ListOffsets by time answers with
  record timestamps from the time index, which no clock of ours produced.

Tests inject one fake Clock (both readings from one counter, or two) and control all of it.
"""

from __future__ import annotations

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
