"""The broker's listening port when none is given (port 0).

A broker keeps its port across a restart (clients and the other brokers know it by that address),
so it must be able to bind the same port again after a SIGKILL. A port the kernel hands out for
port 0 lies in its ephemeral range (net.ipv4.ip_local_port_range), the same range it takes the
local port of every outgoing connection from: while the broker is down, any client socket on the
machine can take its port, and the restart fails with "Address already in use" (seen about once
in a dozen restarts on a busy machine). So for port 0 the broker picks a free port below that
range itself, where the kernel never assigns ports, and falls back to the kernel's choice only
when no such port is free.
"""

from __future__ import annotations

import random
import socket

from kafkaref.impl.server.config import LOWEST_PORT, PORT_ATTEMPTS

RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"


def ephemeral_range_start() -> int | None:
    """The first port the kernel assigns by itself, or None where it cannot be read."""
    try:
        with open(RANGE_FILE) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def listen(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A listening socket on (host, port); for port 0 a free port outside the ephemeral range."""
    if port != 0:
        return socket.create_server((host, port), backlog=backlog)
    start = ephemeral_range_start()
    if start is not None and start > LOWEST_PORT:
        for candidate in random.sample(range(LOWEST_PORT, start), min(PORT_ATTEMPTS, start - LOWEST_PORT)):
            try:
                return socket.create_server((host, candidate), backlog=backlog)
            except OSError:
                continue  # taken by someone else: try another
    return socket.create_server((host, 0), backlog=backlog)
