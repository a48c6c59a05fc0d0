"""Zigzag varints as Kafka writes them inside record batch v2 (Protocol Buffers' encoding).

A varint stores 7 bits per byte, least significant group first, high bit set on every byte but
the last. Zigzag maps signed to unsigned so small negative numbers stay short: 0->0, -1->1, 1->2.
Kafka's varint is an int32 (at most 5 bytes) and its varlong an int64 (at most 10 bytes).

Decoders never raise on bad input: they return (value, next_position) or None when the bytes end
early or a varint runs longer than its maximum size, so callers can turn that into a Kafka error
code.
"""

VARINT_BYTES_MAX = 5
VARLONG_BYTES_MAX = 10


def zigzag_encode(value: int) -> int:
    """Map a signed integer to an unsigned one (64-bit zigzag; exact for every int32 too)."""
    return (value << 1) ^ (value >> 63)


def zigzag_decode(value: int) -> int:
    """Inverse of zigzag_encode."""
    return (value >> 1) ^ -(value & 1)


def encode_unsigned(value: int) -> bytes:
    """Encode a non-negative integer as an unsigned varint."""
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode a signed integer (int32 or int64 range) as a zigzag varint."""
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"varlong out of range: {value}")
    return encode_unsigned(zigzag_encode(value))


def size_of_varint(value: int) -> int:
    """Number of bytes encode_varint(value) takes."""
    unsigned = zigzag_encode(value)
    size = 1
    while unsigned >= 0x80:
        unsigned >>= 7
        size += 1
    return size


def decode_unsigned(buf, pos: int, bytes_max: int = VARLONG_BYTES_MAX) -> tuple[int, int] | None:
    """Decode an unsigned varint at buf[pos]; None if truncated or longer than bytes_max."""
    end = len(buf)
    result = 0
    shift = 0
    for index in range(pos, min(end, pos + bytes_max)):
        byte = buf[index]
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, index + 1
        shift += 7
    return None


def decode_varint(buf, pos: int, bytes_max: int = VARLONG_BYTES_MAX) -> tuple[int, int] | None:
    """Decode a zigzag varint at buf[pos]; None if truncated or too long."""
    # Fast paths: one byte covers -64..63 (deltas, counts), two bytes -8192..8191 (lengths).
    if pos + 1 < len(buf):
        byte = buf[pos]
        if byte < 0x80:
            return (byte >> 1) ^ -(byte & 1), pos + 1
        second = buf[pos + 1]
        if second < 0x80 and bytes_max >= 2:
            value = (byte & 0x7F) | (second << 7)
            return (value >> 1) ^ -(value & 1), pos + 2
    decoded = decode_unsigned(buf, pos, bytes_max)
    if decoded is None:
        return None
    value, pos = decoded
    return (value >> 1) ^ -(value & 1), pos
