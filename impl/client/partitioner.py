"""Partitioners: the Java client's murmur2 for keyed records, sticky for unkeyed ones.

murmur2 follows org.apache.kafka.common.utils.Utils.murmur2 (seed 0x9747b28c, m 0x5bd1e995,
r 24, little-endian 4-byte blocks, tail bytes, final mix) with Java's 32-bit signed wrap-around
emulated by masking; the partition is (hash & 0x7fffffff) % partitions, as toPositive() does.
"""

from __future__ import annotations

import random

MASK32 = 0xFFFFFFFF
SEED, M, R = 0x9747B28C, 0x5BD1E995, 24


def murmur2(data: bytes) -> int:
    """Java's Utils.murmur2 as a signed 32-bit int."""
    length = len(data)
    h = (SEED ^ length) & MASK32
    blocks = length // 4
    for i in range(blocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * M) & MASK32
        k ^= k >> R
        k = (k * M) & MASK32
        h = ((h * M) & MASK32) ^ k
    tail = data[4 * blocks :]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * M) & MASK32
    h ^= h >> 13
    h = (h * M) & MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def keyed_partition(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class StickyPartitioner:
    """Unkeyed records stick to one partition until its batch is sent (KIP-480)."""

    def __init__(self, rng: random.Random | None = None):
        self.rng = rng or random.Random(0)
        self.current: dict[str, int] = {}

    def partition(self, topic: str, key: bytes | None, partitions: int) -> int:
        if key is not None:
            return keyed_partition(key, partitions)
        if topic not in self.current or self.current[topic] >= partitions:
            self.current[topic] = self.rng.randrange(partitions)
        return self.current[topic]

    def batch_sent(self, topic: str, partitions: int) -> None:
        """Move to another partition once the sticky one's batch left."""
        if partitions > 1:
            previous = self.current.get(topic)
            choice = self.rng.randrange(partitions - 1)
            self.current[topic] = choice if previous is None or choice < previous else choice + 1
