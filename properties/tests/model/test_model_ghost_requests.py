"""The ghost history's request bookkeeping (model/properties.observe): a request of any kind
that expects an answer and reuses the id of one still awaiting its answer is a protocol
violation, and a fresh id never is; a request that expects no answer (acks=0) is never
outstanding. Found by mutation testing (the fresh sample's 00015: the reuse check reading the
request's kind instead of its id passed the model layer: no test reused an id)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.model import events as ev
from kafkaref.model.config import ClusterConfig
from kafkaref.model.properties import FETCH, Ghost, observe
from kafkaref.model.values import initial_state

STATE = initial_state(ClusterConfig(brokers=3))

REQUESTS = {  # request id -> a request of each kind (acks=0 expects no answer)
    "produce acks=all": lambda rid: ev.Produce(rid, 0, 0, (b"v",), ev.ACKS_ALL),
    "produce acks=1": lambda rid: ev.Produce(rid, 0, 0, (b"v",), ev.ACKS_LEADER),
    "produce acks=0": lambda rid: ev.Produce(rid, 0, 0, (b"v",), ev.ACKS_NONE),
    "fetch": lambda rid: ev.Fetch(rid, 0, 0, 0, max_wait_ms=100),
    "list offsets": lambda rid: ev.ListOffsets(rid, 0, 0),
    "delete records": lambda rid: ev.DeleteRecords(rid, 0, 0),
}


@given(st.sets(st.integers(0, 6), max_size=4), st.integers(0, 6), st.sampled_from(sorted(REQUESTS)))
def test_a_request_reusing_an_outstanding_id_is_a_violation(outstanding, request_id, kind):
    ghost = Ghost(outstanding=frozenset((rid, 100, 0, FETCH) for rid in outstanding))
    after = observe(ghost, REQUESTS[kind](request_id), STATE, STATE, ())
    answered = kind != "produce acks=0"
    reused = [e for e in after.errors if "reused while outstanding" in e]
    assert reused == ([f"request id {request_id} reused while outstanding"]
                      if answered and request_id in outstanding else [])
    ids = {entry[0] for entry in after.outstanding}
    assert ids == outstanding | ({request_id} if answered else set())
