"""The acceptor: one thread accepting connections on the broker's listening socket and handing
each to a network thread (network_thread.py), round-robin; from then on that network thread owns
the connection. Connections over max_connections are refused by the network thread."""

from __future__ import annotations

import threading

from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.network_thread import NetworkThread
from kafkaref.impl.server.ports import listen


class Acceptor(threading.Thread):
    """Accepts connections and hands them to network threads round-robin."""

    def __init__(self, config: ServerConfig, network_threads: list[NetworkThread],
                 stopping: threading.Event):
        super().__init__(name="kafkaref-acceptor", daemon=True)
        self.config, self.network_threads, self.stopping = config, network_threads, stopping
        # A free port below the kernel's ephemeral range for port 0, so a restart can bind it again.
        self.sock = listen(config.host, config.port)
        self.sock.settimeout(config.select_timeout_ms / 1000)
        self.port = self.sock.getsockname()[1]
        self._next = 0

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                try:
                    sock, _ = self.sock.accept()
                except TimeoutError:
                    continue
                except OSError:
                    if self.stopping.is_set():
                        return
                    continue
                thread = self.network_threads[self._next % len(self.network_threads)]
                self._next += 1
                thread.add_connection(sock)
        finally:
            self.sock.close()
