"""kafkaref's own Kafka client: a blocking connection, a producer and a consumer."""
