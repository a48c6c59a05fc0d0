"""Small questions asked of a peer's node while it starts: does it answer, and how many brokers
does it know."""

from __future__ import annotations

from kafkaref.impl.client.connection import KafkaConnection

PROBE_TIMEOUT_S = 2.0
METADATA_VERSION = 9  # every broker we start answers it; [] asks for no topic, brokers only


def brokers_seen(host: str, port: int) -> int:
    """How many brokers the node's Metadata answer lists; 0 when it does not answer (yet)."""
    try:
        with KafkaConnection(host, port, timeout_s=PROBE_TIMEOUT_S) as conn:
            answer = conn.send(3, METADATA_VERSION, {"topics": [],
                                                     "allow_auto_topic_creation": False,
                                                     "include_topic_authorized_operations": False})
            return len(answer.brokers)
    except (OSError, ValueError):
        return 0
