"""Every bound of impl/server in one module, units last: ServerConfig, a server's settings in
one frozen value (Kafka's names), and the fixed limits of the threads and the cluster
launcher."""

from collections.abc import Callable

import attrs

from kafkaref.impl.mutants import Mutant, Switches, mutants_field, switches_field
from kafkaref.impl.server.response_queue import mute_until_answered, never_mute

# A frame at least this big is received straight into a buffer of its own (recv_into), not
# appended to the connection's input buffer and copied out of it. Such buffers are allocated for
# the size a client announces before the bytes arrive, so their total per network thread is
# capped; past the cap frames take the ordinary path (which only grows as bytes arrive).
LARGE_FRAME_BYTES = 64 * 1024
FRAME_BUFFERS_MAX_BYTES = 64 * 1024 * 1024
# An idle I/O thread wakes this often to look at `stopping` (shutdown() also wakes it at once):
# at 0.1 s, eight idle threads woke 80 times a second per broker.
IO_IDLE_WAIT_S = 1.0
READY_TIMEOUT_S = 60  # LocalCluster: how long a broker process may take to listen
LOWEST_PORT = 10000  # free_port: below it, the well-known services people run by hand
PORT_ATTEMPTS = 64  # free_port: random ports tried below the ephemeral range
PRODUCER_IDS_PER_BLOCK = 1000  # producer ids a broker takes (and persists) at a time


@attrs.frozen
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 0
    num_network_threads: int = 3
    num_io_threads: int = 8
    queued_max_requests: int = 500  # the one shared request queue; full = backpressure
    socket_request_max_bytes: int = 100 * 1024 * 1024
    connections_max_idle_ms: int = 10 * 60 * 1000
    recv_bytes: int = 256 * 1024  # one recv() call
    # The ticker sleeps until the next purgatory expiration or ISR check, and at most this long
    # (group session timeouts, log flush and checkpoint intervals are checked when it wakes).
    tick_max_ms: int = 50
    select_timeout_ms: int = 100
    max_connections: int = 1000  # beyond this, new connections are closed at once
    zero_copy_fetch: bool = True  # fetched records go out with os.sendfile() from segments
    # The port registered with the controller (so given to clients and other brokers) when it
    # is not the bound one: chaos/ wires a cluster through TCP proxies it can cut. 0 = bound.
    advertised_port: int = 0
    # broker id -> (host, port) the replica fetcher connects to instead of the registered
    # address: a per-pair proxy, so the link from this broker to that one can be cut alone.
    peer_addresses: dict = attrs.field(factory=dict, converter=dict, hash=False)
    # Deliberate faults (impl/mutants.py). Used here: M9, connections are not muted, so one
    # client's requests run concurrently and responses can leave out of order.
    mutants: frozenset[Mutant] = mutants_field()
    on: Switches = switches_field()
    # Whether a read request mutes its connection until answered: the rule, or M9 in its place
    mutes: Callable[[], bool] = attrs.field(init=False, eq=False, repr=False, default=attrs.Factory(
        lambda config: never_mute if Mutant.M9 in config.mutants else mute_until_answered,
        takes_self=True))
