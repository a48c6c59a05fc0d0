"""Tests of the reference model (model/): step function, refinement onto spec/, random walks, seeded
bugs.

Shared fixtures (clock, broker, cluster) come from properties/tests/conftest.py.
"""
