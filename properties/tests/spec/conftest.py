"""Tests of the executable specification (spec/): explorer, invariants, variants, contracts, CLI.

Shared fixtures (clock, broker, cluster) come from properties/tests/conftest.py.
"""
