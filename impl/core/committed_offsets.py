"""The coordinator's cache of committed offsets, one per __consumer_offsets partition it leads.

The log of each offsets partition is the truth; this cache is what replaying it gives. A broker
that becomes leader of an offsets partition loads it (reads the log from its start to its end,
chunk by chunk, from `load_step`), answering COORDINATOR_LOAD_IN_PROGRESS for its groups until
done; a broker that stops leading it drops the cache (NOT_COORDINATOR from then on), as Kafka's
GroupMetadataManager loads and unloads. A commit enters the cache only once its record is
committed in the log (the broker calls `put` from the produce purgatory's answer), and only if
this broker still leads the partition in the epoch it appended in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.config import OFFSETS_LOAD_CHUNK_BYTES
from kafkaref.impl.core.offsets_topic import (
    CommittedOffset,
    OffsetKey,
    decode_key,
    decode_value,
)
from kafkaref.impl.protocol import records

log = logging.getLogger(__name__)



@attrs.define
class OffsetsPartition:
    index: int
    leader_epoch: int
    loaded: bool = False
    position: int = -1  # next offset to replay while loading (-1: the log's start)
    # group -> (topic, partition) -> what was committed
    groups: dict[str, dict[tuple[str, int], CommittedOffset]] = attrs.Factory(dict)

    def apply(self, key, value: CommittedOffset | None) -> None:
        offsets = self.groups.setdefault(key.group, {})
        if value is None:
            offsets.pop((key.topic, key.partition), None)
            if not offsets:
                del self.groups[key.group]
        else:
            offsets[(key.topic, key.partition)] = value


class CommittedOffsets:
    def __init__(self, chunk_bytes: int = OFFSETS_LOAD_CHUNK_BYTES):
        self.chunk_bytes = chunk_bytes
        self.partitions: dict[int, OffsetsPartition] = {}

    # -- leadership -----------------------------------------------------------------------------
    def lead(self, led: dict[int, int], log_of: Callable[[int], object]) -> set[int]:
        """led: offsets partition -> leader epoch, for every one this broker leads now. Starts
        loading those newly led (or led again in a new epoch: it missed commits in between),
        drops the others; returns the partitions dropped."""
        dropped = {i for i, p in self.partitions.items() if led.get(i) != p.leader_epoch}
        for index in dropped:
            del self.partitions[index]
        for index, epoch in led.items():
            if index not in self.partitions:
                self.partitions[index] = OffsetsPartition(index, epoch)
        self.load_step(log_of)
        return dropped

    def load_step(self, log_of: Callable[[int], object]) -> None:
        """Replay one chunk of every partition still loading; done at its log end offset."""
        for partition in self.partitions.values():
            if not partition.loaded:
                self._replay_chunk(partition, log_of(partition.index))

    def _replay_chunk(self, partition: OffsetsPartition, offsets_log) -> None:
        if offsets_log is None:
            return
        end = offsets_log.log_end_offset
        partition.position = max(partition.position, offsets_log.log_start_offset)
        if partition.position >= end:
            partition.loaded = True
            return
        data = offsets_log.read(partition.position, self.chunk_bytes, end)
        error, batches = records.split_batches(data)
        if not batches:  # unreadable (a corrupt batch): what follows cannot be trusted either
            log.error("offsets partition %d: cannot read at offset %d (%s); loaded up to it",
                      partition.index, partition.position, error)
            partition.loaded = True
            return
        for view in batches:
            batch = records.decode_batch(view)
            if batch.error != ErrorCode.none:  # its records cannot be read: skipped whole
                log.error("offsets partition %d: skipping an unreadable batch (%s)",
                          partition.index, batch.error)
            elif not batch.header.is_control:
                for record in batch.records:
                    self._replay(partition, record)
            # past every batch, the skipped ones too: a load stuck before one would never end
            partition.position = records.parse_header(view).next_offset
        partition.loaded = partition.position >= end

    @staticmethod
    def _replay(partition: OffsetsPartition, record) -> None:
        key = decode_key(record.key or b"")
        if key is None:
            return
        value = None if record.value is None else decode_value(record.value)
        if record.value is not None and value is None:
            return  # a value we cannot read: keep what we had
        partition.apply(key, value)

    # -- questions and commits ------------------------------------------------------------------
    def status(self, index: int) -> ErrorCode:
        partition = self.partitions.get(index)
        if partition is None:
            return ErrorCode.not_coordinator
        return ErrorCode.none if partition.loaded else ErrorCode.coordinator_load_in_progress

    def leader_epoch(self, index: int) -> int:
        partition = self.partitions.get(index)
        return -1 if partition is None else partition.leader_epoch

    def group(self, index: int, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        partition = self.partitions.get(index)
        return dict(partition.groups.get(group_id, {})) if partition is not None else {}

    def group_ids(self) -> set[str]:
        """Every group with committed offsets in a loaded partition."""
        return {g for p in self.partitions.values() if p.loaded for g in p.groups}

    def remove_topics(self, names: set[str]) -> dict[int, list[OffsetKey]]:
        """Forget every committed offset of these (deleted) topics: {offsets partition: the
        keys removed}, for the coordinator to write their tombstones (Kafka's
        GroupMetadataManager.cleanupGroupMetadata on topic deletion). A partition still
        loading is left alone: what it replays of a deleted topic is what Kafka would load."""
        removed: dict[int, list[OffsetKey]] = {}
        for partition in self.partitions.values():
            if not partition.loaded:
                continue
            for group_id, offsets in list(partition.groups.items()):
                for topic, index in [k for k in offsets if k[0] in names]:
                    key = OffsetKey(group_id, topic, index)
                    removed.setdefault(partition.index, []).append(key)
                    partition.apply(key, None)
        return removed

    def remove_group(self, index: int, group_id: str) -> list[OffsetKey]:
        """Forget every committed offset of a deleted group; the keys, for the coordinator to
        write their tombstones."""
        partition = self.partitions.get(index)
        if partition is None:
            return []
        keys = [OffsetKey(group_id, topic, number)
                for topic, number in list(partition.groups.get(group_id, {}))]
        for key in keys:
            partition.apply(key, None)
        return keys

    def put(self, index: int, leader_epoch: int, commits: dict) -> bool:
        """Record commits ({OffsetKey: CommittedOffset}) now committed in the log, if this broker
        still leads the partition in the epoch they were appended in."""
        partition = self.partitions.get(index)
        if partition is None or partition.leader_epoch != leader_epoch:
            return False
        for key, value in commits.items():
            partition.apply(key, value)
        return True
