"""Which of librdkafka's integration tests (tests/0xxx-*.c) run against kafkaref, as data.

The selection follows the way Redpanda's CI runs librdkafka's suite against its broker: every
test number from 0001 to 0151, one test-runner per number, full mode (no -Q), 3 brokers with
auto-created topics of 4 partitions, minus what cannot apply to a plain-text broker without
ZooKeeper: SSL and SASL listeners, ACLs, librdkafka's mock cluster. Broker-less tests
(TEST_F_LOCAL: the client alone) are skipped by the runner itself (-L) and leave numbers whose
every variant is local out of the selection. Everything else runs, transactions included (kafkaref
does not support them: they fail, and the summary says why).
"""

from __future__ import annotations

NODE_RDKAFKA_VERSION = "3.6.1"  # the npm package carrying the source, deps/librdkafka
LIBRDKAFKA_VERSION = "2.12.0"
# TEST_KAFKA_VERSION: the broker version the tests gate features on (tests/Makefile's default).
BROKER_VERSION = "4.0.0"
FIRST, LAST = 1, 151

# Numbers between FIRST and LAST that exist in librdkafka 2.12.0's tests/ (test.c's table).
ALL_NUMBERS = frozenset(
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 25, 26, 28,
     29, 30, 31, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52,
     53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 72, 73, 74, 75, 76,
     77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 88, 89, 90, 91, 92, 93, 94, 95, 97, 98, 99, 100,
     101, 102, 103, 104, 105, 106, 107, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119,
     120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137,
     138, 139, 140, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151])

_LOCAL = "broker-less (TEST_F_LOCAL): exercises the client alone"
_MOCK = "librdkafka's mock cluster, not a real broker"
# The tests that shell out to Apache Kafka's bin/kafka-topics.sh (test_kafka_topics(): 0045's
# alter and delete, 0052, 0077) run: KAFKA_PATH holds one that runs TopicCommand from the pinned
# Apache Kafka jars (librdkafka.kafka_path).

# number -> why it is not run against kafkaref.
EXCLUDED: dict[int, str] = {
    4: _LOCAL + " (configuration)",
    6: _LOCAL + " (symbols)",
    9: _MOCK,
    25: _LOCAL + " (timers)",
    37: _LOCAL + " (destroy without brokers)",
    43: _LOCAL + " (no connection)",
    46: _LOCAL + " (topic cache)",
    58: _LOCAL + " (logging)",
    62: _LOCAL + " (stats events)",
    66: _LOCAL + " (plugins)",
    72: _LOCAL + " (headers API)",
    74: _LOCAL + " (producev API)",
    78: _LOCAL + " (C from C++)",
    79: _LOCAL + " (fork, a known issue upstream)",
    80: _LOCAL + " (admin API argument checks)",
    95: _LOCAL + " (all brokers down)",
    97: "SSL: needs an SSL listener and certificates",
    100: _LOCAL + " (thread interceptors)",
    104: _MOCK + " (fetch from follower)",
    105: _MOCK + " (transactions)",
    106: _MOCK + " (group session timeout)",
    109: "needs Apache Kafka's kafka-acls.sh (KAFKA_PATH) to deny a topic: ACLs are out of "
         "scope (the auto-creation cases before that part pass)",
    115: "ACLs and SASL: needs an authorizer and SASL users (out of scope)",
    116: _LOCAL + " (consumer close, mock cluster)",
    117: _MOCK + " (injected errors)",
    119: "ACLs and SASL: needs an authorizer and SASL users (out of scope)",
    120: _MOCK + " (asymmetric subscription)",
    121: _MOCK + " (cluster id)",
    124: "SSL: OpenSSL engine (the build has no SSL)",
    126: "SASL/OAUTHBEARER OIDC: needs a token endpoint and SASL",
    128: "SASL callback queue",
    131: _LOCAL + " (connect timeout)",
    133: "SSL: key formats",
    134: "SSL: OpenSSL provider",
    135: "SASL credentials",
    136: _LOCAL + " (resolve callback)",
    138: _MOCK + " (admin)",
    139: _MOCK + " (offset validation)",
    142: "SASL re-authentication (KIP-368)",
    143: _MOCK + " (exponential backoff)",
    144: _MOCK + " (idempotence)",
    145: _MOCK + " (pause/resume)",
    146: _MOCK + " (metadata)",
    147: _MOCK + " (KIP-848 consumer group)",
    148: _MOCK + " (offset fetch/commit errors)",
    149: _MOCK + " (same host and port)",
    150: _MOCK + " (telemetry)",
    151: _MOCK + " (purge brokers)",
}

# Numbers holding tests of librdkafka's "noautocreate" scenario (brokers with
# auto.create.topics.enable=false): run a second time, against such a cluster.
NOAUTOCREATE = frozenset({45, 107, 111})

SELECTED: tuple[int, ...] = tuple(sorted(ALL_NUMBERS - set(EXCLUDED)))


def test_id(number: int) -> str:
    """The runner's four-digit test number, as TESTS= expects it."""
    return f"{number:04d}"
