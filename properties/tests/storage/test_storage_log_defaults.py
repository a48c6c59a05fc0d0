"""The storage layer's defaults are Kafka's topic-config defaults: a topic created without
configs is described with TOPIC_CONFIG_DEFAULTS (checked against Apache Kafka by the
differential walk) and stored by a log built from LogConfig(), so the two must say the same.

Found by mutation testing (docs/mutation.md): LogConfig's segment.index.bytes default changed
to 10 * 1023 * 1024 passed every storage test."""

import pytest

from kafkaref.impl.core.topic_rules import LONG_MAX, TOPIC_CONFIG_DEFAULTS
from kafkaref.impl.storage import LogConfig

FIELDS = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.index.bytes": "segment_index_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "retention.bytes": "retention_bytes",
    "retention.ms": "retention_ms",
    "flush.messages": "flush_messages",
    "flush.ms": "flush_ms",
}


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_a_log_without_configs_has_kafkas_topic_defaults(name):
    value = getattr(LogConfig(), FIELDS[name])
    described = TOPIC_CONFIG_DEFAULTS[name][0]
    assert str(value) == described or (value is None and described == LONG_MAX)
