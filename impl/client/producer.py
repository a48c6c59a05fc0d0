"""kafkaref's producer: partitioner, batching by batch_size / linger_ms, compression, acks,
retries, optional idempotence (InitProducerId + per-partition sequences).

Deliberately simple and synchronous underneath: `send` appends to a per-partition batch and
returns a Future; a batch is sent when it reaches batch_size bytes, when `poll()`/`send()` find
it older than linger_ms, or on `flush()`. By default requests go one at a time, so with retries
the order per partition is kept. With max_in_flight > 1 (only without idempotence and with
acks != 0) up to that many produce requests are pipelined: the producer builds the next batch
while the broker handles the previous ones, and reads the answers in request order. As with
Kafka's max.in.flight.requests.per.connection > 1 without idempotence, a batch that fails and
is retried may then land after batches sent behind it.
"""

from __future__ import annotations

import bisect
import collections
import collections.abc
import time
from collections.abc import Sequence
from concurrent.futures import Future

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.cluster_view import ClusterView, NoBrokerAvailable
from kafkaref.impl.client.partitioner import StickyPartitioner
from kafkaref.impl.protocol.compression import Compression
from kafkaref.impl.protocol.records import build_batch_from_tuples

PRODUCE_VERSION = 8
RETRIABLE = {
    ErrorCode.not_leader_or_follower, ErrorCode.leader_not_available,
    ErrorCode.request_timed_out, ErrorCode.not_enough_replicas,
    ErrorCode.not_enough_replicas_after_append, ErrorCode.unknown_topic_or_partition,
    ErrorCode.fenced_leader_epoch, ErrorCode.unknown_leader_epoch,
}
ACKS = {"all": -1, "-1": -1, "1": 1, "0": 0}


@attrs.frozen
class RecordMetadata:
    topic: str
    partition: int
    offset: int  # -1 with acks=0


class ProduceError(RuntimeError):
    def __init__(self, error: ErrorCode, message: str = ""):
        super().__init__(f"{error.name}: {message}" if message else error.name)
        self.error = error


class RecordFuture:
    """What send() returns: a view of its batch's Future (one concurrent Future per batch, not
    per record: creating one costs microseconds, which per record was most of send()'s time).
    result() / exception() / done() / add_done_callback() behave like concurrent.futures."""

    __slots__ = ("_batch", "_index", "_topic", "_partition", "_settle")

    def __init__(self, batch: Future, index: int, topic: str, partition: int, settle=None):
        self._batch, self._index = batch, index
        self._topic, self._partition = topic, partition
        self._settle = settle  # reads pipelined answers (nobody else would: no threads)

    def result(self, timeout: float | None = None) -> RecordMetadata:
        if self._settle is not None and not self._batch.done():
            self._settle()
        offset = self._batch.result(timeout)
        return RecordMetadata(self._topic, self._partition,
                              offset + self._index if offset >= 0 else -1)

    def exception(self, timeout: float | None = None):
        return self._batch.exception(timeout)

    def done(self) -> bool:
        return self._batch.done()

    def add_done_callback(self, fn) -> None:
        self._batch.add_done_callback(lambda _: fn(self))


class RecordFutures(collections.abc.Sequence):
    """What send_many() returns: a sequence of RecordFuture, made on access (building one
    object per record cost about a third of send_many's per-record time)."""

    __slots__ = ("_runs", "_starts", "_settle", "_length")

    def __init__(self, settle=None):
        self._runs: list = []  # (batch future, topic, partition, index of the run's first)
        self._starts: list[int] = []  # position in this sequence where each run starts
        self._settle, self._length = settle, 0

    def _add(self, batch: Future, topic: str, partition: int, first: int, count: int) -> None:
        if count:
            self._runs.append((batch, topic, partition, first))
            self._starts.append(self._length)
            self._length += count

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, item):
        if isinstance(item, slice):
            return [self[i] for i in range(*item.indices(self._length))]
        if item < 0:
            item += self._length
        if not 0 <= item < self._length:
            raise IndexError("RecordFutures index out of range")
        run = bisect.bisect_right(self._starts, item) - 1
        batch, topic, partition, first = self._runs[run]
        return RecordFuture(batch, first + item - self._starts[run], topic, partition,
                            self._settle)


@attrs.define
class _Batch:
    records: list = attrs.Factory(list)  # (key, value, headers, timestamp) tuples
    future: Future = attrs.Factory(Future)  # the base offset (-1 with acks=0)
    size: int = 0
    created: float = 0.0


class Producer:
    def __init__(self, bootstrap: str, acks="all", batch_size: int = 16384,
                 linger_ms: int = 0, compression: str = "none", retries: int = 10,
                 retry_backoff_ms: int = 100, request_timeout_ms: int = 30_000,
                 enable_idempotence: bool = False, client_id: str = "kafkaref-producer",
                 partitioner: StickyPartitioner | None = None, max_in_flight: int = 1):
        self.cluster = ClusterView(bootstrap, client_id)
        self.acks = ACKS[str(acks)] if not isinstance(acks, int) else acks
        self.batch_size, self.linger_ms = batch_size, linger_ms
        self.compression = Compression[compression]
        self.retries, self.retry_backoff_ms = retries, retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self.partitioner = partitioner or StickyPartitioner()
        self.batches: dict[tuple[str, int], _Batch] = {}
        self.idempotent = enable_idempotence
        self.producer_id, self.producer_epoch = -1, -1
        self.sequences: dict[tuple[str, int], int] = {}
        self._poll_due = float("inf")  # when the oldest open batch has lingered long enough
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.max_in_flight = max_in_flight
        self._pipelined = max_in_flight > 1 and self.acks != 0 and not enable_idempotence
        self._in_flight: collections.deque = collections.deque()  # (batch, key, data, conn, id)
        self._settle = self._drain if self._pipelined else None
        if enable_idempotence and self.acks != -1:
            raise ValueError("idempotence needs acks=all")

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- API ------------------------------------------------------------------------------------
    def send(self, topic: str, value: bytes | None, key: bytes | None = None,
             headers=(), partition: int | None = None,
             timestamp_ms: int | None = None) -> RecordFuture:
        if partition is None:
            partition = self.partitioner.partition(topic, key, self.cluster.partitions_for(topic))
        elif topic not in self.cluster.partition_counts:
            self.cluster.partitions_for(topic)
        key_ = (topic, partition)
        batch = self.batches.get(key_)
        if batch is None:
            batch = self._open_batch(key_)
        records = batch.records
        future = RecordFuture(batch.future, len(records), topic, partition, self._settle)
        records.append((key, value, tuple(headers) if headers else (),
                        timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)))
        batch.size += (len(value) if value is not None else 0) + (
            len(key) if key is not None else 0) + 20
        if batch.size >= self.batch_size:
            self._send_batch(key_)
        elif self.linger_ms <= 0 or time.monotonic() >= self._poll_due:
            self.poll()
        return future

    def send_many(self, topic: str, values, keys=None, partition: int | None = None,
                  timestamp_ms: int | None = None) -> Sequence[RecordFuture]:
        """send() for many records at once, without headers: the same records, partitions,
        order and futures as send(topic, value, key=key, partition=partition,
        timestamp_ms=timestamp_ms) for each value (with its key) in turn, at a fraction of the
        per-call cost: one timestamp for the call, one loop that only appends while the batch
        has room. A batch closes when it reaches batch_size, as with send(); the linger check
        runs once after the call (the records arrived together), so with linger_ms=0 a call's
        records share batches instead of leaving one by one. Keyed records without a
        partition go through send() one by one (each key picks its partition).
        Returns a sequence of RecordFuture (RecordFutures: made on access).
        `kafkaref produce` uses it for what stdin has ready."""
        values = list(values)
        keys = [None] * len(values) if keys is None else list(keys)
        if len(keys) != len(values):
            raise ValueError("keys must have one entry per value")
        if partition is None and any(k is not None for k in keys):
            return [self.send(topic, v, key=k, timestamp_ms=timestamp_ms)
                    for v, k in zip(values, keys, strict=True)]
        count = self.cluster.partitions_for(topic)
        timestamp = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
        futures = RecordFutures(self._settle)
        batch_size, i, n = self.batch_size, 0, len(values)
        while i < n:  # one batch per round; the sticky partition moves only when one is sent
            chosen = partition if partition is not None else self.partitioner.partition(
                topic, None, count)
            key_ = (topic, chosen)
            batch = self.batches.get(key_) or self._open_batch(key_)
            records, size, first, start = batch.records, batch.size, len(batch.records), i
            append = records.append
            while i < n:
                value, k = values[i], keys[i]
                append((k, value, (), timestamp))
                size += (len(value) if value is not None else 0) + (
                    len(k) if k is not None else 0) + 20
                i += 1
                if size >= batch_size:
                    break
            batch.size = size
            futures._add(batch.future, topic, chosen, first, i - start)
            if size >= batch_size:
                self._send_batch(key_)
            elif self.linger_ms <= 0 or time.monotonic() >= self._poll_due:
                self.poll()
        return futures

    def _open_batch(self, key: tuple[str, int]) -> _Batch:
        created = time.monotonic()
        batch = self.batches[key] = _Batch(created=created)
        self._poll_due = min(self._poll_due, created + self.linger_ms / 1000)
        return batch

    def poll(self) -> None:
        """Send batches that lingered long enough."""
        now = time.monotonic()
        linger_s = self.linger_ms / 1000
        for key in [k for k, b in self.batches.items() if now - b.created >= linger_s]:
            self._send_batch(key)
        self._poll_due = min((b.created + linger_s for b in self.batches.values()),
                             default=float("inf"))

    def flush(self) -> None:
        for key in list(self.batches):
            self._send_batch(key)
        self._drain()

    # -- sending --------------------------------------------------------------------------------
    def _ensure_producer_id(self) -> None:
        if not self.idempotent or self.producer_id >= 0:
            return
        if not self.cluster.brokers:
            self.cluster.refresh()
        for broker_id in list(self.cluster.brokers):
            try:
                answer = self.cluster.connection(broker_id).send(
                    22, 1, {"transactional_id": None, "transaction_timeout": 60_000})
            except (OSError, ValueError):
                self.cluster.drop(broker_id)
                continue
            if answer.error_code == ErrorCode.none:
                self.producer_id, self.producer_epoch = answer.producer_id, answer.producer_epoch
                return
        raise NoBrokerAvailable("InitProducerId failed on every broker")

    def _send_batch(self, key: tuple[str, int]) -> None:
        batch = self.batches.pop(key, None)
        if batch is None or not batch.records:
            return
        self.partitioner.batch_sent(key[0], self.cluster.partition_counts.get(key[0], 1))
        self._ensure_producer_id()
        sequence = self.sequences.get(key, 0)
        data = build_batch_from_tuples(
            batch.records, compression=self.compression,
            producer_id=self.producer_id if self.idempotent else -1,
            producer_epoch=self.producer_epoch if self.idempotent else -1,
            base_sequence=sequence if self.idempotent else -1,
            base_timestamp=batch.records[0][3])
        if self._pipelined:
            self._send_pipelined(key, batch, data)
            return
        self._finish(key, batch, data, sequence)

    def _finish(self, key, batch: _Batch, data: bytes, sequence: int = 0) -> None:
        """Produce data with retries, one request at a time, and settle the batch's future."""
        try:
            offset = self._produce_with_retries(key, data)
        except Exception as exc:  # noqa: BLE001 -- every future learns the outcome
            batch.future.set_exception(exc)
            return
        if self.idempotent:
            self.sequences[key] = (sequence + len(batch.records)) % (1 << 31)
        batch.future.set_result(offset)

    # -- pipelining (max_in_flight > 1) --------------------------------------------------------
    def _send_pipelined(self, key, batch: _Batch, data: bytes) -> None:
        while len(self._in_flight) >= self.max_in_flight:
            self._complete_oldest()
        try:
            connection, _ = self.cluster.leader_connection(key)
            correlation_id = connection.send_produce_request(
                PRODUCE_VERSION, self.acks, self.request_timeout_ms, key[0], key[1], data)
        except (OSError, ValueError, NoBrokerAvailable):
            self._drain()
            self._finish(key, batch, data)  # the retrying path finds a leader again
            return
        self._in_flight.append((batch, key, data, connection, correlation_id))

    def _complete_oldest(self) -> None:
        batch, key, data, connection, correlation_id = self._in_flight.popleft()
        try:
            answer = connection.receive(0, PRODUCE_VERSION, correlation_id)
            part = answer.responses[0].partition_responses[0]
        except (OSError, ValueError):
            part = None
        if part is not None and part.error_code == ErrorCode.none:
            batch.future.set_result(part.base_offset)
        elif part is not None and part.error_code not in RETRIABLE:
            batch.future.set_exception(ProduceError(part.error_code, part.error_message or ""))
        else:  # read the answers still in flight first: the retry may drop this connection
            self._drain()
            self._finish(key, batch, data)

    def _drain(self) -> None:
        """Read every pipelined answer (in request order)."""
        while self._in_flight:
            self._complete_oldest()

    def _produce_with_retries(self, key: tuple[str, int], data: bytes) -> int:
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.retry_backoff_ms / 1000)
            broker_id = None
            try:
                connection, _ = self.cluster.leader_connection(key)
                broker_id = next(b for b, c in self.cluster.connections.items()
                                 if c is connection)
                correlation_id = connection.send_produce_request(
                    PRODUCE_VERSION, self.acks, self.request_timeout_ms, key[0], key[1], data)
                answer = (connection.receive(0, PRODUCE_VERSION, correlation_id)
                          if self.acks != 0 else None)
            except (OSError, ValueError, NoBrokerAvailable) as exc:
                last = exc
                self.cluster.drop(broker_id)
                continue
            if answer is None:
                return -1
            part = answer.responses[0].partition_responses[0]
            if part.error_code == ErrorCode.none:
                return part.base_offset
            last = ProduceError(part.error_code, part.error_message or "")
            if part.error_code not in RETRIABLE:
                raise last
            self.cluster.drop(broker_id)
        raise last or ProduceError(ErrorCode.unknown_server_error, "retries exhausted")
