"""Single-broker mode keeps committed offsets in __consumer_offsets on disk: they survive a
restart of the broker on the same directory; a restarted static member (group.instance.id)
gets its assignment back from a real client."""

import time

import confluent_kafka as ck

from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.properties.servers import BrokerSetup, running_broker
from kafkaref.properties.waiting import wait_until

SETUP = BrokerSetup(storage="disk", broker=BrokerConfig(default_partitions=2,
                                                        offsets_topic_num_partitions=3))


def test_commits_survive_a_restart_of_the_single_broker(tmp_path):
    wanted = {0: 5, 1: 7}
    with running_broker(SETUP, str(tmp_path)) as server:
        producer = ck.Producer({"bootstrap.servers": server.address})
        producer.produce("kept", value=b"x", partition=0)
        producer.produce("kept", value=b"y", partition=1)
        assert producer.flush(10) == 0
        consumer = ck.Consumer({"bootstrap.servers": server.address, "group.id": "restart"})
        try:
            consumer.commit(offsets=[ck.TopicPartition("kept", p, o) for p, o in wanted.items()],
                            asynchronous=False)
        finally:
            consumer.close()
    with running_broker(SETUP, str(tmp_path)) as server:
        consumer = ck.Consumer({"bootstrap.servers": server.address, "group.id": "restart"})
        try:
            found = consumer.committed([ck.TopicPartition("kept", p) for p in wanted],
                                       timeout=30)
        finally:
            consumer.close()
    assert {tp.partition: tp.offset for tp in found} == wanted


def static_consumer(address):
    return ck.Consumer({"bootstrap.servers": address, "group.id": "static",
                        "group.instance.id": "instance-a", "session.timeout.ms": 30_000,
                        "auto.offset.reset": "earliest"})


def test_a_restarted_static_member_gets_its_assignment_back(tmp_path):
    with running_broker(SETUP, str(tmp_path)) as server:
        producer = ck.Producer({"bootstrap.servers": server.address})
        producer.produce("st", value=b"x")
        assert producer.flush(10) == 0
        first = static_consumer(server.address)
        first.subscribe(["st"])
        wait_until(lambda: first.assignment(), step=lambda: first.poll(0.1), timeout_s=60,
                   what="the first instance's assignment")
        group = server.broker.groups.groups["static"]
        old_id, generation = group.static_members["instance-a"], group.generation_id
        first.close()  # a static member leaves no LeaveGroup behind: it keeps its place
        second = static_consumer(server.address)
        try:
            second.subscribe(["st"])
            started = time.monotonic()
            wait_until(lambda: second.assignment(), step=lambda: second.poll(0.1),
                       timeout_s=60, what="the restarted instance's assignment")
            print(f"restarted static member assigned after {time.monotonic() - started:.2f} s")
            assert {tp.partition for tp in second.assignment()} == {0, 1}
            assert group.static_members["instance-a"] != old_id  # the old id is fenced
            assert group.generation_id == generation  # no rebalance
        finally:
            second.close()


def test_kafka_python_admin_lists_and_describes_groups(tmp_path):
    import kafka
    import kafka.admin

    with running_broker(SETUP, str(tmp_path)) as server:
        producer = kafka.KafkaProducer(bootstrap_servers=server.address)
        producer.send("kp", b"x").get(10)
        producer.close()
        consumer = kafka.KafkaConsumer("kp", bootstrap_servers=server.address, group_id="kpg",
                                       auto_offset_reset="earliest")
        admin = kafka.admin.KafkaAdminClient(bootstrap_servers=server.address)
        try:
            wait_until(lambda: consumer.assignment(), step=lambda: consumer.poll(100),
                       timeout_s=60, what="an assignment")
            listed = admin.list_groups()  # ListGroups v5 adds the state and the type
            assert [(g["group_id"], g["protocol_type"], g.get("group_type", "classic"))
                    for g in listed] == [("kpg", "consumer", "classic")]
            group = admin.describe_groups(["kpg"])["kpg"]
            assert (group["group_state"], group["protocol_type"]) == ("Stable", "consumer")
            [member] = group["members"]  # metadata and assignment decoded by the client
            assert member["member_metadata"]["topics"] == ["kp"]
            assert member["member_assignment"]["assigned_partitions"] == [
                {"topic": "kp", "partitions": [0, 1]}]
        finally:
            admin.close()
            consumer.close()
