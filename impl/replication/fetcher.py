"""Replica fetcher threads: one per leader broker, fetching every partition this broker follows
from that leader with Fetch v12 (replica id, current leader epoch, last fetched epoch), encoded
and decoded by impl/protocol/replica_fetch.py (kio's bytes, without its per-field cost and with
the records left in the connection's buffer).

Truncation is by the diverging epoch the leader returns (KIP-320 + fetch v12): the follower cuts
its log at min(leader's end offset for that epoch, its own end offset for it) and fetches again,
so after a few rounds its log is a prefix-consistent copy of the leader's. Fences
(FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER) mean "wait for newer
metadata": the fetcher backs off and retries with whatever the broker then believes.
OFFSET_OUT_OF_RANGE below the leader's log start (a DeleteRecords passed this follower while it
lagged): the fetcher asks the leader for its log start (ListOffsets EARLIEST, as Kafka's fetcher
does) and starts its log again, empty, there (apply.start_at_leader_log_start).
"""

from __future__ import annotations

import logging
import threading

from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import ConnectionClosed, KafkaConnection
from kafkaref.impl.protocol.list_offsets import EARLIEST, LATEST
from kafkaref.impl.protocol.replica_fetch import (
    FetchPosition,
    decode_fetch_response,
    encode_fetch_request,
)
from kafkaref.impl.replication.apply import (
    apply_fetch_response,
    response_is_current,
    start_at_leader_log_start,
    truncate_to_leader_end,
)

log = logging.getLogger(__name__)
# Kafka's replica.fetch.max.bytes and replica.fetch.response.max.bytes defaults: what one
# partition, and one whole fetch, may return (the first batch comes whole even if larger)
PARTITION_MAX_BYTES, FETCH_MAX_BYTES = 1 << 20, 10 << 20
# A fetch response is at most max_bytes of records plus headers; anything larger is garbage.
RESPONSE_BYTES_MAX = FETCH_MAX_BYTES + (1 << 20)
LIST_OFFSETS_VERSION = 5  # the leader's log end and start, for a fetch out of range


class FetcherManager(threading.Thread):
    """Starts a ReplicaFetcher for each leader some followed partition names."""

    fetcher_class: type[ReplicaFetcher]  # set below; a test harness may subclass both

    def __init__(self, server, max_wait_ms: int, poll_ms: int = 50):
        super().__init__(name="kafkaref-fetcher-manager", daemon=True)
        self.server, self.max_wait_ms, self.poll_ms = server, max_wait_ms, poll_ms
        self.fetchers: dict[int, ReplicaFetcher] = {}

    def run(self) -> None:
        stopping = self.server.stopping
        while not stopping.wait(self.poll_ms / 1000):
            with self.server.lock:
                leaders = {p.leader_id for p in self.server.broker.replica_manager.partitions
                           .values() if not p.is_leader and p.leader_id is not None
                           and p.leader_id >= 0}
            for leader in leaders - set(self.fetchers):
                fetcher = self.fetcher_class(self.server, leader, self.max_wait_ms)
                self.fetchers[leader] = fetcher
                fetcher.start()
        for fetcher in self.fetchers.values():
            fetcher.join(5)


class ReplicaFetcher(threading.Thread):
    def __init__(self, server, leader_id: int, max_wait_ms: int):
        super().__init__(name=f"kafkaref-fetcher-{leader_id}", daemon=True)
        self.server, self.leader_id, self.max_wait_ms = server, leader_id, max_wait_ms
        self.connection: KafkaConnection | None = None
        self.address: tuple[str, int] | None = None
        self.planned: dict = {}  # key -> the Partition the fetch in flight was planned for

    def run(self) -> None:
        stopping = self.server.stopping
        try:
            while not stopping.is_set():
                plan = self._plan()
                if plan is None:
                    self._disconnect()
                    stopping.wait(0.05)
                    continue
                address, fetches = plan
                try:
                    response = self._fetch(address, fetches)
                except Exception as exc:  # noqa: BLE001 -- reconnect and retry, never die
                    log.info("fetch from broker %s failed: %s", self.leader_id, exc)
                    self._disconnect()
                    stopping.wait(0.1)
                    continue
                try:
                    progressed = self._apply(fetches, response)
                    progressed |= self._start_at_leader_log_start(fetches, response)
                except Exception:  # noqa: BLE001 -- keep fetching; the next round retries
                    log.exception("applying a fetch response from broker %s", self.leader_id)
                    progressed = False
                if not progressed:
                    stopping.wait(0.05)
        finally:
            self._disconnect()

    def _plan(self):
        """(leader address, {key: (offset, leader epoch, last fetched epoch)}) or None."""
        with self.server.lock:
            broker = self.server.broker
            endpoint = broker.metadata.broker(self.leader_id)
            fetches, self.planned = {}, {}
            for key, p in broker.replica_manager.partitions.items():
                if not p.is_leader and p.leader_id == self.leader_id:
                    fetches[key] = (p.log_end_offset, p.leader_epoch, p.log.epochs.latest_epoch,
                                    p.log.log_start_offset)
                    self.planned[key] = p
        if endpoint is None or not fetches:
            return None
        peer = self.server.config.peer_addresses.get(self.leader_id)
        return (peer or (endpoint.host, endpoint.port)), fetches

    def _disconnect(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection, self.address = None, None

    def _fetch(self, address, fetches):
        if self.connection is None or self.address != address:
            self._disconnect()
            self.connection = KafkaConnection(
                *address, timeout_s=10, client_id=f"replica-{self.server.broker.broker_id}",
                response_bytes_max=RESPONSE_BYTES_MAX)
            self.address = address
        topics: dict[str, list[FetchPosition]] = {}
        for (topic, index), (offset, epoch, last_epoch, log_start) in fetches.items():
            topics.setdefault(topic, []).append(
                FetchPosition(index, epoch, offset, last_epoch, PARTITION_MAX_BYTES, log_start))
        connection = self.connection
        correlation_id = connection.next_correlation_id()
        connection.send_raw(encode_fetch_request(
            correlation_id, connection.client_id, self.server.broker.broker_id,
            self.max_wait_ms, 1, FETCH_MAX_BYTES, list(topics.items())))
        got_id, _, answers = decode_fetch_response(connection.receive_payload())
        if got_id != correlation_id:
            raise ConnectionClosed(f"correlation id {got_id}, expected {correlation_id}")
        return answers  # records are views of the connection's buffer: apply before the next

    def _apply(self, fetches, answers) -> bool:
        """Apply a fetch response under the core lock; False if every partition errored."""
        progressed = False
        with self.server.lock:
            rm = self.server.broker.replica_manager
            for topic, partitions in answers:
                for answer in partitions:
                    key = (topic, answer.partition_index)
                    partition = rm.partition(key)
                    if partition is None or partition is not self.planned.get(key):
                        continue  # its topic was deleted (and maybe created again) meanwhile
                    offset, epoch, _, _ = fetches[key]
                    if not response_is_current(partition, self.leader_id, epoch, offset):
                        continue  # the role or the log changed while the fetch was out
                    progressed |= self._apply_partition(partition, answer)
        return progressed

    @staticmethod
    def _apply_partition(partition, answer) -> bool:
        outcome = apply_fetch_response(
            partition, answer.error_code, answer.diverging_epoch,
            answer.records if answer.records is not None else b"", answer.high_watermark,
            answer.log_start_offset)
        return outcome != "error"

    def _start_at_leader_log_start(self, fetches, answers) -> bool:
        """For each partition answered OFFSET_OUT_OF_RANGE, as Kafka's fetchOffsetAndTruncate:
        the leader's log end; a log ending above it is cut there (an unclean leader), else with
        the leader's log start, a log ending below it starts again there. True if a log did."""
        out_of_range = [(topic, a.partition_index) for topic, partitions in answers
                        for a in partitions if a.error_code == ErrorCode.offset_out_of_range]
        started = False
        for key in out_of_range:
            offset, epoch, _, _ = fetches[key]
            leader_end = self._leader_offset(key, LATEST, epoch)
            if leader_end is not None and self._with_current(
                    key, epoch, offset, lambda p, end=leader_end: truncate_to_leader_end(p, end)):
                started = True
                continue
            leader_start = self._leader_offset(key, EARLIEST, epoch)
            if leader_start is not None:
                started |= self._with_current(
                    key, epoch, offset,
                    lambda p, start=leader_start: start_at_leader_log_start(p, start))
        return started

    def _leader_offset(self, key, timestamp: int, epoch: int) -> int | None:
        """The leader's answer to a replica's ListOffsets (LATEST: its log end), None on an
        error."""
        answer = self.connection.send(2, LIST_OFFSETS_VERSION, {
            "replica_id": self.server.broker.broker_id, "isolation_level": 0,
            "topics": [{"name": key[0], "partitions": [{
                "partition_index": key[1], "timestamp": timestamp,
                "current_leader_epoch": epoch}]}]}).topics[0].partitions[0]
        return answer.offset if answer.error_code == ErrorCode.none else None

    def _with_current(self, key, epoch: int, offset: int, change) -> bool:
        """change(partition) under the server lock, if the partition is still the one fetched
        for, in the same role and log (else False)."""
        with self.server.lock:
            partition = self.server.broker.replica_manager.partition(key)
            if partition is self.planned.get(key) and response_is_current(
                    partition, self.leader_id, epoch, offset):
                return change(partition)
        return False


FetcherManager.fetcher_class = ReplicaFetcher
