"""Fetch sessions (KIP-227, Fetch v7+): kafkaref never creates one, so a Fetch continuing a
session (an epoch other than 0, a full fetch, and -1, no session) names one it does not know.
Kafka's FetchManager answers that with a SessionErrorContext: FETCH_SESSION_ID_NOT_FOUND at the
top, session id 0 (INVALID_SESSION_ID), no partitions (observed on 4.3.1 for epochs 1, -2 and
2**31-1), whatever session id the request named; a full or sessionless fetch is answered with
session id 0 too (no session created).

Found by mutation testing (session 9df4313ef37b's survivor 00291: the error's session id read 1
ran in no core test)."""

from hypothesis import example, given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol import wire
from kafkaref.properties.wire_calls import call, core_brokers

_, _, FETCH_MAX_VERSION = wire.SUPPORTED[1]
INT32 = st.integers(-(2**31), 2**31 - 1)


def _fetch(broker, version: int, session_id: int, session_epoch: int):
    return call(broker, 1, version, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": session_id, "session_epoch": session_epoch,
        "rack_id": "", "topics": [], "forgotten_topics_data": []})


@given(version=st.integers(7, FETCH_MAX_VERSION), session_id=INT32, session_epoch=INT32)
@example(version=7, session_id=5, session_epoch=1)
@example(version=12, session_id=5, session_epoch=0)
@example(version=FETCH_MAX_VERSION, session_id=0, session_epoch=-1)
def test_a_fetch_in_a_session_is_answered_as_kafka_answers_an_unknown_one(version, session_id,
                                                                          session_epoch):
    (b,) = core_brokers(1)
    body = _fetch(b, version, session_id, session_epoch)
    unknown = session_epoch not in (0, -1)
    assert body.error_code == (ErrorCode.fetch_session_id_not_found if unknown
                               else ErrorCode.none)
    assert body.session_id == 0
    assert list(body.responses) == []
