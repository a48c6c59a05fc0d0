"""DeleteRecords (21): a client moves partitions' log start up (Kafka's
KafkaApis.handleDeleteRecordsRequest over ReplicaManager.deleteRecords).

A partition the metadata does not know is UNKNOWN_TOPIC_OR_PARTITION, an internal topic's
INVALID_TOPIC_EXCEPTION (only its coordinator writes it); the others go to the replica manager,
which moves each leader's log start (Partition.delete_records: up to the hw, on topics whose
cleanup.policy has "delete") and answers once the low watermark -- the smallest log start of
the leader and its live followers, which learn the new one from their next fetch -- has reached
it, or REQUEST_TIMED_OUT at the request's timeout. Below the log start, fetches are
OFFSET_OUT_OF_RANGE and ListOffsets EARLIEST answers it; it survives restarts (the log's
checkpoint) and leader changes (every live follower had it before the answer).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkaref.impl.core import offsets_topic
from kafkaref.impl.protocol.messages import millis


def delete_records(broker, request, respond) -> None:
    body = request.body
    order, offsets, refused = [], {}, {}
    for topic in body.topics:
        for p in topic.partitions:
            key = (topic.name, p.partition_index)
            order.append(key)
            if not broker._known_partition(key):
                refused[key] = ErrorCode.unknown_topic_or_partition
            elif offsets_topic.is_internal(topic.name):
                refused[key] = ErrorCode.invalid_topic_exception
            else:
                offsets[key] = p.offset

    def done(results):
        topics: dict[str, list] = {}
        for key in order:
            result = results.get(key)
            error = refused[key] if result is None else result.error
            low = -1 if result is None else result.low_watermark
            topics.setdefault(key[0], []).append(
                {"partition_index": key[1], "low_watermark": low, "error_code": error})
        respond(broker._response(request, {"topics": [
            {"name": name, "partitions": partitions} for name, partitions in topics.items()]}))

    broker.replica_manager.delete_records(millis(body.timeout), offsets, done)
