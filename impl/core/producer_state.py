"""Idempotent producer state per partition: producer id -> epoch and its last batches.

Rules (Kafka's ProducerStateManager / ProducerAppendInfo, client-origin appends):
- an epoch older than the producer's current one: INVALID_PRODUCER_EPOCH;
- a new epoch must start at sequence 0 (unless nothing is known about the producer, or its
  current epoch is NO_PRODUCER_EPOCH, -1: then any sequence is accepted, in that epoch too, as
  Kafka's ProducerAppendInfo.checkSequence does);
- a batch equal to one of the last 5 cached: a duplicate -- Kafka answers success with the
  ORIGINAL offsets and appends nothing (the producer's retry of an acknowledged batch);
- otherwise the base sequence must follow the last one: OUT_OF_ORDER_SEQUENCE_NUMBER.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.config import PRODUCER_STATE_MAX_BATCHES
from kafkaref.impl.protocol.records import INT32_MAX  # the largest sequence, then 0

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1  # a producer whose batches carried no epoch: its sequences are not known


@attrs.frozen
class CachedBatch:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    # the batch's max timestamp: a duplicate is answered with it as its log_append_time, as
    # Kafka's UnifiedLog.append answers one (from the producer state's BatchMetadata)
    timestamp: int = -1


@attrs.frozen
class ProducerEntry:
    epoch: int
    batches: tuple[CachedBatch, ...] = ()

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


@attrs.frozen
class SequenceCheck:
    error: ErrorCode
    duplicate: CachedBatch | None = None


class ProducerState:
    def __init__(self):
        self.producers: dict[int, ProducerEntry] = {}

    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> SequenceCheck:
        if producer_id == NO_PRODUCER_ID:
            return SequenceCheck(ErrorCode.none)
        entry = self.producers.get(producer_id)
        if entry is None:
            return SequenceCheck(ErrorCode.none)
        if epoch < entry.epoch:
            return SequenceCheck(ErrorCode.invalid_producer_epoch)
        unknown_epoch = entry.epoch == NO_PRODUCER_EPOCH  # any sequence goes (Kafka's rule)
        if epoch > entry.epoch:
            ok = first_seq == 0 or unknown_epoch
            return SequenceCheck(ErrorCode.none if ok else ErrorCode.out_of_order_sequence_number)
        for batch in entry.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return SequenceCheck(ErrorCode.none, duplicate=batch)
        expected = 0 if entry.last_seq == INT32_MAX else entry.last_seq + 1
        if first_seq != expected and not unknown_epoch:
            return SequenceCheck(ErrorCode.out_of_order_sequence_number)
        return SequenceCheck(ErrorCode.none)

    def record(self, producer_id: int, epoch: int, batch: CachedBatch) -> None:
        if producer_id == NO_PRODUCER_ID:
            return
        entry = self.producers.get(producer_id)
        kept = entry.batches if entry is not None and entry.epoch == epoch else ()
        self.producers[producer_id] = ProducerEntry(
            epoch, (*kept, batch)[-PRODUCER_STATE_MAX_BATCHES:]
        )

    def truncate_to(self, offset: int) -> None:
        """Forget batches at or beyond offset (a follower truncated its log)."""
        for pid, entry in list(self.producers.items()):
            kept = tuple(b for b in entry.batches if b.last_offset < offset)
            if kept:
                self.producers[pid] = attrs.evolve(entry, batches=kept)
            else:
                del self.producers[pid]
