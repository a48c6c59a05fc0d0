"""Replica fetchers: followers copy their leaders' logs over the Kafka protocol (Fetch v12)."""
