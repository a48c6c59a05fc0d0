"""An offset commit is written to __consumer_offsets with Kafka 4's key: OffsetCommitKey version
1 (GroupCoordinatorRecordHelpers.newOffsetCommitRecord writes `(short) 1`), then the group, the
topic (int16-sized strings) and the partition (int32). Kafka's tools read what kafkaref writes.

Found by mutation testing (session 2225a175104f's survivor 00245): the key version 1 read 0
passed the core layer, which reads both versions back alike."""

from kafkaref.impl.core.offsets_topic import OffsetKey, decode_key, encode_key


def test_the_key_is_kafkas_version_1():
    key = OffsetKey("grp", "topic", 7)
    assert encode_key(key) == b"\x00\x01" + b"\x00\x03grp" + b"\x00\x05topic" + b"\x00\x00\x00\x07"
    assert decode_key(encode_key(key)) == key
