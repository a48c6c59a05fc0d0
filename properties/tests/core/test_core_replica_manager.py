"""impl/core driven directly: appends, hw, min ISR, purgatory, fencing, ISR, idempotence."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.core.delayed import FetchPartition
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.partition import PartitionConfig
from kafkaref.impl.core.replica_manager import ReplicaManager
from kafkaref.impl.protocol.records import build_batch, decode_batch, split_batches
from kafkaref.properties.clock import ManualClock

TP = ("t", 0)


def batch(*values, pid=-1, epoch=-1, seq=-1):
    return build_batch([(None, v, (), None) for v in values], producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq)


def values_of(data):
    error, views = split_batches(data)
    assert error == ErrorCode.none
    return [r.value for v in views for r in decode_batch(v).records]


class Harness:
    def __init__(self, replicas=(1,), isr=None, config=None, epoch=0,
                 isr_check_interval_ms=None):
        self.clock = ManualClock(1_000)
        self.rm = ReplicaManager(1, self.clock, lambda key: MemoryLog(),
                                 isr_check_interval_ms=isr_check_interval_ms)
        self.rm.become_leader(TP, config or PartitionConfig(), epoch, isr or replicas, replicas)
        self.answers = []

    @property
    def partition(self):
        return self.rm.partition(TP)

    def produce(self, data, acks=1, timeout_ms=1_000):
        self.rm.append_records(timeout_ms, acks, {TP: data}, self.answers.append)

    def fetch(self, offset, replica=-1, min_bytes=1, max_wait_ms=0, epoch=-1, last_epoch=-1):
        out = []
        fetch = FetchPartition(offset, current_leader_epoch=epoch, last_fetched_epoch=last_epoch)
        self.rm.fetch(replica, max_wait_ms, min_bytes, 1 << 20, {TP: fetch}, out.append)
        return out

    def tick(self, ms):
        self.clock.now_ms += ms
        self.rm.advance_clock()


def test_acks1_single_replica_appends_with_consecutive_offsets_and_hw():
    h = Harness()
    h.produce(batch(b"a", b"b"))
    h.produce(batch(b"c"))
    assert [(a[TP].error, a[TP].base_offset) for a in h.answers] == [(0, 0), (0, 2)]
    assert h.partition.high_watermark == 3
    [answer] = h.fetch(0)
    assert values_of(answer[TP].records) == [b"a", b"b", b"c"]


def test_bad_crc_is_corrupt_message_and_nothing_is_written():
    h = Harness()
    data = bytearray(batch(b"a"))
    data[-1] ^= 0xFF
    h.produce(bytes(data))
    assert h.answers[0][TP].error == ErrorCode.corrupt_message
    assert h.partition.log_end_offset == 0


def test_acks_all_waits_for_followers_then_completes():
    h = Harness(replicas=(1, 2, 3), config=PartitionConfig(min_insync_replicas=2))
    h.produce(batch(b"a"), acks=-1)
    assert h.answers == [] and h.partition.high_watermark == 0
    h.fetch(1, replica=2, epoch=0)
    assert h.answers == []  # hw waits for the whole ISR, not just min.insync
    h.fetch(1, replica=3, epoch=0)
    assert h.answers[0][TP].error == ErrorCode.none and h.partition.high_watermark == 1


def test_not_enough_replicas_before_append_writes_nothing():
    h = Harness(replicas=(1, 2, 3), isr=(1,), config=PartitionConfig(min_insync_replicas=2))
    h.produce(batch(b"a"), acks=-1)
    assert h.answers[0][TP].error == ErrorCode.not_enough_replicas
    assert h.partition.log_end_offset == 0
    h.produce(batch(b"a"), acks=1)  # acks=1 is not gated
    assert h.answers[1][TP].error == ErrorCode.none


def test_not_enough_replicas_after_append_without_kip966_gating():
    config = PartitionConfig(min_insync_replicas=2, hw_requires_min_isr=False,
                             replica_lag_time_max_ms=100)
    h = Harness(replicas=(1, 2), config=config)
    h.produce(batch(b"a"), acks=-1)
    h.tick(200)
    h.rm.maybe_shrink_isrs()  # follower 2 never fetched: out of the ISR, hw now = leader leo
    assert h.partition.isr == {1}
    assert h.answers[0][TP].error == ErrorCode.not_enough_replicas_after_append


def test_acks_all_times_out():
    h = Harness(replicas=(1, 2))
    h.produce(batch(b"a"), acks=-1, timeout_ms=500)
    h.tick(499)
    assert h.answers == []
    h.tick(1)
    assert h.answers[0][TP].error == ErrorCode.request_timed_out
    assert h.rm.produce_purgatory.delayed() == 0


def test_losing_leadership_completes_waiting_produce():
    h = Harness(replicas=(1, 2))
    h.produce(batch(b"a"), acks=-1)
    h.rm.become_follower(TP, PartitionConfig(), 2, 1, (1, 2))
    assert h.answers[0][TP].error == ErrorCode.not_leader_or_follower


def test_consumer_reads_are_capped_at_hw_followers_read_to_leo():
    h = Harness(replicas=(1, 2))
    h.produce(batch(b"a"))
    [consumer] = h.fetch(0)
    assert consumer[TP].records == b"" and consumer[TP].high_watermark == 0
    [follower] = h.fetch(0, replica=2, epoch=0)
    assert values_of(follower[TP].records) == [b"a"]
    h.fetch(1, replica=2, epoch=0)
    [consumer] = h.fetch(0)
    assert values_of(consumer[TP].records) == [b"a"]


def test_delayed_fetch_completes_on_hw_advance_or_expires():
    h = Harness()
    waiting = h.fetch(0, max_wait_ms=500)
    assert waiting == []
    h.produce(batch(b"a"))
    assert values_of(waiting[0][TP].records) == [b"a"]  # answered when the hw moved
    answers = []
    h.rm.fetch(-1, 500, 1, 1 << 20, {TP: FetchPartition(1)}, answers.append)
    assert answers == []
    h.tick(500)
    assert answers[0][TP].records == b""


def test_delayed_fetch_respects_min_bytes():
    h = Harness()
    answers = []
    h.rm.fetch(-1, 500, 10_000, 1 << 20, {TP: FetchPartition(0)}, answers.append)
    h.produce(batch(b"a"))
    assert answers == []  # one small batch is below min_bytes
    h.produce(batch(b"x" * 10_000))
    assert values_of(answers[0][TP].records) == [b"a", b"x" * 10_000]


@pytest.mark.parametrize("epoch, error", [(0, ErrorCode.fenced_leader_epoch),
                                          (2, ErrorCode.unknown_leader_epoch)])
def test_fetch_epoch_fencing(epoch, error):
    h = Harness(replicas=(1, 2), epoch=1)
    [answer] = h.fetch(0, replica=2, epoch=epoch)
    assert answer[TP].error == error
    assert h.partition.followers[2].log_end_offset == -1  # fenced fetch moved nothing


def test_diverging_epoch_in_follower_fetch():
    h = Harness(replicas=(1, 2), epoch=0)
    h.produce(batch(b"a", b"b"))
    h.rm.become_leader(TP, PartitionConfig(), 2, (1, 2), (1, 2))
    h.produce(batch(b"c"))
    # the follower has offsets 0..3 in epoch 1 (never known to this leader)
    [answer] = h.fetch(4, replica=2, epoch=2, last_epoch=1)
    assert answer[TP].diverging_epoch == (0, 2)
    [answer] = h.fetch(2, replica=2, epoch=2, last_epoch=0)
    assert answer[TP].diverging_epoch is None and values_of(answer[TP].records) == [b"c"]


def test_isr_shrinks_after_lag_and_expands_when_caught_up():
    config = PartitionConfig(replica_lag_time_max_ms=1_000)
    h = Harness(replicas=(1, 2), config=config, isr_check_interval_ms=500)
    h.produce(batch(b"a"))
    h.tick(1_500)  # the first lag check more than the lag time after the last catch-up
    assert h.partition.isr == {1}
    assert h.partition.high_watermark == 1  # alone in the ISR, min ISR 1
    h.produce(batch(b"b"))
    h.fetch(0, replica=2, epoch=0)  # behind the hw: not admitted (M15)
    assert h.partition.isr == {1}
    h.fetch(2, replica=2, epoch=0)
    assert h.partition.isr == {1, 2}


def _proposing_follower_2(proposals: list):
    """Leader 1 of TP, ISR {1}: follower 2 catches up with "a" (its joining is proposed, not
    yet answered), then "b" is appended. The replica manager and the partition."""
    rm = ReplicaManager(1, ManualClock(1_000), lambda key: MemoryLog(),
                        alter_isr=lambda p, isr: proposals.append(isr))
    rm.become_leader(TP, PartitionConfig(), 0, (1,), (1, 2))
    rm.append_records(1000, 1, {TP: batch(b"a")}, lambda r: None)
    rm.fetch(2, 0, 1, 1 << 20, {TP: FetchPartition(1, current_leader_epoch=0)}, lambda r: None)
    rm.append_records(1000, 1, {TP: batch(b"b")}, lambda r: None)
    return rm, rm.partition(TP)


def test_hw_uses_maximal_isr_while_change_is_in_flight():
    proposals = []
    rm, partition = _proposing_follower_2(proposals)
    assert proposals == [{1, 2}]
    assert partition.isr == {1} and partition.maximal_isr == {1, 2}
    assert partition.high_watermark == 1  # follower 2 (pending member) has not got "b"
    rm.isr_committed(TP, 0, {1, 2})
    assert partition.isr == {1, 2}


def test_the_controllers_answer_ends_a_proposal_an_older_image_kept_pending():
    """An image sent before the controller handled the proposal leaves it pending (the maximal
    ISR still counts the proposed member); the controller's answer ends it: the hw moves past
    the member that never joined, and the next proposal can be made. Found by mutation testing
    (session 2225a175104f's survivor 00335: isr_answered's `is not None` negated; only the
    server's controller client calls it)."""
    proposals = []
    rm, partition = _proposing_follower_2(proposals)
    rm.isr_committed(TP, 0, {1})  # an image from before the controller saw the proposal
    assert partition.maximal_isr == {1, 2} and partition.high_watermark == 1
    rm.isr_answered(TP, {1, 2})  # the controller answered (it did not take 2 in)
    assert partition.maximal_isr == {1} and partition.high_watermark == 2
    rm.fetch(2, 0, 1, 1 << 20, {TP: FetchPartition(2, current_leader_epoch=0)}, lambda r: None)
    assert proposals == [{1, 2}, {1, 2}]  # proposed again
    rm.isr_answered(("gone", 0), {1})  # a partition no longer hosted: nothing to end


def test_idempotent_duplicate_returns_original_offsets_and_gap_is_out_of_order():
    h = Harness()
    h.produce(batch(b"a", pid=7, epoch=0, seq=0))
    h.produce(batch(b"b", pid=7, epoch=0, seq=1))
    h.produce(batch(b"a", pid=7, epoch=0, seq=0))  # retry of an acknowledged batch
    h.produce(batch(b"z", pid=7, epoch=0, seq=5))
    errors = [(a[TP].error, a[TP].base_offset) for a in h.answers]
    assert errors[:3] == [(0, 0), (0, 1), (0, 0)]
    assert errors[3][0] == ErrorCode.out_of_order_sequence_number
    assert h.partition.log_end_offset == 2


def test_list_offsets_and_offset_for_leader_epoch():
    h = Harness(epoch=3)
    h.produce(batch(b"a", b"b"))
    assert h.rm.list_offset(TP, -2).offset == 0
    assert h.rm.list_offset(TP, -1).offset == 2
    answer = h.rm.offset_for_leader_epoch(TP, 3)
    assert (answer.leader_epoch, answer.offset) == (3, 2)
    # below every known epoch: Kafka answers that epoch, ending where the first known one starts
    answer = h.rm.offset_for_leader_epoch(TP, 1)
    assert (answer.leader_epoch, answer.offset) == (1, 0)


def test_follower_copies_leader_then_truncates_by_diverging_epoch():
    leader, follower = Harness(replicas=(1, 2)), ReplicaManager(2, ManualClock(1_000), lambda k: MemoryLog())
    follower.become_follower(TP, PartitionConfig(), 1, 0, (1, 2))
    copy = follower.partition(TP)
    leader.produce(batch(b"a", b"b"))
    [answer] = leader.fetch(0, replica=2, epoch=0)
    copy.append_as_follower(answer[TP].records, answer[TP].high_watermark)
    assert copy.log_end_offset == 2 and copy.high_watermark == 0
    for expected_hw in (0, 2):  # the hw this fetch raised reaches the follower one fetch later
        [answer] = leader.fetch(2, replica=2, epoch=0, last_epoch=0)
        copy.append_as_follower(answer[TP].records, answer[TP].high_watermark)
        assert copy.high_watermark == expected_hw
    # an uncommitted tail in an epoch the leader never had is cut at the diverging end offset
    copy.make_leader(1, (2,), (1, 2))
    copy.append_as_leader(batch(b"x"), 1)
    copy.make_follower(1, 2, (1, 2))
    leader.rm.become_leader(TP, PartitionConfig(), 2, (1, 2), (1, 2))
    [answer] = leader.fetch(3, replica=2, epoch=2, last_epoch=1)
    epoch, end = answer[TP].diverging_epoch
    assert (epoch, end) == (0, 2)
    copy.truncate_to(end)
    assert copy.log_end_offset == 2 and copy.log.epochs.latest_epoch == 0


def min_isr_enforced(mutants):
    h = Harness(replicas=(1, 2, 3), isr=(1,),
                config=PartitionConfig(min_insync_replicas=2, mutants=mutants))
    h.produce(batch(b"a"), acks=-1)
    return h.answers[0][TP].error == ErrorCode.not_enough_replicas


def produce_purgatory_expires(mutants):
    h = Harness(replicas=(1, 2), config=PartitionConfig(mutants=mutants))
    h.produce(batch(b"a"), acks=-1, timeout_ms=500)
    h.tick(1_000)
    return bool(h.answers) and h.answers[0][TP].error == ErrorCode.request_timed_out


def fetch_purgatory_waits_for_min_bytes(mutants):
    h = Harness(config=PartitionConfig(mutants=mutants))
    h.produce(batch(b"a"))
    answers = []
    h.rm.fetch(-1, 500, 10_000, 1 << 20, {TP: FetchPartition(0)}, answers.append)
    return answers == []


@pytest.mark.parametrize("check, mutant", [
    (min_isr_enforced, "M3"), (produce_purgatory_expires, "M10"),
    (fetch_purgatory_waits_for_min_bytes, "M11")])
def test_mutant_breaks_its_rule(check, mutant):
    assert check(frozenset())
    assert not check(frozenset({mutant}))
