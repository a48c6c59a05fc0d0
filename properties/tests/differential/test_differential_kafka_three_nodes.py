"""kafkaref against Apache Kafka 4.3.1 on three nodes each (3 KRaft voters, RF 3, min ISR 2
against a 3-broker LocalCluster): the answers where replication shows -- replica and ISR
counts, leader epochs, acks=all, high watermarks (opt-in: tox -e differential)."""

import os

import pytest

from kafkaref.properties.differential import run
from kafkaref.properties.servers import ClusterSetup, PeerSetup

pytestmark = [
    pytest.mark.differential,
    pytest.mark.parametrize("peer_setup", [PeerSetup(
        "apache-kafka", 3, overrides=tuple(run.NO_RETENTION_TASK.items()))], scope="module"),
    pytest.mark.parametrize("cluster_setup", [ClusterSetup(brokers=3, session_timeout_ms=9_000)],
                            scope="module"),
]


def test_walk_against_three_apache_kafka_nodes(pair):
    run.recorded_walk(pair, "three-node-walk", 100, 40)


def test_a_group_a_join_created_is_described_once_its_record_is_committed(pair):
    """Kafka answers MEMBER_ID_REQUIRED before the new group's record reaches the followers
    and describes groups at the committed offset: the walk waits after each join
    (steps.settle_group); without that wait this transcript reads Dead where it reads Empty."""
    path = os.path.join(os.path.dirname(run.__file__), "transcripts",
                        "kafka-4.3.1-three-node-groups.txt")
    result = run.replay(path, pair)
    assert result.diverged_at is None, result.entries[result.diverged_at].output()
