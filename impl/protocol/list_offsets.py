"""ListOffsets' special values, as Kafka's ListOffsetsRequest names them: impl's one statement,
imported by the broker's core, the replica fetcher, kafkaref's consumer and conform's probe.
(The model states its own, model/events.py: it never imports impl/.)"""

# Special timestamps: latest, earliest, the record with the greatest timestamp (KIP-734, v7),
# the earliest local offset (KIP-405, v8), the latest tiered one (KIP-1005, v9), the earliest
# pending upload (KIP-1023, v11)
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = (
    -1, -2, -3, -4, -5, -6)
# Replica ids: a consumer's (its isolation level bounds the answer by the hw) and a debugging
# tool's (answered by a follower too); any other is a replica's (the log end)
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2
