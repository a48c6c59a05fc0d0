"""Tests of kafkaref's own client (impl/client/) and its CLI commands.

Shared fixtures (clock, broker, cluster) come from properties/tests/conftest.py.
"""
