"""kafkaref's consumer: assign, seek, poll with min_bytes and max_wait (no groups).

Fetch v11 to each partition's leader; records below the position are skipped (a fetch may
start at the batch holding it); leadership errors refresh metadata; OFFSET_OUT_OF_RANGE resets
to the earliest or latest offset as auto_offset_reset says.

Fetch ahead: when a poll to a single leader brought records for every partition it asked for,
the consumer sends the next Fetch (from the new positions, same max_wait and min_bytes) before
returning, so the broker reads the log while the caller handles the records. The next poll
takes that answer only if it would have sent the very same request (same leader, partitions,
offsets, epochs); otherwise -- after a seek or assign, say -- the answer is read and dropped
before anything else is sent on the connection. So poll() returns the same records as without
fetching ahead (the fetched log can only have grown, and a fetch answers from its offsets).
"""

from __future__ import annotations

import time

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.cluster_view import ClusterView, NoBrokerAvailable
from kafkaref.impl.protocol.list_offsets import EARLIEST, LATEST
from kafkaref.impl.protocol.records import decode_batch_fields, split_batches

FETCH_VERSION, LIST_OFFSETS_VERSION = 11, 5
RETRY_BACKOFF_S = 0.1  # Kafka's retry.backoff.ms
NOT_AVAILABLE_WAIT_S = 30.0  # Kafka's replica.lag.time.max.ms: the ISR shrinks by then at the latest


@attrs.frozen
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple = ()


class CorruptRecords(RuntimeError):
    pass


class Consumer:
    def __init__(self, bootstrap: str, auto_offset_reset: str = "earliest",
                 max_partition_fetch_bytes: int = 1 << 20, client_id: str = "kafkaref-consumer",
                 fetch_ahead: bool = True):
        self.cluster = ClusterView(bootstrap, client_id)
        self.reset = EARLIEST if auto_offset_reset == "earliest" else LATEST
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.positions: dict[tuple[str, int], int | None] = {}
        self.fetch_ahead = fetch_ahead
        self._ahead = None  # (leader, connection, correlation id, fetches, max_wait, min_bytes)

    def close(self) -> None:
        self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def assign(self, partitions) -> None:
        self.positions = {tuple(p): None for p in partitions}

    def seek(self, topic: str, partition: int, offset: int) -> None:
        self.positions[(topic, partition)] = offset

    def seek_to(self, which: int) -> None:
        for key in self.positions:
            self.positions[key] = self.list_offset(key, which)

    def position(self, topic: str, partition: int) -> int:
        key = (topic, partition)
        if self.positions.get(key) is None:
            self.positions[key] = self.list_offset(key, self.reset)
        return self.positions[key]

    def list_offset(self, key: tuple[str, int], timestamp: int) -> int:
        """The offset the leader answers; a lost connection or a moved leader is tried again
        (20 times), OFFSET_NOT_AVAILABLE (a new leader whose hw is still below its epoch's
        start, KIP-207) waited out for up to a replica lag time, as Kafka's clients retry it."""
        self._collect_ahead()  # the connection must be free of a fetched-ahead answer
        failures, deadline = 0, time.monotonic() + NOT_AVAILABLE_WAIT_S
        while failures < 20:
            try:
                connection, epoch = self.cluster.leader_connection(key)
                answer = connection.send(2, LIST_OFFSETS_VERSION, {
                    "replica_id": -1, "isolation_level": 0, "topics": [{"name": key[0],
                        "partitions": [{"partition_index": key[1], "timestamp": timestamp,
                                        "current_leader_epoch": -1}]}]})
            except (OSError, ValueError, NoBrokerAvailable):
                self.cluster.drop()
                failures += 1
                continue
            part = answer.topics[0].partitions[0]
            if part.error_code == ErrorCode.none:
                return part.offset
            if part.error_code == ErrorCode.offset_not_available and time.monotonic() < deadline:
                time.sleep(RETRY_BACKOFF_S)
                continue
            self.cluster.drop()
            failures += 1
        raise NoBrokerAvailable(f"ListOffsets failed for {key}")

    def poll(self, max_wait_ms: int = 500, min_bytes: int = 1) -> list[ConsumerRecord]:
        """One fetch round to each leader; records at or after each position, in order."""
        ready = self._collect_ahead()
        by_leader: dict[int, list] = {}
        for key in self.positions:
            offset = self.position(*key)
            leader = self.cluster.leaders.get(key)
            if leader is None or leader[0] < 0:
                self.cluster.refresh([key[0]])
                leader = self.cluster.leaders.get(key, (-1, -1))
            by_leader.setdefault(leader[0], []).append((key, offset, leader[1]))
        out: list[ConsumerRecord] = []
        for leader, fetches in by_leader.items():
            if leader < 0:
                continue
            if ready is not None and ready[:4] == (leader, fetches, max_wait_ms, min_bytes):
                answer = ready[4]
            else:
                try:
                    answer = self.cluster.connection(leader).send(
                        1, FETCH_VERSION, self._fetch_values(fetches, max_wait_ms, min_bytes))
                except (OSError, ValueError):
                    self.cluster.drop(leader)
                    continue
            taken = [self._take((topic.topic, part.partition_index), part)
                     for topic in answer.responses for part in topic.partitions]
            for records in taken:
                out.extend(records)
            if self.fetch_ahead and len(by_leader) == 1 and len(taken) == len(fetches) and all(
                    taken):
                self._send_ahead(leader, max_wait_ms, min_bytes)
        return out

    def _fetch_values(self, fetches, max_wait_ms: int, min_bytes: int) -> dict:
        return {
            "replica_id": -1, "max_wait": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": 50 << 20, "isolation_level": 0, "session_id": 0,
            "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
            "topics": [{"topic": key[0], "partitions": [{
                "partition": key[1], "fetch_offset": offset,
                "current_leader_epoch": epoch, "log_start_offset": -1,
                "partition_max_bytes": self.max_partition_fetch_bytes}]}
                for key, offset, epoch in fetches]}

    def _send_ahead(self, leader: int, max_wait_ms: int, min_bytes: int) -> None:
        """Send the Fetch the next poll would send (same leader and partitions, new positions)."""
        fetches = []
        for key in self.positions:
            offset, known = self.positions[key], self.cluster.leaders.get(key)
            if offset is None or known is None or known[0] != leader:
                return
            fetches.append((key, offset, known[1]))
        try:
            connection = self.cluster.connection(leader)
            correlation_id = connection.send_request(
                1, FETCH_VERSION, self._fetch_values(fetches, max_wait_ms, min_bytes))
        except (OSError, ValueError):
            self.cluster.drop(leader)
            return
        self._ahead = (leader, connection, correlation_id, fetches, max_wait_ms, min_bytes)

    def _collect_ahead(self):
        """(leader, fetches, max_wait, min_bytes, answer) of the fetch sent ahead, or None;
        either way the connection is free again."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return None
        leader, connection, correlation_id, fetches, max_wait_ms, min_bytes = ahead
        try:
            answer = connection.receive(1, FETCH_VERSION, correlation_id)
        except (OSError, ValueError):
            self.cluster.drop(leader)
            return None
        return leader, fetches, max_wait_ms, min_bytes, answer

    def _take(self, key, part) -> list[ConsumerRecord]:
        if part.error_code == ErrorCode.offset_out_of_range:
            self.positions[key] = None
            return []
        if part.error_code != ErrorCode.none:
            self.cluster.drop()
            return []
        error, views = split_batches(part.records or b"", allow_partial_tail=True)
        position = self.positions[key]
        records = []
        topic, partition = key
        for view in views:
            error, header, fields = decode_batch_fields(view)
            if error != ErrorCode.none:
                raise CorruptRecords(f"{key} at offset {position}: {error.name}")
            records.extend([ConsumerRecord(topic, partition, *f) for f in fields
                            if f[0] >= position])
            position = max(position, header.next_offset)
        self.positions[key] = position
        return records
