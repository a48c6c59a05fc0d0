"""One broker's request handling, single-threaded: a decoded request in, a kio response out.

`Broker.handle(request, respond)` answers every supported API by calling the replica manager
and building the response for the request's exact version (impl/protocol/messages.build).
`respond(None)` means "send nothing" (acks=0). A request may be answered later (purgatory);
the caller serialises all calls (the threaded server holds one lock around the core).
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Iterator

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.delayed import FetchPartition
from kafkaref.impl.core.groups import GroupCoordinator
from kafkaref.impl.core.metadata import ClusterMetadata
from kafkaref.impl.core.partition import PartitionConfig
from kafkaref.impl.core.replica_manager import ReplicaManager
from kafkaref.impl.core.topic_rules import check_assignment, check_configs, legal_topic_name
from kafkaref.impl.core.zero_copy import EncodedResponse, SliceRecords, close_records
from kafkaref.impl.mutants import NONE, Mutant, parse_mutants
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.fetch_response import PartitionAnswer, encode_fetch_response
from kafkaref.impl.protocol.messages import build, millis

TopicCreator = Callable[[str, int, int, dict, Callable[[ErrorCode, str | None], None]], None]


@attrs.frozen
class BrokerConfig:
    broker_id: int = 0
    auto_create_topics: bool = True
    default_partitions: int = 1
    default_replication_factor: int = 1
    replica_lag_time_max_ms: int = 30_000
    # Deliberate faults (impl/mutants.py), set only by tests or `kafkaref broker --mutant`;
    # every partition of this broker gets them (core and replication ones act there).
    mutants: frozenset[Mutant] = attrs.field(default=NONE, converter=parse_mutants)


class Broker:
    def __init__(self, config: BrokerConfig, clock: Callable[[], int], log_factory: Callable,
                 producer_id_base: int = 0, alter_isr: Callable | None = None,
                 producer_ids: Iterator[int] | None = None):
        self.config, self.clock = config, clock
        self.broker_id = config.broker_id
        self.replica_manager = ReplicaManager(
            config.broker_id, clock, log_factory, alter_isr,
            isr_check_interval_ms=max(1, config.replica_lag_time_max_ms // 2),
            known_partition=self._known_partition,
        )
        self.metadata = ClusterMetadata()
        self.create_topic: TopicCreator | None = None  # set by whoever owns the control plane
        self.on_follower_change: Callable[[tuple[str, int], int, int], None] | None = None
        self.offsets: dict[tuple[str, str, int], tuple[int, int, str | None]] = {}
        self.groups = GroupCoordinator(clock)
        self.zero_copy_fetch = False  # the server turns it on: records go out by sendfile
        # Ids must never repeat across restarts: the server passes a persisted source.
        self._producer_ids = producer_ids if producer_ids is not None else itertools.count(producer_id_base)
        self._handlers = {
            0: self._produce, 1: self._fetch, 2: self._list_offsets, 3: self._metadata,
            8: self._offset_commit, 9: self._offset_fetch, 10: self._find_coordinator,
            11: self._join_group, 12: self._heartbeat, 13: self._leave_group,
            14: self._sync_group,
            18: self._api_versions, 19: self._create_topics, 22: self._init_producer_id,
            23: self._offset_for_leader_epoch,
        }

    # -- metadata ---------------------------------------------------------------------------
    def apply_metadata(self, metadata: ClusterMetadata) -> None:
        """Adopt a newer metadata image: lead, follow or update ISRs accordingly."""
        if metadata.epoch < self.metadata.epoch:
            return
        live_before = {b.broker_id for b in self.metadata.brokers}
        self.metadata = metadata
        rm = self.replica_manager
        for gone in live_before - {b.broker_id for b in metadata.brokers}:
            rm.follower_fenced(gone)
        for topic in metadata.topics:
            config = self._partition_config(topic)
            for index, meta in enumerate(topic.partitions):
                if self.broker_id not in meta.replicas:
                    continue
                key = (topic.name, index)
                current = rm.partition(key)
                if meta.leader == self.broker_id:
                    if current is not None and current.is_leader and (
                            current.leader_epoch == meta.leader_epoch):
                        current.config = config
                        rm.isr_committed(key, meta.leader_epoch, meta.isr, meta.partition_epoch)
                    else:
                        rm.become_leader(key, config, meta.leader_epoch, meta.isr, meta.replicas,
                                         meta.partition_epoch)
                elif current is None or current.leader_id != meta.leader or (
                        current.leader_epoch != meta.leader_epoch):
                    rm.become_follower(key, config, meta.leader, meta.leader_epoch, meta.replicas,
                                       meta.partition_epoch)
                    if self.on_follower_change is not None:
                        self.on_follower_change(key, meta.leader, meta.leader_epoch)

    def _known_partition(self, key: tuple[str, int]) -> bool:
        topic = self.metadata.topic(key[0])
        return topic is not None and 0 <= key[1] < len(topic.partitions)

    def _partition_config(self, topic) -> PartitionConfig:
        config = topic.config()
        return attrs.evolve(config, replica_lag_time_max_ms=self.config.replica_lag_time_max_ms,
                            mutants=self.config.mutants)

    # -- dispatch ---------------------------------------------------------------------------
    def handle(self, request: wire.Request, respond: Callable[[object | None], None]) -> None:
        if request.body is None:  # ApiVersions at a version we do not know
            respond(wire.unsupported_api_versions_response())
            return
        self._handlers[request.api_key](request, respond)

    def _response(self, request: wire.Request, values: dict):
        return build(wire.response_class(request.api_key, request.api_version), values)

    # -- ApiVersions, Metadata, FindCoordinator, CreateTopics -----------------------------------
    def _api_versions(self, request, respond):
        keys = [{"api_key": k, "min_version": lo, "max_version": hi}
                for k, (_, lo, hi) in sorted(wire.SUPPORTED.items())]
        respond(self._response(request, {"error_code": 0, "api_keys": keys}))

    def _metadata(self, request, respond):
        body = request.body
        names = None if body.topics is None else [t.name for t in body.topics]
        missing = [n for n in names or () if self.metadata.topic(n) is None
                   and legal_topic_name(n)]
        allow = getattr(body, "allow_auto_topic_creation", True)
        if missing and allow and self.config.auto_create_topics and self.create_topic:
            pending = set(missing)

            def created(name):
                def done(error, message):
                    pending.discard(name)
                    if not pending:
                        respond(self._metadata_response(request, names))
                return done

            for name in missing:
                self.create_topic(name, self.config.default_partitions,
                                  self.config.default_replication_factor, {}, created(name))
            return
        respond(self._metadata_response(request, names))

    def _metadata_response(self, request, names):
        meta = self.metadata
        live = {b.broker_id for b in meta.brokers}
        topics = []
        for name in names if names is not None else [t.name for t in meta.topics]:
            topic = meta.topic(name)
            if topic is None:
                error = (ErrorCode.unknown_topic_or_partition if legal_topic_name(name)
                         else ErrorCode.invalid_topic_exception)  # a client retries the first
                topics.append({"name": name, "error_code": error})
                continue
            partitions = []
            for index, p in enumerate(topic.partitions):
                partitions.append({
                    "error_code": 0 if p.leader >= 0 else ErrorCode.leader_not_available,
                    "partition_index": index, "leader_id": p.leader,
                    "leader_epoch": p.leader_epoch, "replica_nodes": p.replicas,
                    "isr_nodes": p.isr,
                    "offline_replicas": tuple(r for r in p.replicas if r not in live),
                })
            topics.append({"name": name, "error_code": 0, "is_internal": False,
                           "partitions": partitions})
        brokers = [{"node_id": b.broker_id, "host": b.host, "port": b.port, "rack": None}
                   for b in meta.brokers]
        return self._response(request, {
            "brokers": brokers, "cluster_id": meta.cluster_id,
            "controller_id": meta.controller_id, "topics": topics,
            "cluster_authorized_operations": -2**31, "topic_authorized_operations": -2**31,
        })

    def _find_coordinator(self, request, respond):
        """Every broker names the same coordinator for a key: the live broker at
        crc32(key) mod the number of live brokers. Group state and committed offsets live in
        that broker's memory only (no __consumer_offsets topic: a documented simplification)."""
        brokers = sorted(self.metadata.brokers, key=lambda b: b.broker_id)
        if not brokers:
            respond(self._response(request, {"error_code": ErrorCode.coordinator_not_available,
                                             "node_id": -1, "host": "", "port": -1}))
            return
        chosen = self._coordinator(getattr(request.body, "key", "") or "")
        respond(self._response(request, {"error_code": 0, "node_id": chosen.broker_id,
                                         "host": chosen.host, "port": chosen.port}))

    def _coordinator(self, key: str):
        brokers = sorted(self.metadata.brokers, key=lambda b: b.broker_id)
        return brokers[zlib.crc32(key.encode()) % len(brokers)] if brokers else None

    def _not_coordinator(self, group_id: str) -> bool:
        chosen = self._coordinator(group_id)
        return chosen is not None and chosen.broker_id != self.broker_id

    def _create_topics(self, request, respond):
        body = request.body
        results, pending = {}, []
        for topic in body.topics:
            if self.metadata.topic(topic.name) is not None:
                results[topic.name] = (ErrorCode.topic_already_exists, "topic exists")
            elif self.create_topic is None:
                results[topic.name] = (ErrorCode.not_controller, "no control plane")
            elif not legal_topic_name(topic.name):
                results[topic.name] = (ErrorCode.invalid_topic_exception, "bad topic name")
            else:
                refused = self._refused_topic(topic)
                if refused is not None:
                    results[topic.name] = refused
                else:
                    pending.append(topic)

        def finish():
            topics = [{"name": n, "error_code": e, "error_message": m}
                      for n, (e, m) in results.items()]
            respond(self._response(request, {"topics": topics}))

        if body.validate_only:
            # every topic gets an answer (librdkafka's 0081 crashed on the missing ones)
            for topic in pending:
                results[topic.name] = self._validated(topic)
        if not pending or body.validate_only:
            finish()
            return
        waiting = {t.name for t in pending}
        for topic in pending:
            configs = {c.name: c.value for c in topic.configs}
            assignment = _assignment(topic)
            partitions = topic.num_partitions if topic.num_partitions > 0 else (
                self.config.default_partitions)
            rf = topic.replication_factor if topic.replication_factor > 0 else (
                self.config.default_replication_factor)
            if assignment:
                partitions, rf = len(assignment), len(assignment[0])

            def done(error, message, name=topic.name):
                results[name] = (error, message)
                waiting.discard(name)
                if not waiting:
                    finish()

            if assignment:
                self.create_topic(topic.name, partitions, rf, configs, done,
                                  assignment=assignment)
            else:
                self.create_topic(topic.name, partitions, rf, configs, done)

    def _validated(self, topic) -> tuple[ErrorCode, str | None]:
        """What creating this (already rule-checked) topic would answer, for validate_only:
        the replication factor is the one thing left that only the cluster can refuse."""
        rf = topic.replication_factor if topic.replication_factor > 0 else (
            self.config.default_replication_factor)
        live = len(self.metadata.brokers)
        if not topic.assignments and rf > live:
            return (ErrorCode.invalid_replication_factor,
                    f"replication factor {rf} larger than the {live} available brokers")
        return ErrorCode.none, None

    def _refused_topic(self, topic) -> tuple[ErrorCode, str] | None:
        """Why a CreateTopics entry is refused before reaching the controller, or None."""
        error, message = check_configs({c.name: c.value for c in topic.configs})
        if error == ErrorCode.none and topic.assignments:
            error, message = check_assignment(
                _assignment(topic), {b.broker_id for b in self.metadata.brokers},
                topic.num_partitions, topic.replication_factor)
        return None if error == ErrorCode.none else (error, message)

    # -- Produce ----------------------------------------------------------------------------
    def _produce(self, request, respond):
        body = request.body
        if body.transactional_id is not None:
            errors = {(t.name, p.index): ErrorCode.transactional_id_authorization_failed
                      for t in body.topic_data for p in t.partition_data}
            respond(self._produce_response(request, {}, errors))
            return
        entries, errors = {}, {}
        for topic in body.topic_data:
            for p in topic.partition_data:
                key = (topic.name, p.index)
                if self.replica_manager.partition(key) is None:
                    errors[key] = ErrorCode.unknown_topic_or_partition
                elif p.records is None:
                    errors[key] = ErrorCode.invalid_record
                else:
                    entries[key] = p.records  # a view of the request frame: not copied
        acks = body.acks

        def done(results):
            respond(None if acks == 0 else self._produce_response(request, results, errors))

        if entries:
            self.replica_manager.append_records(millis(body.timeout), acks, entries, done)
        else:
            done({})

    def _produce_response(self, request, results, errors):
        by_topic: dict[str, list] = {}
        for key, error in errors.items():
            by_topic.setdefault(key[0], []).append(
                {"index": key[1], "error_code": error, "base_offset": -1,
                 "log_append_time": -1, "log_start_offset": -1})
        for key, result in results.items():
            by_topic.setdefault(key[0], []).append(
                {"index": key[1], "error_code": result.error, "base_offset": result.base_offset,
                 "log_append_time": -1, "log_start_offset": result.log_start_offset,
                 "error_message": result.error_message if result.error else None})
        responses = [{"name": n, "partition_responses": ps} for n, ps in by_topic.items()]
        return self._response(request, {"responses": responses})

    # -- Fetch ------------------------------------------------------------------------------
    def _fetch(self, request, respond):
        body = request.body
        replica_id = getattr(body, "replica_id", -1)
        fetches, order = {}, []
        for topic in body.topics:
            for p in topic.partitions:
                key = (topic.topic, p.partition)
                order.append(key)
                fetches[key] = FetchPartition(
                    p.fetch_offset, p.partition_max_bytes,
                    getattr(p, "current_leader_epoch", -1), getattr(p, "last_fetched_epoch", -1))

        def done(results):
            respond(self._fetch_response(request, order, results))

        self.replica_manager.fetch(replica_id, millis(body.max_wait), body.min_bytes,
                                   getattr(body, "max_bytes", 0x7FFFFFFF), fetches, done,
                                   zero_copy=self.zero_copy_fetch)

    def _fetch_response(self, request, order, results):
        if self.zero_copy_fetch:
            return self._encoded_fetch_response(request, order, results)
        by_topic: dict[str, list] = {}
        for key in order:
            r = results[key]
            diverging = {"epoch": -1, "end_offset": -1}
            if r.diverging_epoch is not None:
                diverging = {"epoch": r.diverging_epoch[0], "end_offset": r.diverging_epoch[1]}
            by_topic.setdefault(key[0], []).append({
                "partition_index": key[1], "error_code": r.error,
                "high_watermark": r.high_watermark, "last_stable_offset": r.high_watermark,
                "log_start_offset": r.log_start_offset, "diverging_epoch": diverging,
                "current_leader": {"leader_id": -1, "leader_epoch": -1},
                "snapshot_id": {"end_offset": -1, "epoch": -1},
                "aborted_transactions": None, "preferred_read_replica": -1,
                "records": r.records,
            })
        responses = [{"topic": n, "partitions": ps} for n, ps in by_topic.items()]
        return self._response(request, {"error_code": 0, "session_id": 0,
                                         "responses": responses})

    @staticmethod
    def _encoded_fetch_response(request, order, results) -> EncodedResponse:
        """The server's path: the frame encoded here (impl/protocol/fetch_response.py, the same
        bytes as kio's at a fraction of the cost), file ranges as parts of their own."""
        by_topic: dict[str, list] = {}
        for key in order:
            r = results[key]
            by_topic.setdefault(key[0], []).append(PartitionAnswer(
                key[1], r.error, r.high_watermark, r.log_start_offset, r.records,
                r.diverging_epoch))
        try:
            parts = encode_fetch_response(request.api_version, request.correlation_id,
                                          list(by_topic.items()))
        except Exception:
            close_records(results)  # the file ranges hold duplicated descriptors
            raise
        return EncodedResponse([p.slice if isinstance(p, SliceRecords) else p for p in parts])

    # -- offsets ----------------------------------------------------------------------------
    def _list_offsets(self, request, respond):
        body = request.body
        replica_id = body.replica_id
        topics = []
        for topic in body.topics:
            partitions = []
            for p in topic.partitions:
                answer = self.replica_manager.list_offset(
                    (topic.name, p.partition_index), p.timestamp,
                    getattr(p, "current_leader_epoch", -1), replica_id)
                partitions.append({"partition_index": p.partition_index,
                                   "error_code": answer.error, "timestamp": answer.timestamp,
                                   "offset": answer.offset, "leader_epoch": answer.leader_epoch})
            topics.append({"name": topic.name, "partitions": partitions})
        respond(self._response(request, {"topics": topics}))

    def _offset_for_leader_epoch(self, request, respond):
        topics = []
        for topic in request.body.topics:
            partitions = []
            for p in topic.partitions:
                answer = self.replica_manager.offset_for_leader_epoch(
                    (topic.topic, p.partition), p.leader_epoch, p.current_leader_epoch)
                partitions.append({"error_code": answer.error, "partition": p.partition,
                                   "leader_epoch": answer.leader_epoch,
                                   "end_offset": answer.offset})
            topics.append({"topic": topic.topic, "partitions": partitions})
        respond(self._response(request, {"topics": topics}))

    def _init_producer_id(self, request, respond):
        if request.body.transactional_id is not None:
            respond(self._response(request, {
                "error_code": ErrorCode.transactional_id_authorization_failed,
                "producer_id": -1, "producer_epoch": -1}))
            return
        respond(self._response(request, {"error_code": 0,
                                         "producer_id": next(self._producer_ids),
                                         "producer_epoch": 0}))

    def _offset_commit(self, request, respond):
        body = request.body
        refused = self._not_coordinator(body.group_id)
        topics = []
        for topic in body.topics:
            partitions = []
            for p in topic.partitions:
                if refused:
                    partitions.append({"partition_index": p.partition_index,
                                       "error_code": ErrorCode.not_coordinator})
                    continue
                meta = self.metadata.topic(topic.name)
                if meta is None or not 0 <= p.partition_index < len(meta.partitions):
                    partitions.append({"partition_index": p.partition_index,  # as Kafka does
                                       "error_code": ErrorCode.unknown_topic_or_partition})
                    continue
                epoch = getattr(p, "committed_leader_epoch", -1)
                self.offsets[(body.group_id, topic.name, p.partition_index)] = (
                    p.committed_offset, epoch, p.committed_metadata)
                partitions.append({"partition_index": p.partition_index, "error_code": 0})
            topics.append({"name": topic.name, "partitions": partitions})
        respond(self._response(request, {"topics": topics}))

    def _offset_fetch(self, request, respond):
        body = request.body
        if self._not_coordinator(body.group_id):
            respond(self._response(request, {"topics": [], "error_code":
                                             ErrorCode.not_coordinator}))
            return
        if body.topics is None:
            wanted: dict[str, list[int]] = {}
            for group, name, index in self.offsets:
                if group == body.group_id:
                    wanted.setdefault(name, []).append(index)
        else:
            wanted = {t.name: list(t.partition_indexes) for t in body.topics}
        topics = []
        for name, indexes in wanted.items():
            partitions = []
            for index in indexes:
                offset, epoch, meta = self.offsets.get((body.group_id, name, index),
                                                       (-1, -1, ""))
                partitions.append({"partition_index": index, "committed_offset": offset,
                                   "committed_leader_epoch": epoch, "metadata": meta,
                                   "error_code": 0})
            topics.append({"name": name, "partitions": partitions})
        respond(self._response(request, {"topics": topics, "error_code": 0}))

    # -- consumer groups (classic protocol) ----------------------------------------------------
    def _join_group(self, request, respond):
        body = request.body
        if self._not_coordinator(body.group_id):
            respond(self._response(request, {"error_code": ErrorCode.not_coordinator,
                                             "generation_id": -1, "member_id": body.member_id}))
            return

        def done(answer):
            members = [{"member_id": m, "group_instance_id": i, "metadata": meta}
                       for m, i, meta in answer.members]
            respond(self._response(request, {
                "error_code": answer.error, "generation_id": answer.generation_id,
                "protocol_name": answer.protocol_name or "", "leader": answer.leader,
                "member_id": answer.member_id, "members": members}))

        session = millis(body.session_timeout)
        rebalance = millis(getattr(body, "rebalance_timeout", body.session_timeout))
        self.groups.join(body.group_id, body.member_id, getattr(body, "group_instance_id", None),
                         body.protocol_type, [(p.name, p.metadata) for p in body.protocols],
                         session, rebalance, done)

    def _sync_group(self, request, respond):
        body = request.body
        if self._not_coordinator(body.group_id):
            respond(self._response(request, {"error_code": ErrorCode.not_coordinator}))
            return

        def done(error, assignment):
            respond(self._response(request, {"error_code": error, "assignment": assignment}))

        self.groups.sync(body.group_id, body.generation_id, body.member_id,
                         [(a.member_id, a.assignment) for a in body.assignments], done)

    def _heartbeat(self, request, respond):
        body = request.body
        error = ErrorCode.not_coordinator if self._not_coordinator(body.group_id) else (
            self.groups.heartbeat(body.group_id, body.generation_id, body.member_id))
        respond(self._response(request, {"error_code": error}))

    def _leave_group(self, request, respond):
        body = request.body
        error = ErrorCode.not_coordinator if self._not_coordinator(body.group_id) else (
            self.groups.leave(body.group_id, body.member_id))
        respond(self._response(request, {"error_code": error}))

    # -- time -------------------------------------------------------------------------------
    def advance_clock(self, now_ms: int | None = None) -> None:
        self.replica_manager.advance_clock(now_ms)
        self.groups.advance_clock(now_ms)

    def next_deadline_ms(self) -> int | None:
        """No purgatory expiration or ISR check is due before this time (None: none is
        scheduled). Group session and rebalance timeouts are scans, not timers: a caller that
        sleeps until this time must still call advance_clock now and then for them."""
        return self.replica_manager.next_deadline_ms()


def _assignment(topic) -> dict[int, list[int]]:
    """A CreateTopics entry's explicit replica assignment as {partition: [broker ids]}."""
    return {a.partition_index: list(a.broker_ids) for a in topic.assignments}
