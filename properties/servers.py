"""Brokers and clusters for tests, behind the shared `broker` and `cluster` fixtures
(properties/tests/conftest.py); and tcp_server, a plain TCP server (an echo, a broker that
answers garbage) for tests of what sits in front of a broker.

A test module that needs another setup parametrizes the fixture's setup rather than writing a
fixture of its own:

    pytestmark = pytest.mark.parametrize("broker_setup", [BrokerSetup(storage="disk")])

Everything binds 127.0.0.1 and an ephemeral port and is shut down when the test ends.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
from collections.abc import Callable

import attrs

from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.single import single_broker


def _small_server() -> ServerConfig:
    return ServerConfig(num_network_threads=1, num_io_threads=2)


# Every kafkaref broker a fixture starts runs its retention task a day late, as the walk starts
# Apache Kafka's (properties/differential/run.py NO_RETENTION_TASK): test records carry 1970
# timestamps (build_batch's default 0), and Kafka's 30 s would empty a module's topics in the
# middle of whichever test runs then. A test of retention asks for its own timing.
NO_RETENTION_TASK_MS = 24 * 3600 * 1000


def _test_broker() -> BrokerConfig:
    return BrokerConfig(log_initial_task_delay_ms=NO_RETENTION_TASK_MS)


@dataclasses.dataclass(frozen=True)
class BrokerSetup:
    """One in-process kafkaref broker: where its logs live and how it is configured.

    storage: "memory" (a MemoryLog per partition, nothing on disk) or "disk" (storage Logs
    under the test's tmp_path, the broker `kafkaref broker` runs).
    """

    storage: str = "memory"
    server: ServerConfig = dataclasses.field(default_factory=_small_server)
    broker: BrokerConfig = dataclasses.field(default_factory=_test_broker)

    def __post_init__(self):
        if self.storage not in ("memory", "disk"):
            raise ValueError(f"storage must be 'memory' or 'disk', not {self.storage!r}")

    @property
    def id(self) -> str:
        """A short test id: the storage and what differs from the defaults."""
        parts = [self.storage]
        for config, default in ((self.server, _small_server()), (self.broker, _test_broker())):
            parts += [f"{f.name}={getattr(config, f.name)}" for f in attrs.fields(type(config))
                      if getattr(config, f.name) != getattr(default, f.name)]
        return ",".join(parts)


@contextlib.contextmanager
def running_broker(setup: BrokerSetup = BrokerSetup(), directory: str = ""):  # noqa: B008
    """Start the broker `setup` describes (disk logs under `directory`); shut it down after."""
    if setup.storage == "disk" and not directory:
        raise ValueError("a broker on disk needs a directory")
    log_factory = (lambda key: MemoryLog()) if setup.storage == "memory" else None
    server = single_broker(directory if setup.storage == "disk" else "", setup.server,
                           setup.broker, log_factory=log_factory).start()
    try:
        yield server
    finally:
        server.shutdown()


@dataclasses.dataclass(frozen=True)
class ClusterSetup:
    """A LocalCluster: `brokers` separate broker processes and an in-process controller."""

    brokers: int = 3
    session_timeout_ms: int = 1000
    unclean_election: bool = False
    mutants: frozenset = frozenset()  # deliberate faults for every broker (impl/mutants.py)
    offsets_topic_partitions: int = 5  # __consumer_offsets, small in tests (Kafka: 50)
    log_initial_task_delay_ms: int = NO_RETENTION_TASK_MS  # the retention task's first run
    log_retention_check_interval_ms: int | None = None  # then every (None: Kafka's 5 min)

    @property
    def id(self) -> str:
        mutants = "".join(f"-{m}" for m in sorted(map(str, self.mutants)))
        return f"{self.brokers}-brokers{mutants}"


@contextlib.contextmanager
def running_cluster(setup: ClusterSetup, directory: str):
    """Start the cluster `setup` describes under `directory`; stop every process after."""
    from kafkaref.impl.server.local_cluster import LocalCluster

    local = LocalCluster(setup.brokers, directory, session_timeout_ms=setup.session_timeout_ms,
                         unclean_election=setup.unclean_election, mutants=setup.mutants,
                         offsets_topic_partitions=setup.offsets_topic_partitions,
                         log_initial_task_delay_ms=setup.log_initial_task_delay_ms,
                         log_retention_check_interval_ms=setup.log_retention_check_interval_ms)
    local.start()
    try:
        yield local
    finally:
        local.stop()


@dataclasses.dataclass(frozen=True)
class PeerSetup:
    """A peer broker the project starts by name (chaos/peers/): Apache Kafka, kafkaref, Tansu."""

    name: str = "apache-kafka"
    nodes: int = 1
    overrides: tuple[tuple[str, str], ...] = ()  # Apache Kafka's server.properties entries

    @property
    def id(self) -> str:
        return f"{self.name}-{self.nodes}"

    @property
    def options(self) -> dict:
        """start_peer's options: Kafka's overrides; kafkaref's retention task a day late, as
        every fixture's kafkaref (NO_RETENTION_TASK_MS)."""
        if self.name == "kafkaref":
            return {"log_initial_task_delay_ms": NO_RETENTION_TASK_MS}
        return {"overrides": dict(self.overrides)} if self.overrides else {}


@contextlib.contextmanager
def running_peer(setup: PeerSetup, directory: str):
    """Start the peer `setup` describes under `directory`; stop it (every process) after."""
    from kafkaref.chaos.peers import start_peer

    with start_peer(setup.name, setup.nodes, directory, **setup.options) as peer:
        yield peer


def tcp_server(handler: Callable[[socket.socket], None]) -> tuple[int, Callable[[], None]]:
    """A TCP server on 127.0.0.1 and an ephemeral port running handler(connection) in a thread
    per connection; returns (port, stop)."""
    server = socket.create_server(("127.0.0.1", 0))
    stopping = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stopping.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=handler, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()

    def stop():
        stopping.set()
        thread.join(2)
        server.close()

    return server.getsockname()[1], stop
