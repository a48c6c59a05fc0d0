"""The commit log: one directory per partition of Kafka-format segments (see log.py).

Public API: Log (open / append / read / truncate / flush / close / recovery), LogConfig,
AppendInfo, FetchSlice, RecoveryReport, LeaderEpochCache.
"""

from kafkaref.impl.storage.config import LogConfig
from kafkaref.impl.storage.epoch_cache import LeaderEpochCache
from kafkaref.impl.storage.fetch import FetchSlice
from kafkaref.impl.storage.log import AppendInfo, Log, RecoveryReport

__all__ = ["AppendInfo", "FetchSlice", "LeaderEpochCache", "Log", "LogConfig", "RecoveryReport"]
