"""Tests of storage (impl/storage/): segments, indexes, the log, recovery, corruption, epoch cache.

Shared fixtures (clock, broker, cluster) come from properties/tests/conftest.py.
"""
