"""What a broker tells about the cluster, its topics' partitions and its log directory:
DescribeCluster (60), DescribeTopicPartitions (75, KIP-966) and DescribeLogDirs (35), each
answered as Apache Kafka 4.3.1 answers it (docs/semantics.md "Protocol versions").

kafkaref has no authorizer: where Kafka fills authorized operations without being asked
(DescribeTopicPartitions), or a client asks for them (Metadata, DescribeCluster,
DescribeGroups), it gives every operation of the resource, as Kafka does without an
authorizer; elsewhere "not asked" (INT32_MIN).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kafkaref.impl.core import offsets_topic
from kafkaref.impl.core.topic_rules import legal_topic_name

NOT_ASKED = -(2**31)  # authorized operations nobody asked for
# Every topic operation (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS,
# ALTER_CONFIGS) as Kafka's bitfield: what 4.3.1 answers without an authorizer
TOPIC_OPERATIONS = 3576
CLUSTER_OPERATIONS = 8096  # the same for the cluster (DescribeCluster when asked)
# ... and for a group (READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS: DescribeGroups)
GROUP_OPERATIONS = 3400
BROKERS, CONTROLLERS = 1, 2  # DescribeCluster endpoint types (v1+)
PARTITIONS_PER_ANSWER_MAX = 2000  # Kafka's max.request.partition.size.limit default
UNKNOWN_VOLUME_BYTES = -1  # DescribeLogDirs v4+ when the volume cannot be measured


class DescribeApis:
    def __init__(self, broker):
        self.broker = broker

    def handlers(self) -> dict[int, Callable]:
        return {35: self.describe_log_dirs, 60: self.describe_cluster,
                75: self.describe_topic_partitions}

    # -- DescribeCluster (60) -----------------------------------------------------------------
    def describe_cluster(self, request, respond):
        """The live brokers (none fenced: a fenced broker leaves the metadata) and the
        controller. A broker answers only for brokers: asked for controllers it says the
        endpoint type does not match, for a type Kafka does not know that it is unsupported."""
        body = request.body
        wanted = getattr(body, "endpoint_type", BROKERS)
        meta = self.broker.metadata
        values = {"error_code": ErrorCode.none, "error_message": None, "endpoint_type": BROKERS,
                  "cluster_id": meta.cluster_id, "controller_id": meta.controller_id,
                  "cluster_authorized_operations": CLUSTER_OPERATIONS
                  if body.include_cluster_authorized_operations else NOT_ASKED,
                  "brokers": [{"broker_id": b.broker_id, "host": b.host, "port": b.port,
                               "rack": None, "is_fenced": False} for b in meta.brokers]}
        if wanted != BROKERS:
            error, message = (ErrorCode.mismatched_endpoint_type, "The request was sent to an "
                              "endpoint of type BROKER, but we wanted an endpoint of type "
                              "CONTROLLER") if wanted == CONTROLLERS else (
                ErrorCode.unsupported_endpoint_type, f"Unsupported endpoint type {wanted}")
            values.update(error_code=error, error_message=message, cluster_id="",
                          controller_id=-1, brokers=[],
                          cluster_authorized_operations=NOT_ASKED)
        respond(self.broker._response(request, values))

    # -- DescribeTopicPartitions (75) ---------------------------------------------------------
    def describe_topic_partitions(self, request, respond):
        """The topics asked for (none: every topic), by name, from the cursor's topic and
        partition on, at most response_partition_limit partitions (at least 1, at most
        Kafka's 2000), and a cursor where the next page starts: Kafka's
        DescribeTopicPartitionsRequestHandler and getTopicMetadataForDescribeTopicResponse."""
        body = request.body
        cursor = body.cursor
        start = cursor.topic_name if cursor is not None else ""
        every = not body.topics
        names = {t.name for t in self.broker.metadata.topics} if every else {
            t.name for t in body.topics}
        names = sorted(n for n in names if n >= start)
        if cursor is not None and ((not every and cursor.topic_name not in names)
                                   or cursor.partition_index < 0):
            respond(self.broker._response(request, {"topics": [
                {"error_code": ErrorCode.invalid_request, "name": t.name, "topic_id": None,
                 "is_internal": False, "partitions": [],
                 "topic_authorized_operations": NOT_ASKED} for t in body.topics]}))
            return
        limit = max(min(PARTITIONS_PER_ANSWER_MAX, body.response_partition_limit), 1)
        topics, next_cursor = self._topic_page(
            names, lambda n: cursor.partition_index if cursor and n == start else 0, limit, every)
        respond(self.broker._response(request, {"topics": topics, "next_cursor": next_cursor}))

    def _topic_page(self, names, first_partition, remaining: int, every: bool):
        topics = []
        for name in names:
            if remaining == 0:  # the page is full: the next one starts at this topic
                return topics, {"topic_name": name, "partition_index": 0}
            topic = self.broker.metadata.topic(name)
            if topic is None:
                if not every:
                    topics.append(_unknown_topic(name))
                continue
            start = first_partition(name)
            end = min(len(topic.partitions), start + remaining)
            topics.append(self._described_topic(topic, range(start, end)))
            if end < len(topic.partitions):
                return topics, {"topic_name": name, "partition_index": end}
            remaining -= max(0, end - start)
        return topics, None

    def _described_topic(self, topic, indexes) -> dict:
        live = {b.broker_id for b in self.broker.metadata.brokers}
        partitions = []
        for index in indexes:
            p = topic.partitions[index]
            partitions.append({
                "error_code": ErrorCode.none, "partition_index": index,
                "leader_id": p.leader if p.leader in live else -1,
                "leader_epoch": p.leader_epoch, "replica_nodes": p.replicas,
                "isr_nodes": p.isr, "eligible_leader_replicas": p.elr, "last_known_elr": [],
                "offline_replicas": [r for r in p.replicas if r not in live]})
        return {"error_code": ErrorCode.none, "name": topic.name,
                "topic_id": self.broker._topic_id(topic.name),
                "is_internal": offsets_topic.is_internal(topic.name), "partitions": partitions,
                "topic_authorized_operations": TOPIC_OPERATIONS}

    # -- DescribeLogDirs (35) -----------------------------------------------------------------
    def describe_log_dirs(self, request, respond):
        """This broker's one log directory and the size of each partition it hosts there
        (asked for, or all when topics is null), offset lag 0 (no future replicas); partitions
        it does not host are left out, as Kafka leaves them. v4+: the volume's total and
        usable bytes."""
        body = request.body
        hosted = self.broker.replica_manager.partitions
        if body.topics is None:
            wanted = sorted(hosted)
        else:
            wanted = [(t.topic, p) for t in body.topics for p in t.partitions
                      if (t.topic, p) in hosted]
        topics: dict[str, list] = {}
        for key in wanted:
            topics.setdefault(key[0], []).append({
                "partition_index": key[1], "partition_size": hosted[key].log.size_bytes,
                "offset_lag": 0, "is_future_key": False})
        total, usable = _volume_bytes(self.broker.log_dir)
        respond(self.broker._response(request, {"error_code": ErrorCode.none, "results": [{
            "error_code": ErrorCode.none, "log_dir": self.broker.log_dir or "",
            "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()],
            "total_bytes": total, "usable_bytes": usable, "is_cordoned": False}]}))


def _unknown_topic(name: str) -> dict:
    error = (ErrorCode.unknown_topic_or_partition if legal_topic_name(name)
             else ErrorCode.invalid_topic_exception)
    return {"error_code": error, "name": name, "topic_id": uuid.UUID(int=0),
            "is_internal": offsets_topic.is_internal(name), "partitions": [],
            "topic_authorized_operations": TOPIC_OPERATIONS}


def _volume_bytes(directory: str | None) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding directory; unknown (-1) without one."""
    if not directory or not os.path.isdir(directory):
        return UNKNOWN_VOLUME_BYTES, UNKNOWN_VOLUME_BYTES
    stats = os.statvfs(directory)
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize
