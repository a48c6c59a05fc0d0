"""The record walker's fast path (records/walk.py walk_records) against its naive twin
(walk_records_naive): the same answer on valid bodies and on corrupted ones, at every widest
timestamp delta allowed (INVALID_TIMESTAMP for a well-framed body with a wider one)."""

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.records import HEADER_SIZE, NewRecord, build_batch, walk

values = st.none() | st.binary(max_size=20) | st.integers(0, 2100).map(lambda n: b"v" * n)
keys = st.none() | st.binary(max_size=70)
headers = st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=5)),
                   max_size=2).map(tuple)
new_records = st.builds(NewRecord, value=values, key=keys, headers=headers,
                        timestamp=st.none() | st.integers(-(1 << 40), 1 << 40))


def body_of(batch: bytes) -> bytes:
    return batch[HEADER_SIZE:]


def both(body, count, sequential, timestamp_width=10):
    fast = walk.walk_records(memoryview(body), count, sequential, timestamp_width)
    naive = walk.walk_records_naive(memoryview(body), count, sequential, timestamp_width)
    return fast, naive


def widest_delta(items) -> int:
    """The bytes of the widest timestamp delta build_batch writes for items (from the first)."""
    from kafkaref.impl.protocol.varint import encode_varint

    stamps = [0 if i.timestamp is None else i.timestamp for i in items]  # build_batch's default
    return max(len(encode_varint(ts - stamps[0])) for ts in stamps)


@settings(max_examples=150)
@given(st.lists(new_records, min_size=1, max_size=80), st.booleans())
def test_same_answer_on_valid_batches(items, sequential):
    body = body_of(build_batch(items))
    fast, naive = both(body, len(items), sequential)
    assert fast == naive == ErrorCode.none
    widest = widest_delta(items)
    assert both(body, len(items), sequential, widest) == (ErrorCode.none, ErrorCode.none)
    if widest > 1:
        assert both(body, len(items), sequential, widest - 1) == (ErrorCode.invalid_timestamp,) * 2


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
    width = data.draw(st.integers(0, 10))
    for sequential in (True, False):
        fast, naive = both(bytes(body), max(count, 0), sequential, width)
        assert fast == naive


def test_non_canonical_two_byte_null_value_agrees():
    # value length -1 written in two bytes (0x81 0x00): the fast path must defer to the general
    # check, which accepts it as Java's varint reader does
    record = bytes([0, 0, 0, 1]) + bytes([0x81, 0x00]) + bytes([0])
    body = bytes([len(record) * 2]) + record
    assert both(body, 1, True) == (ErrorCode.none, ErrorCode.none)


@st.composite
def uniform_bodies(draw):
    """Bodies of equal-sized records (the run path), sometimes with an odd record, with
    timestamps of one width or mixed, offset deltas past 64 (two-byte varints)."""
    count = draw(st.integers(1, 150))
    value_len = draw(st.sampled_from([0, 5, 63, 64, 100, 300]))
    key = draw(st.sampled_from([None, b"", b"k", b"key-17"]))
    step = draw(st.sampled_from([0, 1, 3]))  # timestamp deltas 0, i or 3i (widths change)
    items = [(key, b"v" * value_len, (), 1000 + step * i) for i in range(count)]
    if draw(st.booleans()):
        at = draw(st.integers(0, count - 1))
        items[at] = (key, b"w" * draw(st.integers(0, 70)), (), items[at][3])
    gaps = draw(st.booleans())
    deltas = [2 * i for i in range(count)] if gaps else None
    return build_batch(items, offset_deltas=deltas)[HEADER_SIZE:], count, not gaps or count == 1


@settings(max_examples=200)
@given(uniform_bodies(), st.data())
def test_same_answer_on_uniform_bodies_and_their_mutations(made, data):
    body, count, sequential_ok = made
    fast, naive = both(body, count, True)
    assert fast == naive
    assert (fast == ErrorCode.none) == sequential_ok
    assert both(body, count, False) == (ErrorCode.none, ErrorCode.none)
    body = bytearray(body)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(body) - 1))
        if data.draw(st.booleans()):  # aim at a record's structural bytes (start or end)
            size = max(1, len(body) // count)
            record = data.draw(st.integers(0, count - 1))
            at = min(len(body) - 1, record * size + data.draw(st.sampled_from(
                [0, 1, 2, 3, 4, 5, 6, 7, size - 1, size - 2])))
        body[at] = data.draw(st.sampled_from([0, 1, 2, 0x7F, 0x80, 0x81, 0xFF,
                                              body[at] ^ 0x80, body[at] ^ 1]))
    width = data.draw(st.integers(0, 3))
    for sequential in (True, False):
        for n in (count - 1, count, count + 1):
            fast, naive = both(bytes(body), max(n, 0), sequential, width)
            assert fast == naive
