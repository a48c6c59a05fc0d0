"""The I/O threads: take requests from the request queue and run them against the core.

num_io_threads of them share the one RequestQueue (request_queue.py). Each request runs under
the single core lock (KafkaServer.lock) through impl/core.Broker.handle(request, respond); the
core is deterministic and single-threaded, the lock is what makes that true here. `respond`
encodes the answer (unless the core already encoded it: zero-copy fetches) and puts it on the
response queue of the network thread that owns the connection (response_queue.py). It may run
later, from another thread: acks=all produces and long-poll fetches wait in purgatory and are
answered by whichever thread completes them, or by the ticker when they expire.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from kafkaref.impl.core.broker import CLOSE_CONNECTION
from kafkaref.impl.core.zero_copy import EncodedResponse
from kafkaref.impl.protocol import wire
from kafkaref.impl.server.network_thread import NetworkThread
from kafkaref.impl.server.request_queue import QueuedRequest
from kafkaref.impl.server.response_queue import CLOSE

if TYPE_CHECKING:
    from kafkaref.impl.server.server import KafkaServer

log = logging.getLogger(__name__)
# An idle I/O thread wakes this often to look at `stopping` (shutdown() also wakes it at once):
# at 0.1 s, eight idle threads woke 80 times a second per broker.
IO_IDLE_WAIT_S = 1.0


class IoThread(threading.Thread):
    def __init__(self, index: int, server: KafkaServer):
        super().__init__(name=f"kafkaref-io-{index}", daemon=True)
        self.server = server

    def run(self) -> None:
        server = self.server
        while not server.stopping.is_set():
            # shutdown() wakes idle I/O threads with None; the timeout is a safety net
            item = server.requests.get(IO_IDLE_WAIT_S)
            if item is not None:
                self.handle(item)

    def handle(self, item: QueuedRequest) -> None:
        server = self.server
        network = server.network_threads[item.network_thread]
        respond = responder(network, item)
        try:
            with server.lock:
                server.handled += 1
                server.broker.handle(item.request, respond)
        except Exception:  # noqa: BLE001 -- a handler bug must not kill the I/O thread
            log.exception("handling %s v%s", item.request.name, item.request.api_version)
            network.send_response(item.connection_id, CLOSE)


def responder(network: NetworkThread, item: QueuedRequest):
    """The `respond` callback the core answers one request with (from any thread)."""
    request = item.request

    def respond(response) -> None:
        if response is None or response is CLOSE_CONNECTION:
            network.send_response(item.connection_id, CLOSE if response else None)
            return
        if isinstance(response, EncodedResponse):  # the core encoded it (fetch)
            network.send_response(item.connection_id, response.parts)
            return
        try:
            frame = wire.encode_response(request.correlation_id, response)
        except Exception:  # noqa: BLE001 -- a bug in one response closes one connection
            log.exception("encoding %s v%s", request.name, request.api_version)
            frame = CLOSE
        network.send_response(item.connection_id, frame)

    return respond
