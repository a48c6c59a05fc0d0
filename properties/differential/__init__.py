"""The differential machine: the same generated sequence of requests sent to Apache Kafka and to
kafkaref, the answers compared field by field after one small normalisation (issue 20).

    endpoints.py   a broker cluster under test: connections, routing, bounded waits,
                   CouldNotCompare
    steps.py       the alphabet: a Step (one request, in symbols) and how each kind is built
                   for a broker, sent, and what its answer teaches (producer ids, members)
    frames.py      requests built byte by byte: ApiVersions at any version, malformed frames
    normalise.py   what may differ by nature (ids, node ids, ports, throttle times, wall-clock
                   times, message texts), written down once
    kept.py        the differences docs/divergences.md keeps, and how each is kept out
    strategies.py  Hypothesis strategies for the steps
    machine.py     the RuleBasedStateMachine, bound to its brokers by differential_machine()
    transcript.py  replayable transcripts of a run (etcd's datadriven layout)
    run.py, cli.py walks and replays from tests and from the command line:
                   python -m kafkaref.properties.differential walk | survey | replay FILE

docs/divergences.md says what was found and what is kept; the tests are in
properties/tests/differential/.
"""
