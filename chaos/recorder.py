"""The history recorder: every logical process's invocations and completions, in one order.

Threads of the workload and the nemesis call invoke() and complete(); the recorder gives each op
its index and its time (monotonic ns since the run started, one clock) under one lock and streams
the rows to the history writer, whose memory is bounded by its row groups
(history/store.py), so a run of any length records in bounded memory. With writer=None nothing is written (the
benchmark's "without recording" baseline) but counts are kept the same way.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable

import attrs

from kafkaref.history.format import NEMESIS_PROCESS

# (kind, topic, partition, offset, value) of one record of a completion.
Record = tuple[str, str, int, int | None, int | None]


@attrs.frozen
class Invocation:
    index: int
    time: int
    process: int
    f: str


class Recorder:
    def __init__(self, writer=None):
        self._writer = writer
        self._lock = threading.Lock()
        self._start = time.monotonic_ns()
        self._next = 0
        self.counts: dict[str, int] = {}  # "f:type" -> ops
        self.acked_sends = 0
        self.records = 0

    def now(self) -> int:
        return time.monotonic_ns() - self._start

    def invoke(self, process: int, f: str, value=None) -> Invocation:
        detail = _detail(value)
        with self._lock:
            index, now = self._next, self.now()
            self._next += 1
            if self._writer is not None:
                self._writer.op(index, now, process, "invoke", f, value=detail)
            self._count(f, "invoke")
        return Invocation(index, now, process, f)

    def complete(self, invocation: Invocation, type_: str, *, error: str | None = None,
                 value=None, records: Iterable[Record] = ()) -> int:
        detail = _detail(value)
        records = list(records)
        with self._lock:
            index, now = self._next, self.now()
            self._next += 1
            writer = self._writer
            if writer is not None:
                writer.op(index, now, invocation.process, type_, invocation.f,
                          invoke_index=invocation.index, error=error, value=detail)
                for position, (kind, topic, partition, offset, value_) in enumerate(records):
                    writer.record(index, position, kind, invocation.process, type_,
                                  invocation.time, now, topic, partition, offset, value_)
            self._count(invocation.f, type_)
            self.records += len(records)
            if invocation.f == "send" and type_ == "ok":
                self.acked_sends += 1
        return index

    def nemesis(self, f: str, value=None, run=None):
        """Record a nemesis action as invoke + ok (or info if run raised; re-raised)."""
        invocation = self.invoke(NEMESIS_PROCESS, f, value)
        try:
            result = run() if run is not None else None
        except Exception as error:
            self.complete(invocation, "info", error=type(error).__name__,
                          value={"target": value, "error": str(error)})
            raise
        self.complete(invocation, "ok", value=result if result is not None else value)
        return result

    def ops(self) -> int:
        with self._lock:
            return self._next

    def _count(self, f: str, type_: str) -> None:
        key = f"{f}:{type_}"
        self.counts[key] = self.counts.get(key, 0) + 1


def _detail(value) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)
