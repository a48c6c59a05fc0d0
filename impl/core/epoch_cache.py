"""The in-memory leader epoch cache of MemoryLog: the storage cache without a checkpoint file.

One definition of the epoch lookups (Kafka's LeaderEpochFileCache) serves both logs, so the
in-memory twin and the on-disk log answer OffsetForLeaderEpoch and diverging-epoch fetches alike;
properties/tests/storage/test_storage_epoch_cache.py holds it equal to the model's contract-checked helper.
"""

from __future__ import annotations

from kafkaref.impl.storage.epoch_cache import UNDEFINED, LeaderEpochCache

__all__ = ["UNDEFINED", "EpochCache"]


class EpochCache(LeaderEpochCache):
    def __init__(self, entries: list[tuple[int, int]] | None = None):
        super().__init__(None, entries or ())
