"""The I/O threads: take requests from the request queue and run them against the core.

num_io_threads of them share the one RequestQueue (request_queue.py). Each request runs under
the single core lock (KafkaServer.lock) through impl/core.Broker.handle(request, respond); the
core is deterministic and single-threaded, the lock is what makes that true here. `respond`
encodes the answer (the core answers with values; every response is encoded here) and puts it
on the response queue of the network thread that owns the connection (response_queue.py). It
may run later, from another thread: acks=all produces and long-poll fetches wait in purgatory and are
answered by whichever thread completes them, or by the ticker when they expire.
"""

from __future__ import annotations

import logging
import threading

from kafkaref.impl.core.broker import CLOSE_CONNECTION
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.fetch_response import FetchAnswer
from kafkaref.impl.server.config import IO_IDLE_WAIT_S
from kafkaref.impl.server.network_thread import NetworkThread
from kafkaref.impl.server.request_queue import QueuedRequest, RequestQueue
from kafkaref.impl.server.response_queue import CLOSE, discard

log = logging.getLogger(__name__)


class IoThread(threading.Thread):
    """Runs requests from `requests` against `core` (impl/core's Broker) holding `core_lock`,
    answering through the network thread that read each one, until `stopping` is set. Given
    just these by KafkaServer (server.py), which owns them: no import of the server here."""

    def __init__(self, index: int, requests: RequestQueue, network_threads: list[NetworkThread],
                 core, core_lock, stopping: threading.Event):
        super().__init__(name=f"kafkaref-io-{index}", daemon=True)
        self.requests, self.network_threads = requests, network_threads
        self.core, self.core_lock, self.stopping = core, core_lock, stopping

    def run(self) -> None:
        while not self.stopping.is_set():
            # shutdown() wakes idle I/O threads with None; the timeout is a safety net
            item = self.requests.get(IO_IDLE_WAIT_S)
            if item is not None:
                self.handle(item)

    def handle(self, item: QueuedRequest) -> None:
        network = self.network_threads[item.network_thread]
        respond = responder(network, item)
        try:
            with self.core_lock:
                self.core.handle(item.request, respond)
        except Exception:  # noqa: BLE001 -- a handler bug must not kill the I/O thread
            log.exception("handling %s v%s", item.request.name, item.request.api_version)
            network.send_response(item.connection_id, CLOSE)


def responder(network: NetworkThread, item: QueuedRequest):
    """The `respond` callback the core answers one request with (from any thread): the core's
    answer is a value, encoded here (impl/protocol/wire.encode_response_parts), the one place
    responses are encoded."""
    request = item.request

    def respond(response) -> None:
        if response is None or response is CLOSE_CONNECTION:
            network.send_response(item.connection_id, CLOSE if response else None)
            return
        try:
            frame = wire.encode_response_parts(request.correlation_id, response)
        except Exception:  # noqa: BLE001 -- a bug in one response closes one connection
            log.exception("encoding %s v%s", request.name, request.api_version)
            if isinstance(response, FetchAnswer):  # its file ranges hold file descriptors
                discard([p.records for _, partitions in response.topics for p in partitions])
            frame = CLOSE
        network.send_response(item.connection_id, frame)

    return respond
