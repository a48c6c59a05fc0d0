"""Producer ids that are never handed out twice, across restarts too.

A restarted broker rebuilds each partition's producer state from its log, so a producer id it
issued before the restart is still known there with its last sequence number. Handing the same
id to a new producer would make its first batch (sequence 0) an OUT_OF_ORDER_SEQUENCE_NUMBER.
So ids come in blocks, and the end of the current block is written to the data directory
(temp file, fsync, rename) before any id of the block is used, as Kafka's controller persists
its producer-id blocks. Each broker owns its own id range (broker id in the high bits).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from kafkaref.impl.server.config import PRODUCER_IDS_PER_BLOCK

BROKER_SHIFT = 40  # 2**40 ids per broker; 22 bits of broker id keep ids inside int64
log = logging.getLogger(__name__)


class ProducerIdBlocks:
    """An iterator of producer ids backed by a block file (None: in memory only, for tests)."""

    def __init__(self, path: str | os.PathLike | None, broker_id: int):
        self.path = Path(path) if path is not None else None
        self.base = (broker_id & 0x3FFFFF) << BROKER_SHIFT
        self.next_id = self.block_end = self.base + self._read_persisted_end()

    def __iter__(self):
        return self

    def __next__(self) -> int:
        if self.next_id >= self.block_end:
            self._persist(self.next_id + PRODUCER_IDS_PER_BLOCK)
            self.block_end = self.next_id + PRODUCER_IDS_PER_BLOCK
        producer_id = self.next_id
        self.next_id += 1
        return producer_id

    def _read_persisted_end(self) -> int:
        if self.path is None or not self.path.exists():
            return 0
        try:
            return max(0, int(self.path.read_text().strip()) - self.base)
        except (OSError, ValueError) as error:
            # Unreadable: skip far ahead rather than risk reusing an id.
            log.warning("producer id block file %s unreadable (%s); skipping ahead", self.path, error)
            return 1 << 36

    def _persist(self, block_end: int) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        with open(temporary, "w") as handle:
            handle.write(f"{block_end}\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
