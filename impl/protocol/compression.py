"""Compression codecs of record batch v2, through well-kept libraries, in the byte formats Kafka uses.

- gzip: RFC 1952 members (stdlib zlib); several concatenated members are accepted, as Java's
  GZIPInputStream does.
- snappy: the Java client writes xerial's block framing (a 16-byte header, then int32-length-prefixed
  raw snappy blocks of 32 KiB input each); librdkafka writes one raw snappy block. We write xerial
  framing and read both (cramjam's raw snappy).
- lz4: the LZ4 frame format with independent 64 KiB blocks, as Kafka's KafkaLZ4BlockOutputStream and
  kafka-python write it (the `lz4` package).
- zstd: zstd frames (the `zstandard` package), possibly without a content size.

decompress() is bounded: it never produces more than `max_bytes` (a decompression bomb is an error,
not an out-of-memory crash) and raises CompressionError for any malformed input, which record code
turns into a Kafka error code.
"""

import enum
import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from kafkaref.impl.protocol.limits import XERIAL_BLOCK_BYTES, ZSTD_INPUT_SLICE_BYTES


class Compression(enum.IntEnum):
    """The compression codec in bits 0-2 of a batch's attributes."""

    none = 0
    gzip = 1
    snappy = 2
    lz4 = 3
    zstd = 4


class CompressionError(ValueError):
    """The compressed bytes are malformed, or decompress to more than the allowed size."""


XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_INT32 = struct.Struct(">i")
_zstd_compressor = zstandard.ZstdCompressor(level=3)


def compress(codec: Compression, data: bytes) -> bytes:
    """Compress `data` with `codec` in Kafka's byte format for that codec."""
    if codec == Compression.none:
        return bytes(data)
    if codec == Compression.gzip:
        compressor = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: gzip container
        return compressor.compress(data) + compressor.flush()
    if codec == Compression.snappy:
        return _snappy_xerial_encode(data)
    if codec == Compression.lz4:
        return lz4.frame.compress(
            data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False
        )
    if codec == Compression.zstd:
        return _zstd_compressor.compress(data)
    raise ValueError(f"unknown compression codec {codec}")


def decompress(codec: Compression, data, max_bytes: int) -> bytes:
    """Decompress `data`; raise CompressionError if malformed or larger than max_bytes."""
    try:
        if codec == Compression.none:
            out = bytes(data)
        elif codec == Compression.gzip:
            out = _gzip_decode(bytes(data), max_bytes)
        elif codec == Compression.snappy:
            out = _snappy_decode(bytes(data), max_bytes)
        elif codec == Compression.lz4:
            out = _lz4_decode(bytes(data), max_bytes)
        elif codec == Compression.zstd:
            out = _zstd_decode(bytes(data), max_bytes)
        else:
            raise CompressionError(f"unknown compression codec {codec}")
    except CompressionError:
        raise
    except Exception as error:  # the codec libraries raise assorted types on garbage
        raise CompressionError(f"{Compression(codec).name}: {error}") from error
    if len(out) > max_bytes:
        raise CompressionError(f"decompressed size exceeds {max_bytes} bytes")
    return out


def _gzip_decode(data: bytes, max_bytes: int) -> bytes:
    parts = []
    produced = 0
    while data:
        decompressor = zlib.decompressobj(31)
        parts.append(decompressor.decompress(data, max_bytes + 1 - produced))
        produced += len(parts[-1])
        if produced > max_bytes:
            raise CompressionError(f"decompressed size exceeds {max_bytes} bytes")
        if not decompressor.eof:
            raise CompressionError("gzip: truncated stream")
        data = decompressor.unused_data
    if not parts:
        raise CompressionError("gzip: empty input")
    return b"".join(parts)


def _snappy_xerial_encode(data: bytes) -> bytes:
    out = bytearray(XERIAL_HEADER)
    view = memoryview(data)
    for start in range(0, len(data), XERIAL_BLOCK_BYTES):
        block = bytes(cramjam.snappy.compress_raw(bytes(view[start : start + XERIAL_BLOCK_BYTES])))
        out += _INT32.pack(len(block))
        out += block
    return bytes(out)


def _snappy_block(block: bytes, budget: int) -> bytes:
    if cramjam.snappy.decompress_raw_len(block) > budget:
        raise CompressionError("snappy: decompressed size exceeds the limit")
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_decode(data: bytes, max_bytes: int) -> bytes:
    # Only the 8-byte magic is checked: some producers write version/compat little-endian.
    if len(data) < 16 or data[:8] != XERIAL_HEADER[:8]:
        return _snappy_block(data, max_bytes)
    parts = []
    produced = 0
    pos = 16
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressionError("snappy: truncated xerial block length")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise CompressionError("snappy: xerial block runs past the end")
        parts.append(_snappy_block(data[pos : pos + length], max_bytes - produced))
        produced += len(parts[-1])
        pos += length
    return b"".join(parts)


def _lz4_decode(data: bytes, max_bytes: int) -> bytes:
    decompressor = lz4.frame.LZ4FrameDecompressor()
    out = decompressor.decompress(data, max_length=max_bytes + 1)
    if len(out) > max_bytes:
        raise CompressionError(f"decompressed size exceeds {max_bytes} bytes")
    if not decompressor.eof:
        raise CompressionError("lz4: truncated frame")
    if decompressor.unused_data:
        raise CompressionError("lz4: trailing bytes after the frame")
    return out


def _zstd_decode(data: bytes, max_bytes: int) -> bytes:
    declared = zstandard.frame_content_size(data)
    if declared > max_bytes:
        raise CompressionError(f"zstd: declared size {declared} exceeds {max_bytes} bytes")
    # Without a declared size, feed the input in slices so a bomb stops early.
    step = len(data) if declared >= 0 else ZSTD_INPUT_SLICE_BYTES
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    parts = []
    produced = 0
    for start in range(0, len(data), step):
        if decompressor.eof:
            break
        parts.append(decompressor.decompress(data[start : start + step]))
        produced += len(parts[-1])
        if produced > max_bytes:
            raise CompressionError(f"decompressed size exceeds {max_bytes} bytes")
    if not decompressor.eof:
        raise CompressionError("zstd: truncated frame")
    if decompressor.unused_data or start + step < len(data):
        raise CompressionError("zstd: trailing bytes after the frame")
    return b"".join(parts)
