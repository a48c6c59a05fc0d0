"""A broker for tests: one in-process kafkaref broker on 127.0.0.1 and an ephemeral port, with
in-memory logs (nothing on disk), shut down when the block ends."""

from __future__ import annotations

import contextlib

from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.single import single_broker


@contextlib.contextmanager
def memory_broker(config: ServerConfig | None = None, broker_config: BrokerConfig | None = None):
    config = config or ServerConfig(num_network_threads=1, num_io_threads=2)
    server = single_broker("", config, broker_config or BrokerConfig(),
                           log_factory=lambda key: MemoryLog()).start()
    try:
        yield server
    finally:
        server.shutdown()
