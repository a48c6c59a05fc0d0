"""Kafka wire formats: record batch v2 (records.py), its varints (varint.py) and compression codecs
(compression.py). Request framing lives in wire*.py / api*.py (added by the network layer)."""
