"""ListOffsets as Kafka 4.3.1's ReplicaManager.fetchOffset answers it, by replica id: a consumer
(-1) below the hw, and OFFSET_NOT_AVAILABLE while a new leader's hw is below the start of its
epoch (KIP-207); a replica (>= 0) and a debugging tool (-2) below the log end, the debugging
tool by a follower too. Read in Kafka's source and checked in 4.3.1's jar (javap: the replica
id compared with -2 for fetchOnlyFromLeader, with -1 for the isolation level).

Found by the mutation sample's 00040 (`replica_id < 0` to `< 1`): nothing told a consumer's
replica id from a replica's; kafkaref answered the hw to every negative id, and never
OFFSET_NOT_AVAILABLE."""

from kio.schema.errors import ErrorCode

from kafkaref.impl.protocol.list_offsets import (
    CONSUMER_REPLICA_ID,
    DEBUGGING_REPLICA_ID,
    LATEST,
    MAX_TIMESTAMP,
)
from kafkaref.impl.protocol.records import build_batch
from kafkaref.model import events as ev
from kafkaref.model.api import ReferenceModel, replica_fetch_for
from kafkaref.model.config import ClusterConfig
from kafkaref.properties.lockstep import TOPIC, CoreLockstep

KEY = (TOPIC, 0)


def both(config):
    return ReferenceModel(config), CoreLockstep(config)


def feed(model, core, event):
    expected = model.feed(event)
    assert core.feed(event) == expected, event
    return expected


def replicate(model, core, follower):
    event = replica_fetch_for(model.state, follower, 0)
    feed(model, core, event)


def lagging_new_leader():
    """Broker 1 leads epoch 1 from offset 2 on, its hw still 0 (brokers 0 and 2 not fetched)."""
    model, core = both(ClusterConfig(brokers=3))
    feed(model, core, ev.Elect(0, 0))
    feed(model, core, ev.Produce(1, 0, 0, (b"a", b"b"), acks=1))
    replicate(model, core, 1)
    feed(model, core, ev.Elect(0, 1))
    return model, core


def test_a_consumer_meets_offset_not_available_until_the_new_leaders_hw_reaches_its_epoch():
    model, core = lagging_new_leader()
    (latest,) = feed(model, core, ev.ListOffsets(10, 1, 0, ev.LATEST))
    (by_time,) = feed(model, core, ev.ListOffsets(11, 1, 0, 0))
    assert latest.error == by_time.error == ErrorCode.offset_not_available
    for follower in (0, 2, 0, 2):
        replicate(model, core, follower)
    (latest,) = feed(model, core, ev.ListOffsets(12, 1, 0, ev.LATEST))
    assert (latest.error, latest.offset) == (ErrorCode.none, 2)


def test_a_replica_and_a_debugging_tool_are_answered_the_log_end_and_by_a_follower_too():
    _, core = lagging_new_leader()
    leader, follower = core.brokers[1].replica_manager, core.brokers[2].replica_manager
    assert leader.list_offset(KEY, LATEST, replica_id=0).offset == 2  # a replica: the log end
    assert leader.list_offset(KEY, LATEST, replica_id=DEBUGGING_REPLICA_ID).offset == 2
    assert leader.list_offset(KEY, LATEST, replica_id=CONSUMER_REPLICA_ID).error == (
        ErrorCode.offset_not_available)
    assert follower.list_offset(KEY, LATEST).error == ErrorCode.not_leader_or_follower
    assert follower.list_offset(KEY, LATEST, replica_id=0).error == ErrorCode.not_leader_or_follower
    debugging = follower.list_offset(KEY, LATEST, replica_id=DEBUGGING_REPLICA_ID)
    assert (debugging.error, debugging.offset) == (ErrorCode.none, 0)  # broker 2 holds nothing


def test_the_greatest_timestamp_above_the_hw_is_not_answered_to_a_consumer():
    """Kafka looks the record up in the whole log and answers a consumer -1 when it lies at or
    above the hw (not the greatest one below it); a replica gets it."""
    model, core = both(ClusterConfig(brokers=3))
    feed(model, core, ev.Elect(0, 0))
    feed(model, core, ev.Produce(1, 0, 0, (b"a",), acks=1))  # stamped 0, as the lockstep's are
    for follower in (1, 2, 1, 2):
        replicate(model, core, follower)
    leader = core.brokers[0].replica_manager
    answers = []
    leader.append_records(30_000, 1, {KEY: build_batch([(None, b"late", (), 5_000)])},
                          answers.append)
    assert answers[0][KEY].error == ErrorCode.none and answers[0][KEY].base_offset == 1
    assert core.partition(0, 0).high_watermark == 1  # offset 1, stamped 5000, not replicated yet
    consumer = leader.list_offset(KEY, MAX_TIMESTAMP)
    assert (consumer.error, consumer.offset, consumer.timestamp) == (ErrorCode.none, -1, -1)
    replica = leader.list_offset(KEY, MAX_TIMESTAMP, replica_id=1)
    assert (replica.offset, replica.timestamp) == (1, 5_000)
    assert leader.list_offset(KEY, 1_000).offset == -1  # by time: offset 1 too, above the hw
    assert leader.list_offset(KEY, 1_000, replica_id=1).offset == 1

