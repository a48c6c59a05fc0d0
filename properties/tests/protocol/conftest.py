"""Tests of the wire protocol (impl/protocol/): record batches, codecs against kio, fuzzing.

Shared fixtures (clock, broker, cluster) come from properties/tests/conftest.py.
"""
