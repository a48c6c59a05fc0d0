"""Tests of the threaded server (impl/server/): network threads, queues, framing, real clients on
one broker.

Shared fixtures (clock, broker, cluster) come from properties/tests/conftest.py.
"""
