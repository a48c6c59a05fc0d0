"""The bounds impl/protocol chooses, in one module, unit last. (What the formats themselves fix,
field positions and the longest varint, stays with the format: records/layout.py, varint.py.)"""

# A decompressed batch body: Kafka's default max.message.bytes is about 1 MiB compressed; 64 MiB
# leaves room for high compression ratios while a bomb still cannot exhaust memory.
DECOMPRESSED_MAX_BYTES = 64 * 1024 * 1024
FILE_CHUNK_BYTES = 1024 * 1024  # a batch checked from its file is read in chunks this big
XERIAL_BLOCK_BYTES = 32 * 1024  # snappy in xerial framing is written in blocks this big
ZSTD_INPUT_SLICE_BYTES = 4096  # a zstd frame of unknown size is decompressed this much at a time
