"""Topic configs at the edge of Kafka's ranges: the value at a bound is accepted, the one just past
it is INVALID_CONFIG, for every config conform's create_topics_validation sends
(chaos/conform/checks_log.py CONFIG_EDGES, checked against Apache Kafka there).

Found by mutation testing (docs/mutation.md, session 10's seeded trial): index.interval.bytes'
lower bound 0 read as -1 in topic_rules.CONFIG_BOUNDS changed no test's outcome, and no conform
check sent a value one past a bound either."""

import pytest
from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.checks_log import CONFIG_EDGES
from kafkaref.impl.core.topic_rules import check_configs


@pytest.mark.parametrize(("config", "at_bound", "past"), CONFIG_EDGES,
                         ids=[edge[0] for edge in CONFIG_EDGES])
def test_a_config_at_its_bound_passes_and_just_past_it_is_refused(config, at_bound, past):
    assert check_configs({config: at_bound})[0] == ErrorCode.none
    assert check_configs({config: past})[0] == ErrorCode.invalid_config
