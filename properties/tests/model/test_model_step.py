"""Unit tests of the model's step(), one (or a few) per semantic rule of docs/semantics.md."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.model import effects as eff
from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel, replica_fetch_for
from kafkaref.model.config import Bug, ClusterConfig
from kafkaref.model.step import step
from kafkaref.model.values import initial_state

OK = ErrorCode.none


def started(**config) -> ReferenceModel:
    """A 3-broker cluster (unless configured otherwise) with b1 (broker 0) leading partition 0."""
    model = ReferenceModel(ClusterConfig(**config))
    model.feed(ev.Elect(0, 0))
    return model


def produce(model, request_id, values=(b"x",), acks=-1, timeout_ms=1000, broker=0):
    return model.feed(ev.Produce(request_id, broker, 0, tuple(values), acks, timeout_ms))


def sync(model, *followers, rounds=2):
    """Let followers fetch until they and the hw are caught up (two fetch rounds suffice)."""
    effects = []
    for _ in range(rounds):
        for follower in followers:
            effects.extend(model.replicate(follower))
    return effects


def leader(model, partition=0):
    return model.state.partitions[partition].replicas[model.state.partitions[partition].control.leader]


def responses(effects, kind):
    return [e for e in effects if isinstance(e, kind)]


# -- acks -----------------------------------------------------------------------------------


def test_acks_0_appends_without_any_answer():
    model = started()
    assert produce(model, 1, acks=0) == ()
    assert leader(model).leo == 1
    assert model.ghost.outstanding == frozenset()


def test_acks_1_answers_after_the_local_append():
    model = started()
    (answer,) = produce(model, 1, [b"a", b"b"], acks=1)
    assert answer == eff.ProduceResponse(1, OK, 0, (0, 1))
    assert leader(model).hw == 0  # not committed yet


def test_acks_all_waits_in_purgatory_until_the_hw_passes_the_batch():
    model = started()
    assert produce(model, 1, [b"a", b"b"]) == ()
    assert len(model.state.purgatory) == 1
    sync(model, 1)  # only one follower: the ISR {b1,b2,b3} still waits for b3
    assert model.state.purgatory
    effects = sync(model, 2)
    (answer,) = responses(effects, eff.ProduceResponse)
    assert answer == eff.ProduceResponse(1, OK, 0, (0, 1), eff.COMPLETED)
    assert leader(model).hw == 2 and not model.state.purgatory


def test_invalid_acks_and_empty_batches_are_rejected():
    model = started()
    assert produce(model, 1, acks=2)[0].error == ErrorCode.invalid_required_acks
    # Kafka (produce v3+): exactly one batch per partition, else INVALID_RECORD
    assert produce(model, 2, values=())[0].error == ErrorCode.invalid_record
    assert leader(model).leo == 0


# -- min.insync.replicas --------------------------------------------------------------------


def shrink_to_leader_alone(model):
    """Followers never fetch; after the lag time the leader shrinks the ISR to itself."""
    produce(model, 900, acks=1)
    model.feed(ev.Tick(2 * model.config.replica_lag_time_max_ms))
    model.feed(ev.CommitIsrChange(0))
    assert leader(model).isr == {0}


def test_not_enough_replicas_is_checked_before_the_append():
    model = started(min_insync_replicas=2)
    shrink_to_leader_alone(model)
    leo = leader(model).leo
    (answer,) = produce(model, 1)
    assert answer.error == ErrorCode.not_enough_replicas
    assert leader(model).leo == leo  # nothing written


def test_acks_1_is_accepted_below_min_isr_but_the_hw_stays_put():
    model = started(min_insync_replicas=2)
    shrink_to_leader_alone(model)
    hw = leader(model).hw
    assert produce(model, 1, acks=1)[0].error == OK
    assert leader(model).hw == hw  # KIP-966: no hw advance below min ISR


def test_not_enough_replicas_after_append_when_the_isr_shrank_while_waiting():
    # Before KIP-966 (Bug.HW_UNDER_MIN_ISR) the hw still moved below min ISR; a produce waiting
    # when the ISR shrank is completed with NOT_ENOUGH_REPLICAS_AFTER_APPEND.
    model = started(min_insync_replicas=2, bugs={Bug.HW_UNDER_MIN_ISR})
    sync(model, 1, 2)
    assert produce(model, 1, timeout_ms=120_000) == ()
    model.feed(ev.Tick(2 * model.config.replica_lag_time_max_ms))
    effects = model.feed(ev.CommitIsrChange(0))
    (answer,) = responses(effects, eff.ProduceResponse)
    assert answer.error == ErrorCode.not_enough_replicas_after_append
    assert answer.via == eff.COMPLETED


# -- produce purgatory ----------------------------------------------------------------------


def test_produce_expires_with_request_timed_out_at_its_deadline():
    model = started()
    produce(model, 1, timeout_ms=100)
    assert model.feed(ev.Tick(99)) == ()
    (answer,) = model.feed(ev.Tick(1))
    # Kafka's DelayedProduce answers with the append's result, its error set to the timeout
    assert (answer.error, answer.via, answer.base_offset) == (ErrorCode.request_timed_out, eff.EXPIRED,
                                                              leader(model).leo - 1)
    assert not model.state.purgatory


def test_leadership_loss_completes_waiting_produces_with_not_leader():
    model = started()
    produce(model, 1)
    effects = model.feed(ev.Elect(0, 1))
    (answer,) = responses(effects, eff.ProduceResponse)
    assert answer.error == ErrorCode.not_leader_or_follower and answer.via == eff.COMPLETED


def test_produce_to_a_follower_or_a_dead_broker():
    model = started()
    assert produce(model, 1, broker=1)[0].error == ErrorCode.not_leader_or_follower
    model.feed(ev.CrashBroker(2))
    assert produce(model, 2, broker=2) == (eff.Disconnected(2),)


# -- consumer fetch -------------------------------------------------------------------------


def test_consumers_never_see_records_at_or_above_the_hw():
    model = started()
    produce(model, 1, [b"a"])
    sync(model, 1, 2)
    produce(model, 2, [b"b"], acks=1)
    (answer,) = model.feed(ev.Fetch(3, 0, 0, 0))
    assert [r.value for r in answer.records] == [b"a"] and answer.high_watermark == 1
    (empty,) = model.feed(ev.Fetch(4, 0, 0, 1))
    assert empty.error == OK and empty.records == ()


def test_fetch_returns_whole_batches_from_the_batch_holding_the_offset():
    model = started(replication_factor=1, min_insync_replicas=1)
    produce(model, 1, [b"a", b"b", b"c"])
    produce(model, 2, [b"d"])
    (answer,) = model.feed(ev.Fetch(3, 0, 0, 1, max_bytes=1))
    assert answer.first_offset == 0 and [r.value for r in answer.records] == [b"a", b"b", b"c"]


def test_offset_out_of_range():
    model = started()
    assert model.feed(ev.Fetch(1, 0, 0, 1))[0].error == ErrorCode.offset_out_of_range
    assert model.feed(ev.Fetch(2, 0, 0, -1))[0].error == ErrorCode.offset_out_of_range


def test_fetch_checks_the_current_leader_epoch():
    model = started()
    model.feed(ev.Elect(0, 1))  # epoch 1, b2 leads
    assert model.feed(ev.Fetch(1, 1, 0, 0, current_leader_epoch=0))[0].error == ErrorCode.fenced_leader_epoch
    assert model.feed(ev.Fetch(2, 1, 0, 0, current_leader_epoch=2))[0].error == ErrorCode.unknown_leader_epoch
    assert model.feed(ev.Fetch(3, 1, 0, 0, current_leader_epoch=1))[0].error == OK
    assert model.feed(ev.Fetch(4, 0, 0, 0))[0].error == ErrorCode.not_leader_or_follower


def test_a_parked_fetch_is_fenced_when_its_leader_epoch_passes():
    """A fetch parked with the leader epoch it knew completes FENCED_LEADER_EPOCH once a new
    election moves the broker's epoch past it (Kafka's DelayedFetch checks the epoch again
    before anything else); one that named no epoch learns the broker no longer leads."""
    model = started()
    model.feed(ev.Fetch(1, 0, 0, 0, max_wait_ms=1000, current_leader_epoch=0))
    model.feed(ev.Fetch(2, 0, 0, 0, max_wait_ms=1000))
    effects = model.feed(ev.Elect(0, 1))  # epoch 1: b2 leads, b1 follows
    assert {(e.request_id, e.error) for e in responses(effects, eff.FetchResponse)} == {
        (1, ErrorCode.fenced_leader_epoch), (2, ErrorCode.not_leader_or_follower)}


def test_fetch_purgatory_completes_when_min_bytes_become_readable():
    model = started()
    assert model.feed(ev.Fetch(1, 0, 0, 0, min_bytes=1, max_wait_ms=500)) == ()
    produce(model, 2, [b"a"])
    effects = sync(model, 1, 2)
    fetched = responses(effects, eff.FetchResponse)
    assert len(fetched) == 1 and fetched[0].via == eff.COMPLETED
    assert fetched[0].records[0].value == b"a"


def test_fetch_purgatory_expires_after_max_wait_with_what_is_readable():
    model = started()
    model.feed(ev.Fetch(1, 0, 0, 0, min_bytes=100, max_wait_ms=500))
    assert model.feed(ev.Tick(499)) == ()
    (answer,) = model.feed(ev.Tick(1))
    assert answer.error == OK and answer.records == () and answer.via == eff.EXPIRED


def test_list_offsets_earliest_and_latest_is_the_hw():
    model = started()
    produce(model, 1, [b"a", b"b"])
    sync(model, 1, 2)
    produce(model, 2, [b"c"], acks=1)
    assert model.feed(ev.ListOffsets(3, 0, 0, ev.EARLIEST)) == (eff.ListOffsetsResponse(3, OK, 0),)
    assert model.feed(ev.ListOffsets(4, 0, 0, ev.LATEST)) == (eff.ListOffsetsResponse(4, OK, 2),)
    assert model.feed(ev.ListOffsets(5, 1, 0, ev.LATEST))[0].error == ErrorCode.not_leader_or_follower
    # by time (KIP-79): model records count as stamped 0, so 0 finds the first one below the
    # hw and a later time none (offset -1, no error), as the core answers
    assert model.feed(ev.ListOffsets(6, 0, 0, 0)) == (eff.ListOffsetsResponse(6, OK, 0, 0),)
    assert model.feed(ev.ListOffsets(7, 0, 0, 12345)) == (eff.ListOffsetsResponse(7, OK, -1),)
    # the wire's values (the locksteps send the model's constants to the broker as they are)
    assert (ev.EARLIEST, ev.LATEST, ev.HIGH_WATERMARK) == (-2, -1, -1)
    assert model.feed(ev.ListOffsets(8, 0, 0, -2)) == (eff.ListOffsetsResponse(8, OK, 0),)


# -- replication, hw, ISR -------------------------------------------------------------------


def test_followers_learn_the_hw_one_fetch_late():
    model = started(replication_factor=2, brokers=2, min_insync_replicas=1)
    produce(model, 1, [b"a"])
    model.replicate(1)  # gets the record, hw 0
    model.replicate(1)  # leader hw -> 1, response still carries 0
    follower = model.state.partitions[0].replicas[1]
    assert leader(model).hw == 1 and follower.hw == 0
    model.replicate(1)
    assert model.state.partitions[0].replicas[1].hw == 1


def test_replica_fetch_is_fenced_by_the_current_leader_epoch():
    model = started()
    model.feed(ev.Elect(0, 1))
    model.feed(ev.Elect(0, 0))  # epoch 2: an older epoch >= 0 exists (-1 means "not checked")
    fetch = replica_fetch_for(model.state, 1, 0)
    stale = ev.ReplicaFetch(0, 1, 0, 0, -1, fetch.current_leader_epoch - 1)
    future = ev.ReplicaFetch(0, 1, 0, 0, -1, fetch.current_leader_epoch + 1)
    assert model.feed(stale)[0].error == ErrorCode.fenced_leader_epoch
    assert model.feed(future)[0].error == ErrorCode.unknown_leader_epoch


def test_follower_truncates_by_diverging_epoch():
    # b1 leads epoch 0 and writes A (replicated to nobody) then loses leadership to b2, which
    # writes B at offset 0 in epoch 1. b1's first fetch gets a diverging epoch and truncates A.
    model = started(min_insync_replicas=1)
    produce(model, 1, [b"A"], acks=1)
    model.feed(ev.Elect(0, 1))
    produce(model, 2, [b"B"], acks=1, broker=1)
    (result,) = model.replicate(0)
    assert result.diverging == (0, 0) and result.truncated_to == 0
    model.replicate(0)
    b1 = model.state.partitions[0].replicas[0]
    assert [e.value for e in b1.log] == [b"B"] and b1.epoch_cache == ((1, 0),)


def test_hw_waits_for_a_member_being_added_to_the_isr():
    # Maximal ISR: while the expansion of b2 is in flight, the hw counts b2's position.
    model = started(brokers=2, replication_factor=2, min_insync_replicas=1)
    shrink_to_leader_alone(model)
    model.replicate(1)
    model.replicate(1)  # b2 caught up -> expansion proposed
    assert leader(model).pending_isr == {0, 1}
    produce(model, 1, [b"a"])
    assert leader(model).hw == 1  # waits for b2 although the committed ISR is {b1}
    model.feed(ev.CommitIsrChange(0))
    assert model.state.partitions[0].control.isr == {0, 1}
    effects = model.replicate(1) + model.replicate(1)
    assert responses(effects, eff.ProduceResponse)[0].error == OK


def test_isr_shrinks_after_the_lag_time_and_expands_once_caught_up():
    model = started()
    produce(model, 1, [b"a"], acks=1)
    sync(model, 1)
    model.feed(ev.Tick(60_000))
    assert leader(model).pending_isr == {0, 1}
    effects = model.feed(ev.CommitIsrChange(0))
    assert effects[0] == eff.IsrChangeResult(0, OK, frozenset({0, 1}))
    sync(model, 2)
    assert leader(model).pending_isr == {0, 1, 2}
    model.feed(ev.CommitIsrChange(0))
    assert model.state.partitions[0].control.isr == {0, 1, 2}


def test_a_follower_caught_up_within_the_lag_time_stays_in_the_isr_late_in_a_run():
    """The lag is measured from the follower's last caught-up time (Kafka's
    lastCaughtUpTimeMs): long after the start, a follower that was caught up a moment ago and
    is one batch behind now stays in the ISR."""
    model = started()
    for tick in range(6):  # 90 s of a cluster whose followers keep up
        produce(model, 10 + tick, [b"a"], acks=1)
        sync(model, 1, 2)
        model.feed(ev.Tick(15_000))
    produce(model, 20, [b"b"], acks=1)  # both followers one batch behind
    model.feed(ev.Tick(15_000))  # the next ISR check: caught up 15 s ago, within 30 s
    assert leader(model).pending_isr is None
    assert leader(model).isr == {0, 1, 2}


def test_isr_expansion_needs_the_start_of_the_leaders_epoch():
    # b2 leads epoch 1 with an hw lagging behind (0) while b1's log holds A from epoch 0.
    model = started(min_insync_replicas=1)
    produce(model, 1, [b"A"], acks=1)
    sync(model, 1)
    model.feed(ev.CrashBroker(2))  # epoch bump, isr {b1,b2}
    model.feed(ev.Elect(0, 1))
    model.feed(ev.RestartBroker(2))
    fetch = replica_fetch_for(model.state, 2, 0)
    assert fetch.fetch_offset == 0
    model.feed(fetch)
    new_leader = leader(model)
    epoch_start = new_leader.epoch_cache[-1][1]
    assert epoch_start == 1 and new_leader.pending_isr is None  # offset 0 < epoch start 1


def test_clean_election_only_from_the_live_isr():
    model = started()
    model.feed(ev.Tick(60_000))
    model.feed(ev.CommitIsrChange(0))  # isr {b1}
    assert model.feed(ev.Elect(0, 1))[0] == eff.ElectionResult(0, 1, ErrorCode.ineligible_replica)
    assert model.feed(ev.Elect(0, 0))[0].error == ErrorCode.election_not_needed


def test_unclean_election_only_when_configured_and_no_clean_candidate():
    for allowed in (False, True):
        model = started(unclean_leader_election=allowed, min_insync_replicas=1)
        model.feed(ev.Tick(60_000))
        model.feed(ev.CommitIsrChange(0))
        assert model.feed(ev.Elect(0, 1, unclean=True))[0].error == ErrorCode.ineligible_replica
        model.feed(ev.CrashBroker(0))
        (result, *_) = model.feed(ev.Elect(0, 1, unclean=True))
        assert (result.error == OK) == allowed
        assert (0 in model.ghost.unclean) == allowed


def test_elr_member_is_elected_when_the_last_isr_member_is_gone():
    model = started(brokers=2, replication_factor=2, min_insync_replicas=2)
    sync(model, 1)
    model.feed(ev.Tick(60_000))
    produce(model, 1, [b"a"], acks=1)  # b2 now lags
    model.feed(ev.Tick(60_000))
    model.feed(ev.CommitIsrChange(0))
    assert model.state.partitions[0].control.elr == {1}
    model.feed(ev.CrashBroker(0))
    assert model.feed(ev.Elect(0, 1))[0].error == OK
    assert model.state.partitions[0].control.isr == {1}


# -- crashes and flushing -------------------------------------------------------------------


def test_crash_loses_the_unflushed_suffix_only():
    model = started(min_insync_replicas=1)
    produce(model, 1, [b"a"], acks=1)
    model.feed(ev.Flush(0))
    produce(model, 2, [b"b"], acks=1)
    model.feed(ev.CrashBroker(0))
    assert [e.value for e in model.state.partitions[0].replicas[0].log] == [b"a"]


def test_flush_policy_makes_appends_durable():
    model = started(flush_interval_messages=1, min_insync_replicas=1)
    produce(model, 1, [b"a"], acks=1)
    model.feed(ev.CrashBroker(0))
    assert model.state.partitions[0].replicas[0].leo == 1


def test_crash_disconnects_parked_requests_and_restart_follows_the_leader():
    model = started()
    produce(model, 1)
    model.feed(ev.Fetch(2, 0, 0, 1, max_wait_ms=100))
    effects = model.feed(ev.CrashBroker(0))
    assert set(effects) == {eff.Disconnected(1), eff.Disconnected(2)}
    assert model.state.partitions[0].control.leader is None
    model.feed(ev.Elect(0, 1))
    model.feed(ev.RestartBroker(0))
    assert model.state.partitions[0].replicas[0].leader == 1
    assert model.check() == []


def test_last_isr_member_restarting_after_a_crash_leaves_the_isr():
    model = started(min_insync_replicas=1)
    model.feed(ev.Tick(60_000))
    model.feed(ev.CommitIsrChange(0))
    model.feed(ev.CrashBroker(0))
    assert model.state.partitions[0].control.isr == {0}
    model.feed(ev.RestartBroker(0))
    assert model.state.partitions[0].control.isr == frozenset()
    assert model.feed(ev.Elect(0, 0))[0].error == ErrorCode.ineligible_replica


def test_another_replica_restarting_leaves_an_offline_partitions_isr_alone():
    """Only the last ISR member's own return empties the ISR (KIP-966); a replica outside the
    ISR coming back changes nothing there, and the partition waits for that member."""
    model = started(min_insync_replicas=1)
    model.feed(ev.Tick(60_000))
    model.feed(ev.CommitIsrChange(0))
    model.feed(ev.CrashBroker(1))
    model.feed(ev.CrashBroker(0))
    assert model.state.partitions[0].control.leader is None
    assert model.state.partitions[0].control.isr == {0}
    model.feed(ev.RestartBroker(1))
    assert model.state.partitions[0].control.isr == {0}


def test_dead_brokers_do_not_fetch_and_replies_from_dead_leaders_fail():
    model = started()
    fetch = replica_fetch_for(model.state, 1, 0)
    model.feed(ev.CrashBroker(0))
    (result,) = model.feed(fetch)
    assert isinstance(result, eff.ReplicaFetchResult) and result.error == ErrorCode.network_exception
    assert result.appended == 0  # a failed fetch appends nothing
    model.feed(ev.CrashBroker(1))
    assert model.feed(fetch) == ()


# -- bad input ------------------------------------------------------------------------------


def test_impossible_events_raise():
    state = initial_state(ClusterConfig())
    for broker in (7, -1):  # no broker 7 nor -1: not addressable (no silent wrap to the last)
        with pytest.raises(ValueError):
            step(state, ev.Produce(1, broker, 0, (b"a",)))
    # an unknown partition is a request Kafka answers (properties/lockstep.py: the same code)
    for partition in (3, -1):  # past the last and below the first
        (answer,) = step(state, ev.Fetch(1, 0, partition, 0))[1]
        assert answer.error == ErrorCode.unknown_topic_or_partition
        after, (answer,) = step(state, ev.Produce(1, 0, partition, (b"a",)))
        assert answer.error == ErrorCode.unknown_topic_or_partition and after == state
    with pytest.raises(ValueError):
        step(state, ev.Tick(-1))
    with pytest.raises(ValueError):  # a retention run is the broker's own: never of a partition
        step(state, ev.Retention(0, -1, 0))  # it does not have (no silent wrap to the last)
    with pytest.raises(TypeError):
        step(state, "produce")
    with pytest.raises(ValueError):
        ClusterConfig(brokers=2, replication_factor=3)


def test_values_are_frozen_and_positions_only_move_forward():
    state = initial_state(ClusterConfig())
    with pytest.raises(AttributeError):
        state.now_ms = 5
    replica = state.partitions[0].replicas[0]
    with pytest.raises(ValueError):
        replica.raise_hw(-1)


def test_a_follower_crashing_after_its_isr_addition_was_proposed_does_not_enter_the_isr():
    # Found by a Hypothesis walk: b2 caught up (expansion proposed), crashed losing its log,
    # restarted, and the stale proposal was committed with an empty b2 in the ISR (B10 shape).
    model = started(min_insync_replicas=1)
    model.feed(ev.Tick(60_000))
    model.feed(ev.CommitIsrChange(0))  # isr {b1}
    produce(model, 1, [b"a"])
    sync(model, 1)
    assert leader(model).pending_isr == {0, 1}
    model.feed(ev.CrashBroker(1))
    model.feed(ev.RestartBroker(1))
    model.feed(ev.CommitIsrChange(0))
    assert model.state.partitions[0].control.isr == {0}
    assert leader(model).follower_offsets[1] == -1


# -- DeleteRecords (the log start) ----------------------------------------------------------


def follower(model, broker, partition=0):
    return model.state.partitions[partition].replicas[broker]


def test_delete_records_waits_for_the_live_followers_log_start():
    model = started()
    produce(model, 1, [b"a", b"b", b"c"])
    sync(model, 1, 2)
    assert model.feed(ev.DeleteRecords(2, 0, 0, 2)) == ()  # parked: followers still say 0
    assert leader(model).log_start == 2
    assert model.feed(ev.Fetch(3, 0, 0, 1)) == (
        eff.FetchResponse(3, ErrorCode.offset_out_of_range),)  # -1s: a failed partition
    assert model.feed(ev.ListOffsets(4, 0, 0, ev.EARLIEST)) == (
        eff.ListOffsetsResponse(4, OK, 2),)
    effects = sync(model, 1, 2)  # they learn it, then say it
    assert responses(effects, eff.DeleteRecordsResponse) == [
        eff.DeleteRecordsResponse(2, OK, 2, eff.COMPLETED)]
    assert follower(model, 1).log_start == follower(model, 2).log_start == 2


def test_delete_records_refusals_and_expiry():
    model = started()
    produce(model, 1, [b"a"])
    sync(model, 1, 2)
    assert model.feed(ev.DeleteRecords(2, 0, 0, 5)) == (
        eff.DeleteRecordsResponse(2, ErrorCode.offset_out_of_range),)
    assert model.feed(ev.DeleteRecords(3, 1, 0, 0)) == (
        eff.DeleteRecordsResponse(3, ErrorCode.not_leader_or_follower),)
    assert model.feed(ev.DeleteRecords(4, 0, 0, ev.HIGH_WATERMARK, timeout_ms=100)) == ()
    (expired,) = model.feed(ev.Tick(101))
    assert expired == eff.DeleteRecordsResponse(4, ErrorCode.request_timed_out, 0, eff.EXPIRED)


def test_a_crashed_follower_stops_counting_and_a_lagging_one_starts_at_the_leaders_start():
    model = started()
    produce(model, 1, [b"a", b"b"])
    sync(model, 1, 2)
    model.feed(ev.CrashBroker(2))
    model.feed(ev.DeleteRecords(2, 0, 0, ev.HIGH_WATERMARK))
    effects = sync(model, 1)
    assert responses(effects, eff.DeleteRecordsResponse)[0].error == OK
    model.feed(ev.RestartBroker(2))
    if follower(model, 2).leo < 2:  # it lost its unflushed records in the crash
        effects = model.replicate(2)
        assert effects[0].error == ErrorCode.offset_out_of_range
    sync(model, 2)
    assert (follower(model, 2).log_start, follower(model, 2).leo) == (2, 2)



def test_list_offsets_by_time_searches_from_the_log_start():
    """Kafka's fetchOffsetByTimestamp reads from the log start offset: after DeleteRecords the
    first record stamped at or after the time is at the log start, and there is none once the
    log start reaches the hw (the model answered 0, below the log start; found by the deep
    core lockstep)."""
    model = started()
    produce(model, 1, [b"a", b"b", b"c"])
    sync(model, 1, 2)
    for request_id, (offset, expected) in enumerate(((2, (2, 0)), (3, (-1, -1))), start=10):
        model.feed(ev.DeleteRecords(request_id, 0, 0, offset))
        sync(model, 1, 2)
        assert leader(model).log_start == offset
        assert model.feed(ev.ListOffsets(request_id + 100, 0, 0, 0)) == (
            eff.ListOffsetsResponse(request_id + 100, OK, *expected),)


def test_a_follower_may_append_after_records_its_leader_deleted_the_invariants_judge_above():
    """Kafka's leader answers a last fetched epoch that DeleteRecords removed from its epoch
    cache with its log start as that epoch's end (LeaderEpochFileCache.endOffsetFor), so a
    follower holding records of an old leader appends after them, and both drop them once the
    follower's hw passes the log start. The spec's invariants judge the logs above the highest
    log start (refinement._deleted_cut): LogMatching held the deleted records against them
    (found by a deep core lockstep run)."""
    from kafkaref.model.refinement import image_violations

    model = started(replica_lag_time_max_ms=100)
    produce(model, 1, [b"a"], acks=1)
    sync(model, 1, 2)
    produce(model, 2, [b"b", b"c", b"x", b"y"], acks=1)
    sync(model, 2)  # broker 2 holds 1-4 of epoch 0; broker 1 does not
    model.feed(ev.Elect(0, 1))
    model.feed(ev.Produce(3, 1, 0, (b"d", b"e", b"f", b"g"), 1, 1000))
    model.feed(ev.Tick(60))
    sync(model, 0)  # broker 0 caught up at 60 ms, broker 2 never in this epoch
    model.feed(ev.Tick(100))  # the lag check at 150 ms
    model.feed(ev.CommitIsrChange(0))  # the ISR shrinks to the leader
    sync(model, 0)
    model.feed(ev.CommitIsrChange(0))  # broker 0 back in: the hw reaches 5
    sync(model, 0)
    assert leader(model).hw == 5
    model.feed(ev.DeleteRecords(4, 1, 0, 5, timeout_ms=0))
    model.feed(ev.Produce(5, 1, 0, (b"h",), 1, 1000))
    (fetched,) = responses(model.replicate(2), eff.ReplicaFetchResult)
    assert (fetched.diverging, fetched.appended) == (None, 1)
    mine, theirs = follower(model, 2).log, leader(model).log
    assert [e.epoch for e in mine][:5] != [e.epoch for e in theirs][:5]  # below the log start
    sync(model, 2)
    assert follower(model, 2).log_start == leader(model).log_start == 5
    assert image_violations(model.state) == []
    assert model.check() == []
