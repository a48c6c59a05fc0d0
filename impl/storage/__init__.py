"""The commit log: one directory per partition of Kafka-format segments (see log.py; opening and
crash recovery: recovery.py; segments: segment.py).

Public API: Log (open / append / read / truncate / flush / close / recovery), LogConfig,
AppendInfo, FetchSlice, RecoveryReport, LeaderEpochCache; PartitionLog, the interface the core
uses (partition_log.py), which Log and impl/core's MemoryLog implement.
"""

from kafkaref.impl.storage.config import LogConfig
from kafkaref.impl.storage.epoch_cache import LeaderEpochCache
from kafkaref.impl.storage.fetch import FetchSlice
from kafkaref.impl.storage.log import Log
from kafkaref.impl.storage.partition_log import AppendInfo, PartitionLog, RecordsSlice
from kafkaref.impl.storage.recovery import RecoveryReport

__all__ = ["AppendInfo", "FetchSlice", "LeaderEpochCache", "Log", "LogConfig", "PartitionLog",
           "RecordsSlice", "RecoveryReport"]
