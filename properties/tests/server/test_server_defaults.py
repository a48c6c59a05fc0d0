"""The server's settings default to Apache Kafka's broker defaults (the names `kafkaref broker`
reads from a properties file are Kafka's: commands/broker.py), so a broker started without them
behaves as a Kafka broker started without them.

Found by mutation testing (docs/mutation.md, session 79fa682's 00041): connections.max.idle.ms
changed to 10 * 60 * 1001 passed every server test."""

import pytest

from kafkaref.impl.server.config import ServerConfig

# Kafka's documented broker defaults (SocketServerConfigs, ServerConfigs), by Kafka's name
KAFKA_DEFAULTS = {
    "num.network.threads": ("num_network_threads", 3),
    "num.io.threads": ("num_io_threads", 8),
    "queued.max.requests": ("queued_max_requests", 500),
    "socket.request.max.bytes": ("socket_request_max_bytes", 104_857_600),
    "connections.max.idle.ms": ("connections_max_idle_ms", 600_000),
}


@pytest.mark.parametrize("name", sorted(KAFKA_DEFAULTS))
def test_a_server_without_settings_has_kafkas_broker_defaults(name):
    field, kafka_default = KAFKA_DEFAULTS[name]
    assert getattr(ServerConfig(), field) == kafka_default
