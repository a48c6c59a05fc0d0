"""The capacity of a segment's indexes, from segment.index.bytes as Kafka sizes them
(AbstractIndex: maxIndexSize / entrySize): the offset index holds bytes // 8 entries, the time
index bytes // 12 (12-byte entries), at least one. A full index rolls the segment (shouldRoll),
so the capacity decides where segments end.

Found by mutation testing (docs/mutation.md): the time index's capacity computed as 9/12 of the
offset index's, or allowed to be 0, passed every storage test (none looked at the time index's
size)."""

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.storage import Log, LogConfig
from kafkaref.impl.storage.config import INT32_MAX


@given(index_bytes=st.integers(8, 4096))
def test_each_index_holds_what_segment_index_bytes_allows(tmp_path_factory, index_bytes):
    log = Log(str(tmp_path_factory.mktemp("log")), LogConfig(segment_index_bytes=index_bytes),
              clock_ms=lambda: 0)
    try:
        segment = log.active_segment
        assert segment.index.entries_max == index_bytes // 8
        assert segment.timeindex.entries_max == max(1, index_bytes // 12)
    finally:
        log.close()


def test_segment_bytes_may_be_as_large_as_an_int32():
    """Kafka's segment.bytes is an int: its greatest value is allowed (positions are int32)."""
    assert LogConfig(segment_bytes=INT32_MAX).segment_bytes == INT32_MAX
