"""What an OffsetCommit answers when the append of its offsets fails, append error by append
error: Kafka 4.3.1's coordinator runtime (CoordinatorOperationExceptionHelper, its switch read
with javap from kafka-coordinator-common-4.3.1.jar). Kafka 3's GroupMetadataManager answered
the too-large errors INVALID_COMMIT_OFFSET_SIZE; Kafka 4 answers UNKNOWN_SERVER_ERROR."""

import pytest
from kio.schema.errors import ErrorCode as E

from kafkaref.impl.core.broker import _commit_error

KAFKA_4 = {
    E.none: E.none,
    E.unknown_topic_or_partition: E.coordinator_not_available,
    E.not_enough_replicas: E.coordinator_not_available,
    E.request_timed_out: E.coordinator_not_available,
    E.not_enough_replicas_after_append: E.coordinator_not_available,  # kafkaref's own wait
    E.not_leader_or_follower: E.not_coordinator,
    E.kafka_storage_error: E.not_coordinator,
    E.message_too_large: E.unknown_server_error,
    E.record_list_too_large: E.unknown_server_error,
    E.invalid_fetch_size: E.unknown_server_error,
    E.corrupt_message: E.corrupt_message,  # any other error is answered as it is
    E.invalid_record: E.invalid_record,
}


@pytest.mark.parametrize(("append_error", "answered"), KAFKA_4.items(),
                         ids=[e.name for e in KAFKA_4])
def test_a_failed_offsets_append_is_answered_as_kafka_4_answers_it(append_error, answered):
    assert _commit_error(append_error) == answered
