"""The model's size of a batch (what fetch min_bytes / max_bytes count) is the size of the real
v2 encoding of the batch its clients write: no key, no headers, one timestamp. Found by mutation
testing (docs/mutation.md): batch_size's `+` read as `-` passed the model's own tests (CrossHair
checks its contract, in its own tox environment; the lockstep, in the core's tests)."""

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.protocol.varint import encode_varint
from kafkaref.model.helpers import batch_size, varint_size


@given(st.lists(st.integers(0, 300), min_size=1, max_size=6))
def test_the_models_batch_size_is_the_encodings(value_lengths):
    batch = build_batch([(None, b"v" * n, (), 1_000) for n in value_lengths])
    assert batch_size(value_lengths) == len(batch)


@given(st.integers(-(2**31), 2**31 - 1))
def test_the_models_varint_size_is_the_encodings(value):
    """Every int32, and each value either side of a size step: the values above are too small
    to reach a third byte (the fresh sample's 00223, a shift of 6 bits for 7, passed them)."""
    steps = [sign * 2 ** (7 * k - 1) + d for k in range(1, 5) for sign in (1, -1) for d in (-1, 0)]
    for v in (value, *steps):
        assert varint_size(v) == len(encode_varint(v)), v
