"""Tests of clusters (impl/controller/, impl/replication/): controller, broker processes, real
clients with leaders killed.

Shared fixtures (clock, broker, cluster) come from properties/tests/conftest.py.
"""
