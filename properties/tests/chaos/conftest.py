"""Tests of chaos (chaos/): workloads, nemeses, recorded histories.

Shared fixtures (clock, broker, cluster) come from properties/tests/conftest.py.
"""
