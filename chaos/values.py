"""The values the chaos workload writes: each an int64, process << 32 | sequence number, unique in
a run; decoded from whatever client wrote them (ours and confluent-kafka write 8 bytes
big-endian, Apache Kafka's VerifiableProducer the text "P.N")."""

from __future__ import annotations

import zlib

from kafkaref.chaos.java_clients import value_of

VALUE_BYTES = 8


def encode_value(value: int) -> bytes:
    return value.to_bytes(VALUE_BYTES, "big", signed=True)


def decode_value(raw: bytes | None) -> int:
    """The int64 a producer wrote: 8 bytes big-endian (ours, confluent-kafka's), or the Java
    VerifiableProducer's text "P.N" (P << 32 | N; never 8 bytes of ours, whose first byte is 0
    for any process number below 2^24). Anything else (a corrupt record) maps to a negative
    value no producer writes, so the checks see it as a value nobody sent rather than crashing."""
    text = value_of((raw or b"").decode("ascii", "replace"))
    if text is not None:
        return text
    if raw is not None and len(raw) == VALUE_BYTES:
        return int.from_bytes(raw, "big", signed=True)
    return -1 - zlib.crc32(raw or b"")
