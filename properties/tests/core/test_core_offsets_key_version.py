"""An offset commit is written to __consumer_offsets with Kafka 4's key: OffsetCommitKey version
1 (GroupCoordinatorRecordHelpers.newOffsetCommitRecord writes `(short) 1`), then the group, the
topic (int16-sized strings) and the partition (int32). Kafka's tools read what kafkaref writes.

Found by mutation testing (session 2225a175104f's survivor 00245): the key version 1 read 0
passed the core layer, which reads both versions back alike. Reading: an offset commit's key is
version 0 or 1 (older brokers wrote 0); 2 is a group's metadata and later versions other
records (Kafka's CoordinatorRecordType), which loading skips. Session 9df4313ef37b's survivor
00316: version 0 read as -1 skipped the commits older brokers wrote."""

import pytest

from kafkaref.impl.core.offsets_topic import OffsetKey, decode_key, encode_key


def test_the_key_is_kafkas_version_1():
    key = OffsetKey("grp", "topic", 7)
    assert encode_key(key) == b"\x00\x01" + b"\x00\x03grp" + b"\x00\x05topic" + b"\x00\x00\x00\x07"
    assert decode_key(encode_key(key)) == key


@pytest.mark.parametrize("version", [-1, 0, 1, 2, 3, 8])
def test_only_versions_0_and_1_are_offset_commit_keys(version):
    key = OffsetKey("grp", "topic", 7)
    data = version.to_bytes(2, "big", signed=True) + encode_key(key)[2:]
    assert decode_key(data) == (key if version in (0, 1) else None)
