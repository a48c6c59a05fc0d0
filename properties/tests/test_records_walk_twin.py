"""The record walker's fast path (records._walk_records) against its naive twin
(records._walk_records_naive): the same answer on valid bodies and on corrupted ones."""

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaref.impl.protocol import records
from kafkaref.impl.protocol.records import HEADER_SIZE, NewRecord, build_batch

values = st.none() | st.binary(max_size=20) | st.integers(0, 2100).map(lambda n: b"v" * n)
keys = st.none() | st.binary(max_size=70)
headers = st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=5)),
                   max_size=2).map(tuple)
new_records = st.builds(NewRecord, value=values, key=keys, headers=headers,
                        timestamp=st.none() | st.integers(-(1 << 40), 1 << 40))


def body_of(batch: bytes) -> bytes:
    return batch[HEADER_SIZE:]


def both(body, count, sequential):
    fast = records._walk_records(memoryview(body), count, sequential)
    naive = records._walk_records_naive(memoryview(body), count, sequential)
    return fast, naive


@settings(max_examples=150)
@given(st.lists(new_records, min_size=1, max_size=80), st.booleans())
def test_same_answer_on_valid_batches(items, sequential):
    body = body_of(build_batch(items))
    fast, naive = both(body, len(items), sequential)
    assert fast == naive == records.ErrorCode.none


@settings(max_examples=300)
@given(st.lists(new_records, min_size=1, max_size=20), st.data())
def test_same_answer_on_mutated_bodies(items, data):
    body = bytearray(body_of(build_batch(items)))
    for _ in range(data.draw(st.integers(1, 4))):
        if not body:
            break
        kind = data.draw(st.sampled_from(["flip", "cut", "insert", "count"]))
        at = data.draw(st.integers(0, len(body) - 1))
        if kind == "flip":
            body[at] = data.draw(st.integers(0, 255))
        elif kind == "cut":
            del body[at:at + data.draw(st.integers(1, 3))]
        elif kind == "insert":
            body[at:at] = data.draw(st.binary(min_size=1, max_size=3))
    count = len(items) + data.draw(st.integers(-1, 1))
    for sequential in (True, False):
        fast, naive = both(bytes(body), max(count, 0), sequential)
        assert fast == naive


def test_non_canonical_two_byte_null_value_agrees():
    # value length -1 written in two bytes (0x81 0x00): the fast path must defer to the general
    # check, which accepts it as Java's varint reader does
    record = bytes([0, 0, 0, 1]) + bytes([0x81, 0x00]) + bytes([0])
    body = bytes([len(record) * 2]) + record
    assert both(body, 1, True) == (records.ErrorCode.none, records.ErrorCode.none)
