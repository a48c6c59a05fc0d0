"""One broker's request handling, single-threaded: a decoded request in, a kio response out.

`Broker.handle(request, respond)` answers every supported API by calling the replica manager
and building the response for the request's exact version as values: a kio response object
(impl/protocol/messages.build), or for Fetch a FetchAnswer; whoever carries the answer encodes
it (impl/protocol/wire.encode_response_parts). `respond(None)` means "send nothing" (acks=0),
`respond(CLOSE_CONNECTION)` "close the connection instead of answering" (an acks=0 produce
that failed). A request may be answered later (purgatory);
the caller serialises all calls (the threaded server holds one lock around the core).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from functools import partial

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.core import offsets_topic
from kafkaref.impl.core.admin import AdminApis, created_topic_configs
from kafkaref.impl.core.committed_offsets import CommittedOffsets
from kafkaref.impl.core.config import BrokerConfig, PartitionConfig
from kafkaref.impl.core.delayed import FetchPartition
from kafkaref.impl.core.delete_records import delete_records
from kafkaref.impl.core.describe import (
    CLUSTER_OPERATIONS,
    GROUP_OPERATIONS,
    NOT_ASKED,
    TOPIC_OPERATIONS,
    DescribeApis,
)
from kafkaref.impl.core.groups import GroupCoordinator
from kafkaref.impl.core.metadata import ClusterMetadata, new_topic_id
from kafkaref.impl.core.replica_manager import OffsetAnswer, ReplicaManager
from kafkaref.impl.core.topic_rules import (
    check_assignment_entries,
    check_configs,
    legal_topic_name,
)
from kafkaref.impl.protocol import records, wire
from kafkaref.impl.protocol.fetch_response import (
    TOPIC_IDS_FROM,
    FetchAnswer,
    NodeEndpoint,
    PartitionAnswer,
)
from kafkaref.impl.protocol.messages import build, millis

# Produce v10 and Fetch v16 answer NOT_LEADER_OR_FOLLOWER (Fetch: and FENCED_LEADER_EPOCH)
# with the partition's current leader and its endpoint (KIP-951, KafkaApis)
PRODUCE_LEADER_HINTS, FETCH_LEADER_HINTS = 10, 16
# Fetch v11 carries the consumer's rack and KafkaApis builds client metadata from it (KIP-392)
FETCH_CLIENT_METADATA_VERSION = 11

# ListOffsets' special timestamps and the first version that knows each (Kafka's
# ReplicaManager.isListOffsetsTimestampUnsupported): latest, earliest, max timestamp (KIP-734),
# earliest local (KIP-405), latest tiered (KIP-1005), earliest pending upload (KIP-1023, seen on
# 4.3.1 at v11 and refused at v10). Another negative one: never.
TIMESTAMP_MIN_VERSION = {-1: 0, -2: 0, -3: 7, -4: 8, -5: 9, -6: 11}

GROUP_KEY, TRANSACTION_KEY = 0, 1  # FindCoordinator key types (2: share groups)
CLASSIC_GROUP = "classic"  # the only group type kafkaref has (ListGroups v5's group_type)

# Produce failures Kafka answers with log_start_offset -1 (ReplicaManager.appendToLocalLog:
# UnknownTopicOrPartition, NotLeaderOrFollower, RecordTooLarge, RecordBatchTooLarge,
# CorruptRecord and KafkaStorage exceptions answer UNKNOWN_LOG_APPEND_INFO)
NO_LOG_START_ERRORS = frozenset({
    ErrorCode.unknown_topic_or_partition, ErrorCode.not_leader_or_follower,
    ErrorCode.message_too_large, ErrorCode.record_list_too_large, ErrorCode.corrupt_message,
    ErrorCode.kafka_storage_error})

# The answer to an acks=0 produce that failed somewhere: the connection is closed, so that the
# producer, which waits for no answer, notices and refreshes its metadata (KafkaApis
# .handleProduceRequest: requestChannel.closeConnection when acks == 0 and any error).
CLOSE_CONNECTION = "close the connection"

# Produce v7 is the first whose batches may be zstd-compressed (KIP-110; Kafka's
# ProduceRequest.validateRecords refuses an older request's zstd batch before the append)
ZSTD_PRODUCE_VERSION, ZSTD = 7, 4
READ_UNCOMMITTED, READ_COMMITTED = 0, 1  # a fetch's isolation_level
# Fetch sessions (KIP-227): the Fetch version they start at, and the two epochs of a fetch that
# continues no session (none at all; a full fetch, which may ask the broker for one)
FETCH_SESSIONS_VERSION, SESSIONLESS_EPOCH, FULL_FETCH_EPOCH = 7, -1, 0


def unknown_isolation_level(level: int) -> bool:
    """Kafka's IsolationLevel.forId knows 0 and 1 only; another value throws where the request
    reads it, and KafkaApis answers the whole request with its error response: every partition
    UNKNOWN_SERVER_ERROR (observed on Apache Kafka 4.3.1 for ListOffsets and a consumer's
    Fetch; a follower's Fetch never reads the field)."""
    return level not in (READ_UNCOMMITTED, READ_COMMITTED)


TopicCreator = Callable[[str, int, int, dict, Callable[[ErrorCode, str | None], None]], None]


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
            live_broker=lambda broker_id: self.metadata.broker(broker_id) is not None,
            retention_check_interval_ms=config.log_retention_check_interval_ms,
            retention_initial_delay_ms=config.log_initial_task_delay_ms,
        )
        self.metadata = ClusterMetadata()
        self.create_topic: TopicCreator | None = None  # set by whoever owns the control plane
        self.on_follower_change: Callable[[tuple[str, int], int, int], None] | None = None
        self.committed = CommittedOffsets()  # offsets of the groups this broker coordinates
        self.groups = GroupCoordinator(clock, config.group_min_session_timeout_ms,
                                       config.group_max_session_timeout_ms,
                                       config.group_initial_rebalance_delay_ms)
        self._offsets_topic_requested = False
        self.zero_copy_fetch = False  # the server turns it on: records read as file ranges
        # Ids must never repeat across restarts: the server passes a persisted source.
        self._producer_ids = producer_ids if producer_ids is not None else itertools.count(producer_id_base)
        self._handlers = {
            0: self._produce, 1: self._fetch, 2: self._list_offsets, 3: self._metadata,
            8: self._offset_commit, 9: self._offset_fetch, 10: self._find_coordinator,
            11: self._join_group, 12: self._heartbeat, 13: self._leave_group,
            14: self._sync_group, 15: self._describe_groups, 16: self._list_groups,
            42: self._delete_groups,
            18: self._api_versions, 19: self._create_topics, 22: self._init_producer_id,
            23: self._offset_for_leader_epoch,
        }
        # DeleteTopics, CreatePartitions, Describe/Alter/IncrementalAlterConfigs (admin.py); their
        # control plane is set with create_topic
        self.delete_topic = self.create_partitions = self.alter_topic_configs = None
        self._handlers.update(AdminApis(self).handlers())
        # DescribeCluster, DescribeTopicPartitions, DescribeLogDirs (describe.py)
        self._handlers.update(DescribeApis(self).handlers())
        self._handlers[21] = partial(delete_records, self)  # delete_records.py
        self.log_dir: str | None = None  # the server's data directory (DescribeLogDirs)
        self._topic_ids: dict[str, str] = {}  # the topic id each known topic had when last seen
        # the wire's topic ids of the current image, both ways (requests may name topics by id)
        self._ids_by_name: dict[str, uuid.UUID] = {}
        self._names_by_id: dict[uuid.UUID, str] = {}

    # -- metadata ---------------------------------------------------------------------------
    def apply_metadata(self, metadata: ClusterMetadata) -> None:
        """Adopt a newer metadata image: lead, follow or update ISRs accordingly."""
        if metadata.epoch < self.metadata.epoch:
            return
        live_before = {b.broker_id for b in self.metadata.brokers}
        deleted = _deleted_topics(self.metadata, metadata)
        self.metadata = metadata
        self._index_topic_ids(metadata)
        rm = self.replica_manager
        self._drop_deleted_topics(metadata)
        for gone in live_before - {b.broker_id for b in metadata.brokers}:
            rm.follower_fenced(gone)
        for topic in metadata.topics:
            config = self._partition_config(topic)
            for index, meta in enumerate(topic.partitions):
                if self.broker_id not in meta.replicas:
                    continue
                key = (topic.name, index)
                current = rm.partition(key)
                if current is None and topic.topic_id:
                    rm.open_partition(key, config, topic.topic_id)  # hosted as new below
                elif current is not None:
                    current.reconfigure(config)  # AlterConfigs reaches leaders and followers
                if meta.leader == self.broker_id:
                    if current is not None and current.is_leader and (
                            current.leader_epoch == meta.leader_epoch):
                        current.reconfigure(config)
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
        self._coordinate_offsets_partitions()
        if deleted:
            self._forget_offsets_of(deleted)

    def _index_topic_ids(self, metadata: ClusterMetadata) -> None:
        ids = {t.name: _wire_topic_id(t.topic_id) for t in metadata.topics}
        self._ids_by_name = {name: i for name, i in ids.items() if i is not None}
        self._names_by_id = {i: name for name, i in self._ids_by_name.items()}

    def _known_partition(self, key: tuple[str, int]) -> bool:
        topic = self.metadata.topic(key[0])
        return topic is not None and 0 <= key[1] < len(topic.partitions)

    def _drop_deleted_topics(self, metadata: ClusterMetadata) -> None:
        """Partitions of a topic the image no longer lists, or lists under another topic id
        (deleted and created again while this broker looked away), stop and lose their logs
        (DeleteTopics; Kafka's brokers do so on the topic's removal record)."""
        rm = self.replica_manager
        for key in list(rm.partitions):
            topic = metadata.topic(key[0])
            seen = self._topic_ids.get(key[0])
            if topic is None or (seen is not None and topic.topic_id != seen):
                rm.stop_partition(key)
        self._topic_ids = {t.name: t.topic_id for t in metadata.topics}

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
        all_topics = body.topics is None or (request.api_version == 0 and not body.topics)
        names = None if all_topics else [self._topic_name(t) for t in body.topics]  # v0: [] all
        missing = [n for n in names or () if isinstance(n, str)
                   and self.metadata.topic(n) is None and legal_topic_name(n)]
        if offsets_topic.NAME in missing:  # created with its own settings, never as a default
            missing.remove(offsets_topic.NAME)
            self._create_offsets_topic()
        allow = getattr(body, "allow_auto_topic_creation", True)
        answer = self._metadata_response(request, names)
        if missing and allow and self.config.auto_create_topics and self.create_topic:
            # Kafka's AutoTopicCreationManager (KRaft): the topics are created in the
            # background and this answer says UNKNOWN_TOPIC_OR_PARTITION for them; the
            # client asks again (found by the differential walk: kafkaref waited for them)
            for name in missing:
                self.create_topic(name, self.config.default_partitions,
                                  self.config.default_replication_factor, {},
                                  lambda error, message: None)
        respond(answer)

    def _topic_name(self, requested, field: str = "name") -> str | uuid.UUID:
        """A requested topic's name. Metadata v12 may name it by topic id only, and the
        versions of KIP-516 always do (Produce v13, Fetch v13, OffsetCommit v10, ...): then
        its name, or the id itself when no topic has it (answered UNKNOWN_TOPIC_ID)."""
        name = getattr(requested, field, None)
        if name is not None:
            return name
        wanted = getattr(requested, "topic_id", None) or uuid.UUID(int=0)
        return self._names_by_id.get(wanted, wanted)

    def _topic_id(self, name: str | uuid.UUID) -> uuid.UUID:
        """The wire's id of a topic _topic_name gave (an unknown id answers as itself; a topic
        without an id, or none of that name, as the zero id)."""
        if isinstance(name, uuid.UUID):
            return name
        return self._ids_by_name.get(name, uuid.UUID(int=0))

    def _current_leader(self, key: tuple[str, int]) -> tuple[int, int]:
        """(leader id, leader epoch) as this broker knows them: its own replica's view, else
        the metadata's, else (-1, -1) (Kafka's KafkaApis.getCurrentLeader, KIP-951)."""
        partition = self.replica_manager.partition(key)
        if partition is not None:
            leader = partition.leader_id
            return (-1 if leader is None else leader), partition.leader_epoch
        topic = self.metadata.topic(key[0])
        if topic is None or not 0 <= key[1] < len(topic.partitions):
            return -1, -1
        meta = topic.partitions[key[1]]
        return meta.leader, meta.leader_epoch

    def _leader_hints(self, failed: dict[tuple[str, int], ErrorCode],
                      errors: tuple[ErrorCode, ...]) -> tuple[dict, list[NodeEndpoint]]:
        """KIP-951's leader discovery: for each partition that failed with one of `errors`, its
        current leader ({key: (leader id, leader epoch)}), and the endpoints of those leaders
        that are alive (node_endpoints), so a client retries at the new leader without first
        asking for metadata."""
        leaders, endpoints = {}, {}
        for key, error in failed.items():
            if error not in errors:
                continue
            leaders[key] = leader_id, _ = self._current_leader(key)
            endpoint = self.metadata.broker(leader_id) if leader_id >= 0 else None
            if endpoint is not None:
                endpoints[leader_id] = NodeEndpoint(leader_id, endpoint.host, endpoint.port)
        return leaders, list(endpoints.values())

    def _metadata_response(self, request, names):
        meta = self.metadata
        live = {b.broker_id for b in meta.brokers}
        topic_operations, cluster_operations = _metadata_operations(request)
        topics = []
        for name in names if names is not None else [t.name for t in meta.topics]:
            if isinstance(name, uuid.UUID):
                topics.append({"name": None, "topic_id": name,
                               "error_code": ErrorCode.unknown_topic_id})
                continue
            topic = meta.topic(name)
            if topic is None:
                error = (ErrorCode.unknown_topic_or_partition if legal_topic_name(name)
                         else ErrorCode.invalid_topic_exception)  # a client retries the first
                topics.append({"name": name, "error_code": error,
                               "topic_authorized_operations": topic_operations})
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
            # the topic id (v10+): a client tells a topic deleted and created again by it
            # (librdkafka's 0107 drops the vanished partitions only when the id changes)
            topics.append({"name": name, "error_code": 0, "topic_id": _topic_uuid(topic),
                           "is_internal": offsets_topic.is_internal(name),
                           "partitions": partitions,
                           "topic_authorized_operations": topic_operations})
        brokers = [{"node_id": b.broker_id, "host": b.host, "port": b.port, "rack": None}
                   for b in meta.brokers]
        return self._response(request, {
            "brokers": brokers, "cluster_id": meta.cluster_id,
            "controller_id": meta.controller_id, "topics": topics,
            "cluster_authorized_operations": cluster_operations,
        })

    def _find_coordinator(self, request, respond):
        """The coordinator of a group is the leader of its __consumer_offsets partition; the
        topic is created on first need (COORDINATOR_NOT_AVAILABLE meanwhile, as Kafka). From v4
        one request asks for several keys (KIP-699) and each gets its own answer."""
        body = request.body
        key_type = getattr(body, "key_type", GROUP_KEY)
        if not hasattr(body, "coordinator_keys"):
            error, endpoint = self._coordinator_for(key_type, body.key or "")
            respond(self._response(request, {"error_code": error, "error_message": None,
                                             **_coordinator_endpoint(endpoint)}))
            return
        coordinators = []
        for key in body.coordinator_keys:
            error, endpoint = self._coordinator_for(key_type, key)
            coordinators.append({"key": key, "error_code": error, "error_message": None,
                                 **_coordinator_endpoint(endpoint)})
        respond(self._response(request, {"coordinators": coordinators}))

    def _coordinator_for(self, key_type: int, key: str):
        """(error, the coordinator's endpoint or None) for one key. Transactions are not
        implemented: a transactional id is refused as an authorizer denying every one would
        (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); share groups are off: a share key is
        INVALID_REQUEST, as Kafka answers without a share coordinator (and before v6), and so
        is a key type Kafka does not know (KafkaApis.getCoordinator)."""
        if key_type == TRANSACTION_KEY:
            return ErrorCode.transactional_id_authorization_failed, None
        if key_type != GROUP_KEY:
            return ErrorCode.invalid_request, None
        topic = self.metadata.topic(offsets_topic.NAME)
        if topic is None:
            self._create_offsets_topic()
            return ErrorCode.coordinator_not_available, None
        leader = topic.partitions[offsets_topic.partition_for(key, len(topic.partitions))].leader
        endpoint = self.metadata.broker(leader) if leader >= 0 else None
        return (ErrorCode.coordinator_not_available if endpoint is None else ErrorCode.none,
                endpoint)

    def _create_offsets_topic(self) -> None:
        live = len(self.metadata.brokers)
        if self.create_topic is None or self._offsets_topic_requested or live == 0:
            return
        self._offsets_topic_requested = True

        def done(error, message):
            self._offsets_topic_requested = False

        rf = min(self.config.offsets_topic_replication_factor, live)
        # an answered commit is on two brokers whenever there are two: one SIGKILL never
        # loses it, even after the ISR shrank (Kafka leaves this to the cluster-wide default).
        # Compacted, as Kafka's (GroupCoordinator's offsets topic configs): the retention task
        # leaves its commits alone (kafkaref never compacts it: it only grows).
        self.create_topic(offsets_topic.NAME, self.config.offsets_topic_num_partitions, rf,
                          {"min.insync.replicas": str(min(2, rf)), "cleanup.policy": "compact"},
                          done)

    def _offsets_partition(self, group_id: str) -> int | None:
        topic = self.metadata.topic(offsets_topic.NAME)
        if topic is None or not topic.partitions:
            return None
        return offsets_topic.partition_for(group_id or "", len(topic.partitions))

    def _coordinator_error(self, group_id: str, membership: bool = False) -> ErrorCode:
        """NONE when this broker coordinates the group and has loaded its offsets;
        COORDINATOR_LOAD_IN_PROGRESS while loading; NOT_COORDINATOR otherwise. Membership
        requests need a group id (INVALID_GROUP_ID, as Kafka's isValidGroupId); offset
        requests accept the empty one."""
        if membership and not group_id:
            return ErrorCode.invalid_group_id
        index = self._offsets_partition(group_id)
        return ErrorCode.not_coordinator if index is None else self.committed.status(index)

    def _coordinate_offsets_partitions(self) -> None:
        """Load the offsets partitions this broker now leads; forget the groups of those it
        no longer leads (their members learn NOT_COORDINATOR and find the new one)."""
        topic = self.metadata.topic(offsets_topic.NAME)
        led = {} if topic is None else {
            i: p.leader_epoch for i, p in enumerate(topic.partitions)
            if p.leader == self.broker_id}
        dropped = self.committed.lead(led, self._offsets_log)
        self.groups.unload([g for g in self.groups.groups
                            if self._offsets_partition(g) not in led.keys() - dropped])

    def _forget_offsets_of(self, topics: set[str]) -> None:
        """A deleted topic's committed offsets leave its groups: dropped from the cache and
        tombstoned in the offsets partitions this broker leads, as Kafka's coordinator does
        (acks=0: best effort, as its cleanup appends). A topic created again under the same
        name starts without them, from auto.offset.reset."""
        now = self.clock()
        for index, keys in self.committed.remove_topics(topics).items():
            batch = records.build_batch(
                [(offsets_topic.encode_key(k), None, (), now) for k in keys], base_timestamp=now)
            self.replica_manager.append_records(self.config.offsets_commit_timeout_ms, 0,
                                                {(offsets_topic.NAME, index): batch},
                                                lambda results: None)

    def _offsets_log(self, index: int):
        partition = self.replica_manager.partition((offsets_topic.NAME, index))
        return None if partition is None else partition.log

    def _create_topics(self, request, respond):
        """Checked in the order of Kafka's ControllerApis.createTopics (a name given twice:
        one INVALID_REQUEST answer) and ReplicationControlManager.createTopics (the name, then
        whether it exists, then the configs, the assignment, the replication factor and the
        partition count, then whether the brokers can place it)."""
        body = request.body
        results, pending = {}, []
        names = [t.name for t in body.topics]
        for topic in body.topics:
            if topic.name in results:  # a duplicate, answered once
                continue
            if names.count(topic.name) > 1:
                results[topic.name] = (ErrorCode.invalid_request, "Duplicate topic name.")
            elif not legal_topic_name(topic.name):
                results[topic.name] = (ErrorCode.invalid_topic_exception, "bad topic name")
            elif self.metadata.topic(topic.name) is not None:
                results[topic.name] = (ErrorCode.topic_already_exists, "topic exists")
            elif self.create_topic is None:
                results[topic.name] = (ErrorCode.not_controller, "no control plane")
            else:
                refused = self._refused_topic(topic)
                if refused is not None:
                    results[topic.name] = refused
                else:
                    pending.append(topic)

        def finish():
            requested = {t.name: t for t in body.topics}
            topics = [{"name": n, "error_code": e, "error_message": m,
                       **self._created_topic(n, e, requested[n], body.validate_only)}
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
            partitions, rf = _requested_shape(topic, self.config)

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

    def _created_topic(self, name: str, error: ErrorCode, requested,
                       validate_only: bool) -> dict:
        """What CreateTopics v5+ tells of a topic it created (or, validate_only, would create):
        its partition count, replication factor and configs, and from v7 its id (a fresh one
        when only validated, as 4.3.1 answers); -1 and nothing after a failure."""
        if error != ErrorCode.none:
            return {"num_partitions": -1, "replication_factor": -1, "configs": []}
        topic = None if validate_only else self.metadata.topic(name)
        if topic is None:
            partitions, rf = _requested_shape(requested, self.config)
            overrides, topic_id = {c.name: c.value for c in requested.configs}, new_topic_id()
        else:
            partitions, rf = len(topic.partitions), len(topic.partitions[0].replicas)
            overrides, topic_id = dict(topic.configs), topic.topic_id
        return {"num_partitions": partitions, "replication_factor": rf,
                "configs": created_topic_configs(overrides),
                "topic_id": _wire_topic_id(topic_id) or uuid.UUID(int=0)}

    def _validated(self, topic) -> tuple[ErrorCode, str | None]:
        """What creating this (already rule-checked) topic would answer, for validate_only:
        the replication factor is the one thing left that only the cluster can refuse."""
        rf = _requested_shape(topic, self.config)[1]
        live = len(self.metadata.brokers)
        if not topic.assignments and rf > live:
            return (ErrorCode.invalid_replication_factor,
                    f"replication factor {rf} larger than the {live} available brokers")
        return ErrorCode.none, None

    def _refused_topic(self, topic) -> tuple[ErrorCode, str] | None:
        """Why a CreateTopics entry is refused before reaching the controller, or None."""
        error, message = check_configs({c.name: c.value for c in topic.configs})
        if error == ErrorCode.none and topic.assignments:
            error, message = check_assignment_entries(
                [(a.partition_index, list(a.broker_ids)) for a in topic.assignments],
                {b.broker_id for b in self.metadata.brokers},
                topic.num_partitions, topic.replication_factor)
        elif error == ErrorCode.none and not _positive_or_default(topic.replication_factor):
            error, message = (ErrorCode.invalid_replication_factor, "Replication factor must "
                              "be larger than 0, or -1 to use the default value.")
        elif error == ErrorCode.none and not _positive_or_default(topic.num_partitions):
            error, message = (ErrorCode.invalid_partitions, "Number of partitions was set to "
                              "an invalid non-positive value.")
        return None if error == ErrorCode.none else (error, message)

    # -- Produce ----------------------------------------------------------------------------
    def _produce(self, request, respond):
        body = request.body
        if body.transactional_id is not None:
            refused = ErrorCode.transactional_id_authorization_failed
            errors = {(self._topic_name(t), p.index): refused
                      for t in body.topic_data for p in t.partition_data}
            respond(self._produce_response(request, {}, errors))
            return
        entries, errors = {}, {}
        for topic in body.topic_data:
            name = self._topic_name(topic)  # v13 names the topic by id (KIP-516)
            for p in topic.partition_data:
                key = (name, p.index)
                if isinstance(name, uuid.UUID):
                    errors[key] = ErrorCode.unknown_topic_id
                elif not self._known_partition(key):  # hosted elsewhere: the replica manager
                    errors[key] = ErrorCode.unknown_topic_or_partition  # answers NOT_LEADER
                elif offsets_topic.is_internal(name):  # written only by coordinators
                    errors[key] = ErrorCode.invalid_topic_exception
                elif p.records is None:
                    errors[key] = ErrorCode.invalid_record
                elif request.api_version < ZSTD_PRODUCE_VERSION and _codec(p.records) == ZSTD:
                    errors[key] = ErrorCode.unsupported_compression_type
                else:
                    entries[key] = p.records  # a view of the request frame: not copied
        acks = body.acks

        def done(results):
            if acks != 0:
                respond(self._produce_response(request, results, errors))
            elif errors or any(r.error != ErrorCode.none for r in results.values()):
                respond(CLOSE_CONNECTION)
            else:
                respond(None)

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
                 "log_append_time": result.log_append_time,
                 "log_start_offset": self._answered_log_start(key, result),
                 "error_message": result.error_message if result.error else None,
                 "record_errors": [{"batch_index": i, "batch_index_error_message": m}
                                   for i, m in result.record_errors]})
        node_endpoints = []
        if request.api_version >= PRODUCE_LEADER_HINTS:
            failed = {**errors, **{k: r.error for k, r in results.items()}}
            leaders, node_endpoints = self._leader_hints(
                failed, (ErrorCode.not_leader_or_follower,))
            for name, partitions in by_topic.items():
                for p in partitions:
                    leader_id, epoch = leaders.get((name, p["index"]), (-1, -1))
                    p["current_leader"] = {"leader_id": leader_id, "leader_epoch": epoch}
        responses = [{"name": n, "topic_id": self._topic_id(n), "partition_responses": ps}
                     for n, ps in by_topic.items()]
        return self._response(request, {"responses": responses, "node_endpoints": [
            n._asdict() for n in node_endpoints]})

    def _answered_log_start(self, key, result) -> int:
        """The log start offset a produce answer carries: the partition's, except for failures
        Kafka answers without one (-1): refusals before the append (result.log_start_offset
        -1) and the errors ReplicaManager.appendToLocalLog catches first (its
        UNKNOWN_LOG_APPEND_INFO cases). A validation failure (a sequence, an epoch, a record
        refused) carries the log start offset."""
        if result.error == ErrorCode.none:
            return result.log_start_offset
        partition = self.replica_manager.partition(key)
        if result.log_start_offset < 0 or result.error in NO_LOG_START_ERRORS or partition is None:
            return -1
        return partition.log.log_start_offset

    # -- Fetch ------------------------------------------------------------------------------
    def _fetch(self, request, respond):
        """Partitions the metadata does not know (by name, or from v13 by topic id) are refused
        before the read and answered after the others, as Kafka's KafkaApis.handleFetchRequest
        does (its `erroneous` partitions); they do not make the fetch answer at once. A
        partition named twice is read and answered once, where it was first named, with the
        later entry's offsets (FetchRequest.fetchData is a map keyed by partition)."""
        body = request.body
        if incremental_fetch(request):
            respond(_fetch_failed(request, ErrorCode.fetch_session_id_not_found, topics=False))
            return
        replica_id = _fetch_replica_id(body)
        fetches, order, erroneous = {}, [], {}
        for topic in body.topics:
            name = self._topic_name(topic, "topic")  # v13 names the topic by id (KIP-516)
            topic_id = getattr(topic, "topic_id", None)
            for p in topic.partitions:
                key = (name, p.partition)
                if isinstance(name, uuid.UUID):
                    erroneous[key] = ErrorCode.unknown_topic_id
                elif not self._known_partition(key):
                    erroneous[key] = ErrorCode.unknown_topic_or_partition
                else:
                    if key not in fetches:
                        order.append(key)
                    fetches[key] = FetchPartition(
                        p.fetch_offset, p.partition_max_bytes,
                        getattr(p, "current_leader_epoch", -1),
                        getattr(p, "last_fetched_epoch", -1),
                        getattr(p, "log_start_offset", -1),  # a follower's (DeleteRecords)
                        topic_id=None if topic_id is None else str(topic_id))

        if fetches and replica_id < 0 and unknown_isolation_level(body.isolation_level):
            respond(_fetch_failed(request, ErrorCode.unknown_server_error))
            return

        def done(results):
            respond(self._fetch_response(request, order, results, erroneous))

        self.replica_manager.fetch(replica_id, millis(body.max_wait), body.min_bytes,
                                   body.max_bytes, fetches, done,
                                   zero_copy=self.zero_copy_fetch,
                                   leader_only=fetch_only_leader(request.api_version, replica_id))

    def _fetch_response(self, request, order, results, erroneous) -> FetchAnswer:
        """The answer as values, partitions in the request's order (those refused before the
        read last), the partitions of one topic grouped where they are adjacent, as Kafka
        groups them; the server encodes it (impl/protocol/wire.encode_response_parts), records
        as they were read: bytes, or file ranges it sends with sendfile. v16+: KIP-951's
        current leader and its endpoint for NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH."""
        version = request.api_version
        isolation = getattr(request.body, "isolation_level", READ_UNCOMMITTED)
        answers = []
        for key in order:
            r = results[key]
            hw, log_start, aborted_empty = fetch_answer_fields(r, isolation)
            answers.append(PartitionAnswer(key[1], r.error, hw, log_start, r.records,
                                           r.diverging_epoch, aborted_empty=aborted_empty))
        # refused before the read: -1 offsets, empty records and aborted_transactions (the schema's
        # default, which Kafka's erroneous partitions keep; seen by the differential walk)
        answers += [PartitionAnswer(key[1], error, -1, -1, b"", aborted_empty=True)
                    for key, error in erroneous.items()]
        keys = [*order, *erroneous]
        leaders, endpoints = {}, []
        if version >= FETCH_LEADER_HINTS:
            failed = {k: a.error_code for k, a in zip(keys, answers, strict=True)}
            leaders, endpoints = self._leader_hints(
                failed, (ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch))
        topics: list[tuple] = []
        for key, answer in zip(keys, answers, strict=True):
            if key in leaders:
                answer = answer._replace(current_leader=leaders[key])
            topic = self._topic_id(key[0]) if version >= TOPIC_IDS_FROM else key[0]
            if not topics or topics[-1][0] != topic:
                topics.append((topic, []))
            topics[-1][1].append(answer)
        return FetchAnswer(version, topics, node_endpoints=tuple(endpoints))

    # -- offsets ----------------------------------------------------------------------------
    def _list_offsets(self, request, respond):
        """Kafka's ReplicaManager.fetchOffset: a partition named twice is answered once,
        INVALID_REQUEST; a special timestamp the version does not know, UNSUPPORTED_VERSION;
        a time no record reaches, offset -1 with no leader epoch."""
        body = request.body
        replica_id = body.replica_id
        if unknown_isolation_level(getattr(body, "isolation_level", READ_UNCOMMITTED)):  # v2+
            respond(self._response(request, {"topics": [{"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": ErrorCode.unknown_server_error,
                 "timestamp": -1, "offset": -1, "leader_epoch": -1} for p in t.partitions]}
                for t in body.topics]}))
            return
        named = [(t.name, p.partition_index) for t in body.topics for p in t.partitions]
        duplicated = {key for key in named if named.count(key) > 1}
        topics: dict[str, dict] = {}
        for topic in body.topics:
            partitions = topics.setdefault(topic.name, {})
            for p in topic.partitions:
                key = (topic.name, p.partition_index)
                if key in duplicated:
                    answer = OffsetAnswer(ErrorCode.invalid_request)
                elif p.timestamp < 0 and request.api_version < TIMESTAMP_MIN_VERSION.get(
                        p.timestamp, 1 << 15):
                    answer = OffsetAnswer(ErrorCode.unsupported_version)
                else:
                    answer = self.replica_manager.list_offset(
                        key, p.timestamp, getattr(p, "current_leader_epoch", -1), replica_id)
                    if answer.offset < 0:
                        answer = attrs.evolve(answer, leader_epoch=-1)
                partitions[p.partition_index] = {
                    "partition_index": p.partition_index, "error_code": answer.error,
                    "timestamp": answer.timestamp, "offset": answer.offset,
                    "leader_epoch": answer.leader_epoch}
        respond(self._response(request, {"topics": [
            {"name": name, "partitions": list(ps.values())} for name, ps in topics.items()]}))

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
        """A new producer id, epoch 0. From v3 the producer may name its current id and epoch
        (KIP-360): both or neither, else INVALID_REQUEST (KafkaApis); an idempotent producer
        naming them gets a new id all the same (Kafka's coordinator, without a transactional
        id, always hands out a new one)."""
        body = request.body
        refused = None
        if body.transactional_id is not None:
            refused = ErrorCode.transactional_id_authorization_failed
        elif (getattr(body, "producer_id", -1) == -1) != (getattr(body, "producer_epoch", -1) == -1):
            refused = ErrorCode.invalid_request
        if refused is not None:
            respond(self._response(request, {"error_code": refused,
                                             "producer_id": -1, "producer_epoch": -1}))
            return
        respond(self._response(request, {"error_code": 0,
                                         "producer_id": next(self._producer_ids),
                                         "producer_epoch": 0}))

    def _offset_commit(self, request, respond):
        """Kafka's OffsetCommit: checked, appended to the group's __consumer_offsets partition
        with acks=all, answered once committed there (so durable when answered)."""
        body = request.body
        group_id = body.group_id
        generation = body.generation_id_or_member_epoch  # every advertised version (v2-10)
        error = self._coordinator_error(group_id)
        if error == ErrorCode.none:
            index = self._offsets_partition(group_id)
            error = self.groups.check_commit(group_id, generation, body.member_id,
                                             getattr(body, "group_instance_id", None),
                                             has_offsets=bool(self.committed.group(index, group_id)))
            if error == ErrorCode.illegal_generation and request.api_version >= 9 and (
                    group_id not in self.groups.groups):
                error = ErrorCode.group_id_not_found  # v9+ says so (OffsetMetadataManager)
        errors, commits, now = {}, {}, self.clock()
        names = [self._topic_name(t) for t in body.topics]  # v10 names topics by id
        for name, topic in zip(names, body.topics, strict=True):
            for p in topic.partitions:
                key = (name, p.partition_index)
                meta = self.metadata.topic(name)
                if isinstance(name, uuid.UUID):  # KafkaApis, before the group's checks
                    errors[key] = ErrorCode.unknown_topic_id
                elif meta is None or not 0 <= p.partition_index < len(meta.partitions):
                    # KafkaApis checks the partitions exist before the group coordinator
                    # sees the request (found by the differential walk)
                    errors[key] = ErrorCode.unknown_topic_or_partition
                elif error != ErrorCode.none:
                    errors[key] = error
                elif len((p.committed_metadata or "").encode()) > (
                        self.config.offset_metadata_max_bytes):
                    errors[key] = ErrorCode.offset_metadata_too_large
                else:
                    commits[offsets_topic.OffsetKey(group_id, *key)] = offsets_topic.CommittedOffset(
                        p.committed_offset, getattr(p, "committed_leader_epoch", -1),
                        p.committed_metadata or "", now)

        def answer():
            topics = [{"name": n, "topic_id": self._topic_id(n), "partitions": [
                {"partition_index": p.partition_index,
                 "error_code": errors.get((n, p.partition_index), ErrorCode.none)}
                for p in t.partitions]} for n, t in zip(names, body.topics, strict=True)]
            respond(self._response(request, {"topics": topics}))

        if not commits:
            answer()
            return
        if generation < 0 and not body.member_id:
            # Kafka's "simple" group: created by a commit outside group management, it stays,
            # Empty, when its offsets go (a topic deleted) until the offsets' expiry removes it
            self.groups.group(group_id)
        index = self._offsets_partition(group_id)
        epoch = self.committed.leader_epoch(index)
        batch = records.build_batch(
            [(offsets_topic.encode_key(k), offsets_topic.encode_value(v), (), now)
             for k, v in commits.items()], base_timestamp=now)

        def appended(results):
            failed = _commit_error(results[(offsets_topic.NAME, index)].error)
            if failed == ErrorCode.none and not self.committed.put(index, epoch, commits):
                failed = ErrorCode.not_coordinator  # leadership moved while waiting
            errors.update({(k.topic, k.partition): failed for k in commits
                           if failed != ErrorCode.none})
            answer()

        self.replica_manager.append_records(self.config.offsets_commit_timeout_ms, -1,
                                            {(offsets_topic.NAME, index): batch}, appended)

    def _offset_fetch(self, request, respond):
        """One group's committed offsets, or from v8 several groups' (KIP-709); from v10 the
        topics are named by id, an unknown one answered UNKNOWN_TOPIC_ID (as 4.3.1 does)."""
        body = request.body
        if not hasattr(body, "groups"):
            error, topics = self._group_offsets(body.group_id, body.topics, False)
            respond(self._response(request, {"topics": topics, "error_code": error}))
            return
        groups = []
        for group in body.groups:
            error, topics = self._group_offsets(group.group_id, group.topics,
                                                request.api_version >= 10)
            groups.append({"group_id": group.group_id, "error_code": error,
                           "topics": topics if error == ErrorCode.none else []})
        respond(self._response(request, {"groups": groups}))

    def _group_offsets(self, group_id: str, requested,
                       by_id: bool) -> tuple[ErrorCode, list[dict]]:
        """(the group's error, its topics' committed offsets) for an OffsetFetch naming
        `requested` topics (None: every topic the group committed), by topic id if by_id."""
        error = self._coordinator_error(group_id)
        index = self._offsets_partition(group_id)
        committed = self.committed.group(index, group_id) if error == 0 else {}
        wanted: dict = {}
        if requested is None:
            for name, partition in committed:
                wanted.setdefault(name, []).append(partition)
        else:
            for t in requested:
                wanted.setdefault(self._topic_name(t), []).extend(t.partition_indexes)
        topics = []
        for name, indexes in wanted.items():
            partitions = []
            for partition in indexes:
                value = committed.get((name, partition))
                unknown_id = isinstance(name, uuid.UUID)
                partitions.append({
                    "partition_index": partition,  # v1 has only this error code
                    "error_code": ErrorCode.unknown_topic_id if unknown_id else error,
                    "committed_offset": value.offset if value else -1,
                    "committed_leader_epoch": value.leader_epoch if value else -1,
                    "metadata": value.metadata if value else ""})
            named = {"topic_id": self._topic_id(name)} if by_id else {"name": name}
            topics.append({**named, "partitions": partitions})
        return error, topics

    # -- consumer groups (classic protocol) ----------------------------------------------------
    def _join_group(self, request, respond):
        body = request.body
        error = self._coordinator_error(body.group_id, membership=True)
        if error != ErrorCode.none:
            respond(self._response(request, {"error_code": error, "generation_id": -1,
                                             "member_id": body.member_id}))
            return

        def done(answer):
            members = [{"member_id": m, "group_instance_id": i, "metadata": meta}
                       for m, i, meta in answer.members]
            group = self.groups.groups.get(body.group_id)
            joined = answer.error == ErrorCode.none and group is not None
            nullable = request.api_version >= 7  # the protocol's type and name: null if none
            respond(self._response(request, {
                "error_code": answer.error, "generation_id": answer.generation_id,
                "protocol_type": group.protocol_type if joined else None,
                "protocol_name": answer.protocol_name if nullable else answer.protocol_name or "",
                "leader": answer.leader, "member_id": answer.member_id, "members": members}))

        session = millis(body.session_timeout)
        rebalance = millis(getattr(body, "rebalance_timeout", body.session_timeout))
        self.groups.join(body.group_id, body.member_id, getattr(body, "group_instance_id", None),
                         body.protocol_type, [(p.name, p.metadata) for p in body.protocols],
                         session, rebalance, done, client_id=request.client_id or "",
                         require_known_member_id=request.api_version >= 4,
                         client_host=request.client_host)

    def _sync_group(self, request, respond):
        """From v5 the member names the group's protocol type and name: both must be given
        (KafkaApis) and be the group's, else INCONSISTENT_GROUP_PROTOCOL; the answer names them."""
        body = request.body
        protocol = (getattr(body, "protocol_type", None), getattr(body, "protocol_name", None))
        error = self._coordinator_error(body.group_id, membership=True)
        if request.api_version >= 5 and None in protocol:
            error = ErrorCode.inconsistent_group_protocol
        if error != ErrorCode.none:
            respond(self._response(request, {"error_code": error}))
            return

        def done(error, assignment):
            group = self.groups.groups.get(body.group_id)
            synced = error == ErrorCode.none and group is not None
            respond(self._response(request, {
                "error_code": error, "assignment": assignment,
                "protocol_type": group.protocol_type if synced else None,
                "protocol_name": group.protocol_name if synced else None}))

        self.groups.sync(body.group_id, body.generation_id, body.member_id,
                         [(a.member_id, a.assignment) for a in body.assignments], done,
                         getattr(body, "group_instance_id", None), protocol)

    def _heartbeat(self, request, respond):
        body = request.body
        error = self._coordinator_error(body.group_id, membership=True)
        if error == ErrorCode.none:
            error = self.groups.heartbeat(body.group_id, body.generation_id, body.member_id,
                                          getattr(body, "group_instance_id", None))
        respond(self._response(request, {"error_code": error}))

    def _leave_group(self, request, respond):
        """v3+ names several members (KIP-345), each answered on its own; a member named by
        its group instance id alone (member id "") is the static member holding it."""
        body = request.body
        error = self._coordinator_error(body.group_id, membership=True)
        if not hasattr(body, "members"):
            if error == ErrorCode.none:
                error = self.groups.leave(body.group_id, body.member_id)
            respond(self._response(request, {"error_code": error}))
            return
        members = []
        for m in body.members if error == ErrorCode.none else ():
            members.append({"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                            "error_code": self.groups.leave(body.group_id, m.member_id,
                                                            m.group_instance_id)})
        respond(self._response(request, {"error_code": error, "members": members}))

    def _describe_groups(self, request, respond):
        groups = []
        for group_id in request.body.groups:
            error = self._coordinator_error(group_id)
            index = self._offsets_partition(group_id)
            has_offsets = bool(self.committed.group(index, group_id))
            groups.append(self.groups.describe(group_id, has_offsets) if not error else {
                "group_id": group_id, "error_code": error, "group_state": "",
                "protocol_type": "", "protocol_data": "", "members": []})
            groups[-1]["authorized_operations"] = NOT_ASKED
            if request.api_version >= 6 and groups[-1]["group_state"] == "Dead":
                # v6 says an unknown group is not found (KIP-1043), as 4.3.1 answers
                groups[-1].update(error_code=ErrorCode.group_id_not_found,
                                  error_message=f"Group {group_id} not found.")
            if request.api_version >= 3 and request.body.include_authorized_operations and (
                    groups[-1]["error_code"] == ErrorCode.none):
                # KafkaApis: every group operation to a client that asks, on a group answered
                groups[-1]["authorized_operations"] = GROUP_OPERATIONS
        respond(self._response(request, {"groups": groups}))

    def _list_groups(self, request, respond):
        """The groups this broker coordinates: those with members, and those that only have
        committed offsets (Empty, as Kafka lists them). Admin clients ask every broker."""
        listed = {}
        for group_id in self.committed.group_ids():
            listed[group_id] = {"group_id": group_id, "protocol_type": "", "group_state": "Empty"}
        for group_id, group in self.groups.groups.items():
            if self._coordinator_error(group_id) == ErrorCode.none:
                listed[group_id] = {"group_id": group_id,
                                    "protocol_type": group.protocol_type or "",
                                    "group_state": group.state}
        # v4 filters by state, v5 by type (every group here is a classic one); neither filter
        # minds the case (Kafka 4.3.1)
        states = {s.lower() for s in getattr(request.body, "states_filter", ()) or ()}
        types = {t.lower() for t in getattr(request.body, "types_filter", ()) or ()}
        groups = [{**g, "group_type": CLASSIC_GROUP} for g in listed.values()
                  if (not states or g["group_state"].lower() in states)
                  and (not types or CLASSIC_GROUP in types)]
        respond(self._response(request, {"error_code": 0, "groups": groups}))

    def _delete_groups(self, request, respond):
        """Kafka's DeleteGroups: each Empty group this broker coordinates is forgotten and its
        committed offsets tombstoned in its __consumer_offsets partition (acks=all; the answer
        waits for them); a group with members is NON_EMPTY_GROUP, an unknown one
        GROUP_ID_NOT_FOUND, one coordinated elsewhere NOT_COORDINATOR."""
        errors, tombstones = {}, {}
        for group_id in request.body.groups_names:
            error = self._coordinator_error(group_id)  # the empty id is valid here, as in Kafka
            if error == ErrorCode.none:
                index = self._offsets_partition(group_id)
                has_offsets = bool(self.committed.group(index, group_id))
                error = self.groups.delete(group_id, has_offsets)
                if error == ErrorCode.none and has_offsets:
                    tombstones.setdefault(index, []).extend(
                        self.committed.remove_group(index, group_id))
            errors[group_id] = error

        def answer(results=None):
            respond(self._response(request, {"results": [
                {"group_id": g, "error_code": e} for g, e in errors.items()]}))

        if not tombstones:
            answer()
            return
        now = self.clock()
        batches = {(offsets_topic.NAME, index): records.build_batch(
            [(offsets_topic.encode_key(k), None, (), now) for k in keys], base_timestamp=now)
            for index, keys in tombstones.items()}
        self.replica_manager.append_records(self.config.offsets_commit_timeout_ms, -1, batches,
                                            answer)

    # -- time -------------------------------------------------------------------------------
    def advance_clock(self, now_ms: int | None = None) -> None:
        self.replica_manager.advance_clock(now_ms)
        self.groups.advance_clock(now_ms)
        self.committed.load_step(self._offsets_log)  # offsets partitions still loading

    def next_deadline_ms(self) -> int | None:
        """No purgatory expiration or ISR check is due before this time (None: none is
        scheduled). Group session and rebalance timeouts are scans, not timers: a caller that
        sleeps until this time must still call advance_clock now and then for them."""
        return self.replica_manager.next_deadline_ms()


def incremental_fetch(request) -> bool:
    """A Fetch (v7+, KIP-227) continuing a fetch session: its epoch is neither -1 (no session)
    nor 0 (a full fetch, which may ask for a new one). kafkaref never creates a session (it
    answers every full fetch with session id 0, which clients take as "no session"), so no
    incremental fetch names one it knows: Kafka's FetchManager answers an unknown session
    FETCH_SESSION_ID_NOT_FOUND, with no partitions (observed on 4.3.1: epochs 1, -2, 2**31-1)."""
    return request.api_version >= FETCH_SESSIONS_VERSION and request.body.session_epoch not in (
        FULL_FETCH_EPOCH, SESSIONLESS_EPOCH)


def _fetch_failed(request, error: ErrorCode, topics: bool = True) -> FetchAnswer:
    """Kafka's FetchRequest.getErrorResponse: the error at the top (v7+) and, below v13 (whose
    clients read the top-level error), the request's topics and partitions as it named them,
    each answered `error` with -1 offsets; topics False: a session's error context, the error
    alone."""
    answers = [(topic.topic, [PartitionAnswer(p.partition, error, -1, -1, b"", aborted_empty=True)
                              for p in topic.partitions]) for topic in request.body.topics] if (
        topics and request.api_version < TOPIC_IDS_FROM) else []
    session_id = getattr(request.body, "session_id", 0) if topics else 0
    return FetchAnswer(request.api_version, answers, error_code=error, session_id=session_id)


def fetch_answer_fields(result, isolation_level: int) -> tuple[int, int, bool]:
    """(high watermark, log start offset, aborted_transactions empty rather than null) of one
    partition's fetch answer, as Kafka fills them. A failed partition says -1 for both offsets
    (ReplicaManager.readFromLocalLog's createLogReadResult; KafkaApis' partitionResponse).
    Aborted transactions: an empty list for read_committed reads (the log's index, empty here)
    and for partitions the request names that do not exist (checked before the read, the
    schema's default); null otherwise (a read_uncommitted read, a failed read, a read whose
    first batch did not fit the bytes left: Kafka answers it with an empty read of its own)."""
    if result.error == ErrorCode.none:
        committed = isolation_level == READ_COMMITTED and not result.first_batch_cut
        return result.high_watermark, result.log_start_offset, committed
    return -1, -1, result.error == ErrorCode.unknown_topic_or_partition


def _positive_or_default(count: int) -> bool:
    """A CreateTopics partition count or replication factor: positive, or -1 (the default)."""
    return count > 0 or count == -1


def _codec(data) -> int | None:
    """The compression codec of the first batch in a produce's records (None: too short)."""
    header = records.parse_header(data)
    return None if header is None else header.compression


def _deleted_topics(before: ClusterMetadata, after: ClusterMetadata) -> set[str]:
    """Topics of `before` that `after` no longer has, or has under another topic id."""
    after_ids = {t.name: t.topic_id for t in after.topics}  # one pass: images list thousands
    return {t.name for t in before.topics if after_ids.get(t.name) != t.topic_id}


def _requested_shape(topic, config: BrokerConfig) -> tuple[int, int]:
    """(partitions, replication factor) a CreateTopics entry asks for, defaults filled in."""
    if topic.assignments:
        return len(topic.assignments), len(topic.assignments[0].broker_ids)
    partitions = topic.num_partitions if topic.num_partitions > 0 else config.default_partitions
    rf = topic.replication_factor if topic.replication_factor > 0 else (
        config.default_replication_factor)
    return partitions, rf


def _coordinator_endpoint(endpoint) -> dict:
    """A FindCoordinator answer's node fields: the coordinator's, or Kafka's Node.noNode."""
    if endpoint is None:
        return {"node_id": -1, "host": "", "port": -1}
    return {"node_id": endpoint.broker_id, "host": endpoint.host, "port": endpoint.port}


def fetch_only_leader(version: int, replica_id: int) -> bool:
    """Whether only the partition's leader may answer a Fetch (Kafka's
    FetchParams.fetchOnlyLeader): a follower's fetch, and a consumer's without client metadata.
    KafkaApis.handleFetchRequest builds client metadata from v11 on (KIP-392), so a consumer's
    Fetch v11+ is served by a follower too, up to the follower's hw."""
    return replica_id >= 0 or version < FETCH_CLIENT_METADATA_VERSION


def _fetch_replica_id(body) -> int:
    """Who fetches: a follower's broker id, or -1 for a consumer (v15 moved the field into
    replica_state, KIP-903)."""
    state = getattr(body, "replica_state", None)  # v15+; before it, replica_id is always there
    return state.replica_id if state is not None else body.replica_id


def _wire_topic_id(topic_id: str) -> uuid.UUID | None:
    """A topic id as the wire's uuid; None for none, or for a test's id that is no uuid."""
    try:
        return uuid.UUID(topic_id) if topic_id else None
    except ValueError:
        return None


def _metadata_operations(request) -> tuple[int, int]:
    """(each topic's, the cluster's) authorized operations in a Metadata answer, as Kafka 4.3.1's
    KafkaApis answers without an authorizer: every operation to a client that asks (v8+; the
    cluster's only through v10, KIP-700 moved it to DescribeCluster), else the schema's default,
    INT32_MIN."""
    version, body = request.api_version, request.body
    topics = TOPIC_OPERATIONS if version >= 8 and body.include_topic_authorized_operations else (
        NOT_ASKED)
    cluster = CLUSTER_OPERATIONS if 8 <= version <= 10 and (
        body.include_cluster_authorized_operations) else NOT_ASKED
    return topics, cluster


def _topic_uuid(topic) -> uuid.UUID:
    """The topic's id as the wire's uuid (all zeros for a topic without one)."""
    return uuid.UUID(topic.topic_id) if topic.topic_id else uuid.UUID(int=0)


def _commit_error(append_error: ErrorCode) -> ErrorCode:
    """What an OffsetCommit answers when its append failed: Kafka 4's coordinator runtime
    (CoordinatorOperationExceptionHelper.handleOperationException, read in 4.3.1's jar), so a
    client looks the coordinator up again or retries. NOT_ENOUGH_REPLICAS_AFTER_APPEND is
    kafkaref's own (its commit waits in the produce purgatory; Kafka's runtime waits for the
    hw and ends such a wait REQUEST_TIMED_OUT), answered as that timeout is."""
    if append_error == ErrorCode.none:
        return ErrorCode.none
    if append_error in (ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
                        ErrorCode.not_enough_replicas_after_append,
                        ErrorCode.request_timed_out):
        return ErrorCode.coordinator_not_available
    if append_error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if append_error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large,
                        ErrorCode.invalid_fetch_size):
        return ErrorCode.unknown_server_error  # Kafka 3's GroupMetadataManager: INVALID_COMMIT_OFFSET_SIZE
    return append_error


def _assignment(topic) -> dict[int, list[int]]:
    """A CreateTopics entry's explicit replica assignment as {partition: [broker ids]}."""
    return {a.partition_index: list(a.broker_ids) for a in topic.assignments}
