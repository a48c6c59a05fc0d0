"""The single-broker control plane (impl/controller/local.py: `kafkaref broker` alone, and the
core tests' brokers) decides topic creation as the cluster's controller (ControllerState) does:
the same error for every partition count and replication factor (a broker refuses 0 and below
itself and fills in -1 with its defaults, but a BrokerConfig built in code may default to 0), a count below one refused before the replication factor is checked, as Kafka's
ReplicationControlManager does; and the same shape when created.

Found by mutation testing (session 79fa682's survivor 00142): LocalController refusing every
creation whose replication factor fits (`not` added to its check) passed the controller layer,
which never ran it; 00224 (`partitions < 1` read as `< 0`) and 00283 (ControllerState taking a
replication factor of 0) the same way. Both name the same registered broker as the controller in
every Metadata answer (Kafka names a live broker: clients send admin requests there): the fresh
sample's 00002, LocalController naming -1 by default, passed the controller layer."""

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.local import LocalController
from kafkaref.impl.controller.state import ControllerState
from kafkaref.impl.core.broker import Broker, BrokerConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.properties.clock import ManualClock
from kafkaref.properties.wire_calls import call, core_brokers


def local_create(broker, name: str, partitions: int, rf: int) -> ErrorCode:
    answers = []
    broker.create_topic(name, partitions, rf, {}, lambda error, _: answers.append(error))
    [error] = answers  # the local control plane answers at once
    return error


@given(brokers=st.integers(1, 3), partitions=st.integers(0, 3), rf=st.integers(0, 4))
def test_the_local_and_the_cluster_controller_create_alike(brokers, partitions, rf):
    broker = core_brokers(brokers)[0]
    state = ControllerState(ManualClock())
    for broker_id in range(brokers):
        state.register(broker_id, "127.0.0.1", 9092 + broker_id)
    error = local_create(broker, "t", partitions, rf)
    assert error == state.create_topic("t", partitions, rf, {})[0]
    assert error == (ErrorCode.invalid_partitions if partitions < 1 else ErrorCode.none
                     if 1 <= rf <= brokers else ErrorCode.invalid_replication_factor)
    shapes = [(len(t.partitions), {len(p.replicas) for p in t.partitions})
              for t in (broker.metadata.topic("t"), state.metadata.topic("t")) if t is not None]
    assert shapes == ([(partitions, {rf})] * 2 if error == ErrorCode.none else [])
    for topic in (broker.metadata.topic("t"), state.metadata.topic("t")):
        # a new partition is led by its first replica, Kafka's preferred leader
        assert topic is None or all(p.leader == p.replicas[0] for p in topic.partitions)


@given(st.lists(st.integers(0, 9), min_size=1, max_size=4, unique=True))
def test_the_local_and_the_cluster_controller_name_the_same_live_controller(broker_ids):
    """Brokers registering in any order: after each, every broker's Metadata answer names the
    controller ControllerState names, a registered broker; fenced, a live one, and -1 (Kafka's
    answer) once none is."""
    local, state, clock = LocalController(), ControllerState(ManualClock()), ManualClock()
    brokers = []
    for broker_id in broker_ids:
        brokers.append(Broker(BrokerConfig(broker_id=broker_id), clock, lambda key: MemoryLog()))
        local.register(brokers[-1], "127.0.0.1", 9092 + broker_id)
        state.register(broker_id, "127.0.0.1", 9092 + broker_id)
        for broker in brokers:
            answer = call(broker, 3, 12, {"topics": [], "allow_auto_topic_creation": False,
                                          "include_topic_authorized_operations": False})
            assert answer.controller_id == state.metadata.controller_id
            assert answer.controller_id in broker_ids[: len(brokers)]
    for gone, broker_id in enumerate(broker_ids, 1):  # fenced one by one: a live one, then none
        state.fence(broker_id)
        assert state.metadata.controller_id == min(broker_ids[gone:], default=-1)
    assert LocalController(controller_id=7).metadata.controller_id == 7  # a single broker's own id


@given(st.integers(1, 3).flatmap(lambda rf: st.lists(  # every partition rf replicas (Kafka's rule)
    st.permutations([0, 1, 2]).map(lambda ids: ids[:rf]), min_size=1, max_size=3)))
def test_an_assigned_topic_is_made_alike_led_by_each_partitions_first_replica(assignment):
    """CreateTopics with explicit replicas: each partition led by its first (preferred) replica,
    all of them in the ISR, by the local controller as by the cluster's (the fresh sample's
    00334: the local one leading by the second replica passed the controller layer)."""
    broker = core_brokers(3)[0]
    state = ControllerState(ManualClock())
    for broker_id in range(3):
        state.register(broker_id, "127.0.0.1", 9092 + broker_id)
    answers = []
    broker.create_topic("t", -1, -1, {}, lambda error, _: answers.append(error),
                        assignment=dict(enumerate(assignment)))
    assert answers == [ErrorCode.none]
    assert state.create_topic("t", -1, -1, {}, assignment=assignment) == (ErrorCode.none, None)
    for topic in (broker.metadata.topic("t"), state.metadata.topic("t")):
        assert [(p.leader, p.leader_epoch, p.replicas, p.isr) for p in topic.partitions] == [
            (r[0], 0, tuple(r), tuple(r)) for r in assignment]


TOPIC_CHANGES = st.lists(st.one_of(
    st.tuples(st.just("delete"), st.sampled_from(["t", "nope"])),
    st.tuples(st.just("grow"), st.sampled_from(["t", "nope"]), st.integers(0, 4)),
    st.tuples(st.just("configure"), st.sampled_from(["t", "nope"]),
              st.sampled_from([{}, {"min.insync.replicas": "2"}, {"min.insync.replicas": "x"}]))),
    max_size=5)


def local_change(broker, change) -> ErrorCode:
    answers = []

    def done(error, _message):
        answers.append(error)

    kind, name, *rest = change
    if kind == "delete":
        broker.delete_topic(name, done)
    elif kind == "grow":
        broker.create_partitions(name, rest[0], None, done)
    else:
        broker.alter_topic_configs(name, rest[0], done)
    [error] = answers
    return error


def cluster_change(state, change) -> ErrorCode:
    kind, name, *rest = change
    if kind == "delete":
        return state.delete_topic(name)[0]
    if kind == "grow":
        return state.create_partitions(name, rest[0])[0]
    return state.alter_configs(name, rest[0])[0]


@given(TOPIC_CHANGES)
def test_the_local_and_the_cluster_controller_change_topics_alike(changes):
    """DeleteTopics, CreatePartitions and AlterConfigs after a CreateTopics: the same answer from
    both controllers, and the image each broker then holds has the topic as the cluster's
    controller has it (its partition count and configs; gone once deleted). The fresh sample on
    9df4313's 00360 (the local controller applying only failed changes) passed the controller
    layer: no test there changed a topic through the local controller."""
    broker = core_brokers(2)[0]
    state = ControllerState(ManualClock())
    for broker_id in range(2):
        state.register(broker_id, "127.0.0.1", 9092 + broker_id)
    assert local_create(broker, "t", 1, 2) == state.create_topic("t", 1, 2, {})[0] == ErrorCode.none
    for change in changes:
        assert local_change(broker, change) == cluster_change(state, change), change
        shapes = [None if t is None else (len(t.partitions), dict(t.configs))
                  for t in (broker.metadata.topic("t"), state.metadata.topic("t"))]
        assert shapes[0] == shapes[1], (change, shapes)
