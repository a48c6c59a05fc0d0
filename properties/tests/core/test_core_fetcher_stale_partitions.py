"""The replica fetcher applies each partition of a fetch answer on its own: a partition whose
state moved while the fetch was out (a new leader epoch: its answer is stale and dropped, as
Kafka's fetcher drops it) or whose topic was deleted and created again meanwhile holds up none
of the others in the answer, whatever their order.

Found by mutation testing (session 9df4313ef37b's survivor 00048: the stale partition's
`continue` read `break`, so every partition after it in its topic waited a round more; the
walks fetch one topic's partitions, each current)."""

import threading
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import Partition
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.replication.fetcher import ReplicaFetcher

LEADER, FOLLOWER, EPOCH = 1, 2, 4


def _pair(index: int, records: int) -> tuple[Partition, Partition]:
    leader = Partition("t", index, LEADER, MemoryLog(), clock=lambda: 0)
    leader.make_leader(EPOCH, {LEADER}, (LEADER, FOLLOWER))
    for i in range(records):
        batch = build_batch([(None, b"%d-%d" % (index, i), (), 1)])
        assert leader.append_as_leader(batch, 1).error == ErrorCode.none
    follower = Partition("t", index, FOLLOWER, MemoryLog(), clock=lambda: 0)
    follower.make_follower(LEADER, EPOCH, (LEADER, FOLLOWER))
    return leader, follower


def _answer(index: int, leader: Partition):
    return SimpleNamespace(partition_index=index, error_code=ErrorCode.none, diverging_epoch=None,
                           records=leader.log.read(0, 1 << 20), high_watermark=0,
                           log_start_offset=leader.log.log_start_offset)


@given(records=st.lists(st.integers(1, 3), min_size=2, max_size=5), data=st.data())
def test_a_stale_partition_holds_up_no_other(records, data):
    pairs = {("t", i): _pair(i, count) for i, count in enumerate(records)}
    followers = {key: follower for key, (_, follower) in pairs.items()}
    server = SimpleNamespace(lock=threading.Lock(), broker=SimpleNamespace(
        replica_manager=SimpleNamespace(partition=followers.get)))
    fetcher = ReplicaFetcher(server, LEADER, 500)
    fetcher.planned = dict(followers)
    fetches = {key: (p.log_end_offset, p.leader_epoch, p.log.epochs.latest_epoch,
                     p.log.log_start_offset) for key, p in followers.items()}
    fates = data.draw(st.lists(st.sampled_from(["current", "stale", "replaced"]),
                               min_size=len(records), max_size=len(records)), label="fates")
    stale = {("t", i) for i, fate in enumerate(fates) if fate != "current"}
    for key in stale:
        if fates[key[1]] == "stale":  # a new leader epoch arrived while the fetch was out
            followers[key].make_follower(LEADER, EPOCH + 1, (LEADER, FOLLOWER))
        else:  # the fetch was planned for the partition of a topic deleted since
            fetcher.planned[key] = _pair(key[1], 1)[1]
    order = data.draw(st.permutations(sorted(pairs)), label="answer order")
    answers = [("t", [_answer(index, pairs[("t", index)][0]) for _, index in order])]
    assert fetcher._apply(fetches, answers) == (len(stale) < len(records))
    for key, (leader, follower) in pairs.items():
        expected = 0 if key in stale else leader.log_end_offset
        assert follower.log_end_offset == expected, key
