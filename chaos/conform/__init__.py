"""kafkaref conform: a conformance suite for any Kafka-protocol broker.

catalogue.py  what a check is and returns; the registry
probe.py      one check's connections to the broker under test (our own protocol code)
checks_*.py   the checks, one module per group; fuzz.py the protocol fuzzer
runner.py     runs a selection with a deadline per check
report.py     terminal table, JUnit XML, HTML report card (several brokers side by side)
(the command, `kafkaref conform`: commands/conform.py)
"""
