"""Tests of the broker core (impl/core/): replica manager, purgatory, timing wheel, groups, APIs.

Shared fixtures (clock, broker, cluster) come from properties/tests/conftest.py.
"""
