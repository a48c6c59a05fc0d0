"""Other projects' own test suites run against a kafkaref cluster (librdkafka's, so far)."""
