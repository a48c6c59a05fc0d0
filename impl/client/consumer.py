"""kafkaref's consumer: assign, seek, poll with min_bytes and max_wait (no groups).

Fetch v11 to each partition's leader; records below the position are skipped (a fetch may
start at the batch holding it); leadership errors refresh metadata; OFFSET_OUT_OF_RANGE resets
to the earliest or latest offset as auto_offset_reset says.
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.cluster_view import ClusterView, NoBrokerAvailable
from kafkaref.impl.protocol.records import decode_batch_fields, split_batches

FETCH_VERSION, LIST_OFFSETS_VERSION = 11, 5
EARLIEST, LATEST = -2, -1


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
                 max_partition_fetch_bytes: int = 1 << 20, client_id: str = "kafkaref-consumer"):
        self.cluster = ClusterView(bootstrap, client_id)
        self.reset = EARLIEST if auto_offset_reset == "earliest" else LATEST
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.positions: dict[tuple[str, int], int | None] = {}

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
        for _ in range(20):
            try:
                connection, epoch = self.cluster.leader_connection(key)
                answer = connection.send(2, LIST_OFFSETS_VERSION, {
                    "replica_id": -1, "isolation_level": 0, "topics": [{"name": key[0],
                        "partitions": [{"partition_index": key[1], "timestamp": timestamp,
                                        "current_leader_epoch": -1}]}]})
            except (OSError, ValueError, NoBrokerAvailable):
                self.cluster.drop()
                continue
            part = answer.topics[0].partitions[0]
            if part.error_code == ErrorCode.none:
                return part.offset
            self.cluster.drop()
        raise NoBrokerAvailable(f"ListOffsets failed for {key}")

    def poll(self, max_wait_ms: int = 500, min_bytes: int = 1) -> list[ConsumerRecord]:
        """One fetch round to each leader; records at or after each position, in order."""
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
            try:
                answer = self.cluster.connection(leader).send(1, FETCH_VERSION, {
                    "replica_id": -1, "max_wait": max_wait_ms, "min_bytes": min_bytes,
                    "max_bytes": 50 << 20, "isolation_level": 0, "session_id": 0,
                    "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
                    "topics": [{"topic": key[0], "partitions": [{
                        "partition": key[1], "fetch_offset": offset,
                        "current_leader_epoch": epoch, "log_start_offset": -1,
                        "partition_max_bytes": self.max_partition_fetch_bytes}]}
                        for key, offset, epoch in fetches]})
            except (OSError, ValueError):
                self.cluster.drop(leader)
                continue
            for topic in answer.responses:
                for part in topic.partitions:
                    out.extend(self._take((topic.topic, part.partition_index), part))
        return out

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
