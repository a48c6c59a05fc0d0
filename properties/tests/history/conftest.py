"""Tests of histories and their checks (history/format.py, spark_checks/): format, anomalies, Spark vs
twin, synth.

Shared fixtures (clock, broker, cluster) come from properties/tests/conftest.py.
"""
