"""A created topic is answered only once every other live broker has applied it.

The creating broker polls await_epoch after a run of creations (one wait for a CreateTopics of
100 topics: librdkafka's 0045 creates that many at once); a poll is also its heartbeat.

Found by librdkafka's 0011_produce_batch: the producer's first batch reached a leader that had
not yet heard of the auto-created topic (UNKNOWN_TOPIC_OR_PARTITION), was retried behind later
batches, and delivery came out of order. Two fake brokers speak the control channel directly.
"""

import socket

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.channel import recv_message, send_message
from kafkaref.impl.controller.server import ControllerServer


def _connect(address: str) -> socket.socket:
    host, _, port = address.rpartition(":")
    return socket.create_connection((host, int(port)), timeout=10)


def _call(sock, message: dict) -> dict:
    send_message(sock, message)
    return recv_message(sock)


@pytest.fixture
def controller(tmp_path):
    server = ControllerServer(session_timeout_ms=60_000).start()
    yield server
    server.shutdown()


def test_await_epoch_answers_applied_once_the_other_broker_reported_it(controller):
    creator, other = _connect(controller.address), _connect(controller.address)
    with creator, other:
        for broker_id, sock in ((0, creator), (1, other)):
            _call(sock, {"type": "register", "broker_id": broker_id, "host": "127.0.0.1",
                         "port": 9000 + broker_id, "metadata_epoch": -1})
        seen = _call(other, {"type": "heartbeat", "broker_id": 1, "metadata_epoch": -1})
        epoch_before = seen["metadata"]["epoch"]
        created = _call(creator, {"type": "create_topic", "broker_id": 0, "name": "t",
                                  "partitions": 4, "replication_factor": 2, "configs": {},
                                  "metadata_epoch": epoch_before})
        assert created["error"] == 0
        epoch = created["metadata"]["epoch"]

        def applied() -> bool:
            return _call(creator, {"type": "await_epoch", "broker_id": 0, "epoch": epoch,
                                   "metadata_epoch": epoch})["applied"]

        assert not applied()  # broker 1 has not applied the topic yet
        # broker 1's heartbeat brings it the new image; its next one reports it applied
        image = _call(other, {"type": "heartbeat", "broker_id": 1,
                              "metadata_epoch": epoch_before})["metadata"]
        assert image["epoch"] == epoch
        assert not applied()
        _call(other, {"type": "heartbeat", "broker_id": 1, "metadata_epoch": epoch})
        assert applied()


def test_await_epoch_counts_as_a_heartbeat(controller):
    """A broker polling for propagation for longer than the session timeout stays alive."""
    with _connect(controller.address) as sock:
        _call(sock, {"type": "register", "broker_id": 3, "host": "127.0.0.1", "port": 9003,
                     "metadata_epoch": -1})
        before = controller.state.last_heartbeat_ms[3]
        answer = _call(sock, {"type": "await_epoch", "broker_id": 3, "epoch": 0,
                              "metadata_epoch": -1})
        assert answer["applied"] and not answer["reregister"]
        assert controller.state.last_heartbeat_ms[3] >= before

def test_a_batch_of_messages_is_answered_in_order_with_one_image(controller):
    """What a broker queued while it waited goes as one batch: one answer per message, in
    order, and one metadata image for all (not one growing image per topic)."""
    with _connect(controller.address) as sock:
        _call(sock, {"type": "register", "broker_id": 0, "host": "127.0.0.1", "port": 9000,
                     "metadata_epoch": -1})
        creations = [{"type": "create_topic", "broker_id": 0, "name": f"t{i}", "partitions": 2,
                      "replication_factor": 1, "configs": {}} for i in range(50)]
        duplicate = dict(creations[0])  # the same name again: refused, in its place
        answer = _call(sock, {"type": "batch", "messages": [*creations, duplicate,
                                                            {"type": "no_such_message"}],
                              "metadata_epoch": -1})
        errors = [a["error"] for a in answer["answers"]]
        assert errors[:50] == [0] * 50 and errors[50] > 0 and errors[51] == -1
        assert {f"t{i}" for i in range(50)} <= {t["name"] for t in answer["metadata"]["topics"]}
        for bad in ("not a list", [1, 2], [{"type": "heartbeat"}] * 1001):
            refused = _call(sock, {"type": "batch", "messages": bad, "metadata_epoch": -1})
            assert refused["error"] == -1 and "bad batch" in refused["message"]


def test_auto_created_topics_honour_num_partitions_on_every_broker(tmp_path):
    """librdkafka's suite expects num.partitions 4. The creating Metadata answers
    UNKNOWN_TOPIC_OR_PARTITION, as Kafka's does; then every broker knows the topic."""
    from kafkaref.impl.client.cluster_view import ClusterView
    from kafkaref.impl.server.local_cluster import LocalCluster
    from kafkaref.properties.waiting import wait_until

    with LocalCluster(2, str(tmp_path), num_partitions=4) as cluster:
        first, second = cluster.bootstrap.split(",")
        [topic] = ClusterView(first).refresh(["auto"], auto_create=True).topics
        assert topic.error_code == ErrorCode.unknown_topic_or_partition
        for address in (first, second):
            wait_until(lambda a=address: ClusterView(a).refresh(["auto"]).topics[0].error_code
                       == ErrorCode.none, what=f"the topic on {address}")
            [seen] = ClusterView(address).refresh(["auto"]).topics
            assert len(seen.partitions) == 4


@pytest.mark.parametrize("flag, properties, expected", [
    (None, {}, 1), (None, {"num.partitions": "4"}, 4), (3, {"num.partitions": "4"}, 3)])
def test_num_partitions_from_flag_then_properties_then_kafkas_default(flag, properties, expected):
    from kafkaref.commands.broker import num_partitions_from

    assert num_partitions_from(properties, flag) == expected


def test_a_bad_num_partitions_is_a_usage_error():
    import click

    from kafkaref.commands.broker import num_partitions_from

    with pytest.raises(click.BadParameter):
        num_partitions_from({"num.partitions": "four"}, None)


def test_a_cluster_without_auto_creation_leaves_unknown_topics_unknown(tmp_path):
    """librdkafka's noautocreate scenario (0045, 0107, 0111) needs auto.create.topics.enable off."""
    from kafkaref.impl.client.cluster_view import ClusterView
    from kafkaref.impl.server.local_cluster import LocalCluster, broker_command

    assert "--no-auto-create-topics" in broker_command(0, 0, "/d", "127.0.0.1:1",
                                                       auto_create_topics=False)
    with LocalCluster(1, str(tmp_path), auto_create_topics=False) as cluster:
        [topic] = ClusterView(cluster.bootstrap).refresh(["nope"], auto_create=True).topics
        assert topic.error_code == ErrorCode.unknown_topic_or_partition
