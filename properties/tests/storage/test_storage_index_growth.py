"""An offset index takes an entry only if it grows both columns (offset and position): an entry
that repeats or goes back in either is refused, and the index is left as it was. Found by
mutation testing (docs/mutation.md): the guard's `or` read as `and` went unnoticed."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.storage.index import OffsetIndex


@given(offset_step=st.integers(-2, 2), position_step=st.integers(-2, 2))
def test_an_entry_must_grow_both_offset_and_position(offset_step, position_step):
    index = OffsetIndex("/nonexistent", 100, 1000)
    index.append(110, 500)
    grows = offset_step > 0 and position_step > 0
    if grows:
        index.append(110 + offset_step, 500 + position_step)
        assert list(index.relative_offsets)[-1] == 10 + offset_step
        return
    with pytest.raises(ValueError, match="does not grow"):
        index.append(110 + offset_step, 500 + position_step)
    assert (list(index.relative_offsets), list(index.positions)) == ([10], [500])
