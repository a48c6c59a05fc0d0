"""Tests of the conformance suite: other Kafka-protocol brokers judged against kafkaref.

Shared fixtures (clock, broker, cluster) come from properties/tests/conftest.py.
"""
