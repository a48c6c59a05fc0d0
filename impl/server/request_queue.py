"""The request queue: the ONE bounded queue between the network threads and the I/O threads.

A network thread puts each whole, decoded request here (after muting its connection); the I/O
threads take them in arrival order. Its size is queued_max_requests (ServerConfig): when it is
full the network thread blocks in `put`, so it stops reading all of its connections
(backpressure) until an I/O thread takes a request. `put` gives up only when the broker stops.
"""

from __future__ import annotations

import queue
import threading

import attrs

from kafkaref.impl.protocol import wire


@attrs.frozen
class QueuedRequest:
    network_thread: int  # whose response queue the answer goes to
    connection_id: int
    request: wire.Request
    received_ms: int


class RequestQueue:
    """queued_max_requests requests at most; None is the wake-up an idle I/O thread gets at
    shutdown (it then sees `stopping`)."""

    PUT_RETRY_S = 0.1  # a blocked put looks at `stopping` this often

    def __init__(self, max_requests: int):
        self._queue: queue.Queue[QueuedRequest | None] = queue.Queue(max_requests)

    def put(self, item: QueuedRequest, stopping: threading.Event) -> None:
        """Block while the queue is full (backpressure), but never past the broker's stop."""
        while not stopping.is_set():
            try:
                self._queue.put(item, timeout=self.PUT_RETRY_S)
                return
            except queue.Full:
                continue

    def get(self, timeout_s: float) -> QueuedRequest | None:
        """The next request; None after timeout_s or when woken for shutdown."""
        try:
            return self._queue.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def wake_idle(self, count: int) -> None:
        """Wake up to `count` idle I/O threads (shutdown); busy ones see `stopping` when done."""
        for _ in range(count):
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                return

    def qsize(self) -> int:
        return self._queue.qsize()
