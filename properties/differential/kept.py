"""The differences between Apache Kafka and kafkaref the differential machine does not report,
each one a row of docs/divergences.md (same id): kept on purpose, or known and still to fix.

Each is kept out of the comparison in exactly one way, named here and used in one place:
- NOT_GENERATED: the machine does not send the request that shows it (strategies.py asks
  `generated(...)`);
- NOT_COMPARED: a field of an answer that is left out (normalise.py applies them).

Fixing a "to fix" row means removing it here and from the table: the machine then covers it.
"""

from __future__ import annotations

TABLE = "docs/divergences.md"

# id -> what the machine does not send while the row stands
NOT_GENERATED = {
    "alter-duplicate-resources": "an AlterConfigs naming one resource twice (Kafka never "
                                 "answers it)",
    "unknown-codec": "batches with compression codec 5, 6 or 7",
    "broker-configs": "DescribeConfigs of this broker or the cluster default without naming "
                      "keys kafkaref has; Alter/IncrementalAlterConfigs of brokers",
    "broker-logger-configs": "DescribeConfigs of BROKER_LOGGER resources",
    "unknown-config-operation": "IncrementalAlterConfigs with an operation other than 0-3",
    "config-documentation": "DescribeConfigs asking for documentation",
    "default-replication-factor": "on several nodes: topics left to the broker's default "
                                  "replication factor (CreateTopics rf -1, auto-creation)",
    "describe-topic-partitions-empty-name": "DescribeTopicPartitions naming the empty topic "
                                            "name",
    "fetch-unknown-topic-id": "Fetch v13+ naming a partition of a topic no one has (the "
                              "zero topic id) beside another it refuses",
    "fetch-partition-twice": "a Fetch naming one partition twice (strategies.fetch draws "
                             "distinct partitions)",
    "fetch-sessions": "a full Fetch (v7+) asking for a session (epoch 0): Kafka creates one, "
                      "kafkaref declines (session id 0)",
}


def generated(row: str) -> bool:
    """False while `row` of the table keeps its requests out of the walk."""
    return row not in NOT_GENERATED


# Config entries (DescribeConfigs) whose value, source and synonyms are not compared: what the
# peer's launcher configured differs from what kafkaref is started with
# ("deployment-config-sources"; on three nodes Kafka's cluster runs min.insync.replicas 2).
DEPLOYMENT_CONFIGS = frozenset({"min.insync.replicas", "unclean.leader.election.enable"})
# Config entries not compared at all while their row stands.
UNCOMPARED_CONFIGS: dict[str, str] = {}
# Fields left out of every answer while their row stands (normalise.DROPPED is the fields that
# differ by nature; these are differences).
UNCOMPARED_FIELDS: dict[str, str] = {}
# A fetch's records may end inside a batch on Kafka (its byte limit cuts the segment
# anywhere); kafkaref sends whole batches only: the partial tail is not compared
# ("partial-trailing-batch").
PARTIAL_BATCHES_COMPARED = False
