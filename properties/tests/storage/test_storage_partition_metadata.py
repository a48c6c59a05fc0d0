"""partition.metadata (the topic id a partition's directory belongs to): read back as written,
and a damaged file, a line that is not one `name: value` (Kafka's PartitionMetadataFile reader
refuses such a line), is unreadable, None, never its damaged text taken for an id (a log whose
recorded id differs from its topic's is deleted as a stray of a deleted topic).

Found by mutation testing (session 79fa682's survivor 00226: the reader's split limit 1 read as
2, so such a line raised instead of being read; neither read it as unreadable)."""

import pytest

from kafkaref.impl.storage import Log, LogConfig
from kafkaref.impl.storage.log import PARTITION_METADATA_FILE, recorded_topic_id


def test_a_recorded_topic_id_reads_back(tmp_path):
    log = Log(str(tmp_path / "t-0"), LogConfig(), clock_ms=lambda: 0)
    log.record_topic_id("AAAAAAAAAAAAAAAAAAAAAQ")
    assert recorded_topic_id(str(tmp_path / "t-0")) == log.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"


@pytest.mark.parametrize("text", [
    "version: 0\ntopic_id: AAAA: BBBB\n",  # a separator too many
    "version: 0: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n",
    "\xff\xfe",
    "",
])
def test_a_damaged_partition_metadata_is_unreadable(tmp_path, text):
    (tmp_path / PARTITION_METADATA_FILE).write_bytes(text.encode("latin-1"))
    assert recorded_topic_id(str(tmp_path)) is None
