"""DescribeConfigs by resource type, as Kafka 4.3.1's KafkaApis.handleDescribeConfigsRequest
sorts them: the types ConfigResource.Type knows (TOPIC 2, BROKER 4, BROKER_LOGGER 8,
CLIENT_METRICS 16, GROUP 32) are answered one by one (kafkaref has configs for topics and
brokers; the others INVALID_REQUEST alone), and any other type (UNKNOWN 0, a number Kafka has no
type for) throws out of the handler, so every resource of the request is answered
INVALID_REQUEST, the topic named beside it too.

Found by mutation testing (session 9df4313ef37b's survivor 00256: CLIENT_METRICS' 16 read 15 in
KNOWN_RESOURCE_TYPES; the core tests named types 2, 3 and 4 only)."""

from hypothesis import example, given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.properties.wire_calls import call, core_brokers, create_topic

KAFKA_TYPES = {2, 4, 8, 16, 32}  # ConfigResource.Type's ids but UNKNOWN (0)


@given(kind=st.integers(-1, 40))
@example(kind=16)
@example(kind=15)
def test_a_resource_type_kafka_does_not_know_fails_the_whole_request(kind):
    (b,) = core_brokers(1)
    create_topic(b, "t")
    body = call(b, 32, 4, {"resources": [
        {"resource_type": 2, "resource_name": "t", "configuration_keys": ["retention.ms"]},
        {"resource_type": kind, "resource_name": "x", "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    topic, other = body.results
    if kind in KAFKA_TYPES:
        assert topic.error_code == ErrorCode.none and [c.name for c in topic.configs] == [
            "retention.ms"]
        if kind not in (2, 4):  # a type kafkaref has no configs for: refused alone
            assert other.error_code == ErrorCode.invalid_request
    else:
        assert (topic.error_code, other.error_code) == (ErrorCode.invalid_request,) * 2
