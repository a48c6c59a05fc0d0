"""Committed offsets as __consumer_offsets holds them, in every OffsetCommitValue version Kafka
has written (v0-v3): an offsets log written by an older broker, or by Kafka, loads. Found by
mutation testing (docs/mutation.md): v1 dropped from the accepted versions went unnoticed, since
kafkaref itself writes only v3."""

import struct

import pytest

from kafkaref.impl.core.offsets_topic import CommittedOffset, decode_value


def string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


# Kafka's OffsetCommitValue schema: v0 and v2 offset, metadata, commit timestamp; v1 adds the
# expire timestamp after it; v3 puts the leader epoch after the offset.
VALUES = {
    0: struct.pack(">hq", 0, 42) + string("m") + struct.pack(">q", 1_000),
    1: struct.pack(">hq", 1, 42) + string("m") + struct.pack(">qq", 1_000, 2_000),
    2: struct.pack(">hq", 2, 42) + string("m") + struct.pack(">q", 1_000),
    3: struct.pack(">hqi", 3, 42, 7) + string("m") + struct.pack(">q", 1_000),
}


@pytest.mark.parametrize("version", sorted(VALUES))
def test_every_value_version_kafka_wrote_loads(version):
    epoch = 7 if version == 3 else -1
    assert decode_value(VALUES[version]) == CommittedOffset(42, epoch, "m", 1_000)


def test_a_value_version_kafka_never_wrote_is_unreadable():
    assert decode_value(struct.pack(">hq", 4, 42) + string("m") + struct.pack(">q", 1_000)) is None
