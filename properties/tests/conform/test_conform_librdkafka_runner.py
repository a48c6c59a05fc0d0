"""The librdkafka suite runner's own logic: reading test-runner's output, the test list, the
summary (properties/peer_suites/). The suite itself is opt-in: tox -e librdkafka-suite."""

import pytest

from kafkaref.properties.peer_suites import librdkafka as suite
from kafkaref.properties.peer_suites import librdkafka_list as listing

# test-runner's summary as printed (colours included), from a real run.
SUMMARY = (
    "\x1b[0mTEST 20261124223448 (bare, scenario default) SUMMARY\n"
    "#==================================================================#\n"
    "|\x1b[32m <MAIN>                                   |     PASSED |   2.029s \x1b[0m|\n"
    "|\x1b[32m 0022_consume_batch                       |     PASSED |   1.187s \x1b[0m|\n"
    "|\x1b[36m 0022_consume_batch_local                 |    SKIPPED |   0.000s \x1b[0m|"
    "\x1b[36m Filtered due to negative test flags\x1b[0m\n"
    "|\x1b[31m 0045_subscribe_update                    |     FAILED |  12.500s \x1b[0m|"
    "\x1b[31m Timed out waiting for rebalance\x1b[0m\n"
    "#==================================================================#\n")

# A failing test whose runner then aborts in its exit check, before any summary.
ABORTED = (
    "\x1b[0m\x1b[31m### Test \"0019_list_groups (do_test_list_groups:162)\" failed at "
    "0019-list_groups.c:175:do_test_list_groups() at Tue Nov 24 22:34:39 2026: ###\n"
    "Saw -1 groups when there wasn't supposed to be any\n"
    "\x1b[0m\x1b[31m### Test \"<MAIN>\" failed at test.c:1798:test_wait_exit() at Tue Nov 24 "
    "22:34:40 2026: ###\n5 thread(s) still active in librdkafka\n"
    "test-runner: test.c:7488: test_fail0: Assertion `0' failed.\n")


def test_summary_rows_are_parsed_without_colours_and_main():
    rows = suite.parse_summary(SUMMARY)
    assert [(r.name, r.state) for r in rows] == [
        ("0022_consume_batch", "PASSED"), ("0022_consume_batch_local", "SKIPPED"),
        ("0045_subscribe_update", "FAILED")]
    assert rows[1].reason == "Filtered due to negative test flags"
    assert rows[2].duration_s == 12.5 and rows[2].failed


def test_a_runner_aborted_after_a_failure_still_names_the_test_and_why():
    [row] = suite.rows_for(19, ABORTED, returncode=-6, seconds=2.0)
    assert row.name == "0019_list_groups" and row.state == "FAILED"
    assert row.reason.startswith("Saw -1 groups") and "do_test_list_groups:162" in row.reason


@pytest.mark.parametrize("returncode, state", [(None, "TIMEOUT"), (139, "CRASHED")])
def test_a_runner_without_output_gets_a_failing_row(returncode, state):
    [row] = suite.rows_for(38, "no summary here\n", returncode, 600.0)
    assert (row.name, row.state, row.failed) == ("0038", state, True)


def test_counts_and_causes():
    results = [suite.NumberResult(22, suite.parse_summary(SUMMARY), 1, 3.0, "x.log"),
               suite.NumberResult(19, suite.rows_for(19, ABORTED, -6, 2.0), -6, 2.0, "y.log")]
    total = suite.counts(results)
    assert (total.passed, total.failed, total.skipped, total.ran) == (1, 2, 1, 3)
    grouped = suite.failures_by_cause(results)
    assert sum(len(rows) for rows in grouped.values()) == 2
    text = suite.summary(results)
    assert "1 passed, 2 failed, 1 skipped" in text and "failures by cause:" in text


@pytest.mark.parametrize("reason, cause", [
    ("Transactions are not supported", "transactions (not supported)"),
    ("DeleteTopics failed: UNSUPPORTED_VERSION", "admin APIs"),
    ("Saw -1 groups when there wasn't supposed to be any", "other"),
])
def test_cause_of_a_failure(reason, cause):
    assert suite.cause_of(suite.Row("0001_x", "FAILED", 1.0, reason)).startswith(cause)


def test_the_list_is_consistent():
    assert set(listing.SELECTED).isdisjoint(listing.EXCLUDED)
    assert set(listing.EXCLUDED) <= listing.ALL_NUMBERS
    assert set(listing.SELECTED) | set(listing.EXCLUDED) == set(listing.ALL_NUMBERS)
    assert all(listing.FIRST <= n <= listing.LAST for n in listing.ALL_NUMBERS)
    assert all(reason.strip() for reason in listing.EXCLUDED.values())
    # nothing that reaches a broker over plain text is excluded for convenience
    assert not any("slow" in reason or "flaky" in reason for reason in listing.EXCLUDED.values())
    assert listing.test_id(7) == "0007"


def test_test_conf_names_the_cluster_and_random_topics():
    conf = suite.test_conf("127.0.0.1:1,127.0.0.1:2", 2.0)
    assert "metadata.broker.list=127.0.0.1:1,127.0.0.1:2\n" in conf
    assert "test.topic.random=true\n" in conf and "test.timeout.multiplier=2.0\n" in conf


def test_a_number_run_in_two_scenarios_keeps_each_tests_real_verdict():
    default = suite.NumberResult(45, [suite.Row("0045_a", "PASSED", 1.0),
                                      suite.Row("0045_b_noauto", "SKIPPED", 0.0)], 0, 5.0, "d")
    noauto = suite.NumberResult(45, [suite.Row("0045_a", "SKIPPED", 0.0),
                                     suite.Row("0045_b_noauto", "FAILED", 2.0, "why")], 1, 3.0,
                                "n")
    merged = suite.merge(default, noauto)
    assert [(r.name, r.state) for r in merged.rows] == [("0045_a", "PASSED"),
                                                        ("0045_b_noauto", "FAILED")]
    assert merged.seconds == 8.0 and merged.returncode == 1
    assert listing.NOAUTOCREATE <= set(listing.SELECTED)


def test_a_warning_before_the_failure_names_the_cause():
    """0011: the assertion says little; the runner's warning just before says the broker lacks
    IncrementalAlterConfigs."""
    output = (
        "[0011_produce_batch / 3.5s] WARN: IncrementalAlterConfigsResult failed: "
        "IncrementalAlterConfigs (KIP-339) not supported by broker\n"
        "### Test \"0011_produce_batch (f:629)\" failed at 0011-produce_batch.c:718:f() at "
        "Tue Nov 24 23:05:39 2026: ###\n"
        "Test assertion failed: \"invalid_record_fail_cnt == 10\"\n"
        "| 0011_produce_batch   |     FAILED |   4.994s | f:629: Test assertion failed\n")
    [row] = suite.rows_for(11, output, 1, 5.0)
    assert row.state == "FAILED" and "IncrementalAlterConfigs" in row.context
    assert suite.cause_of(row).startswith("admin APIs")


@pytest.mark.parametrize("reason, cause", [
    ("test_kafka_topics: KAFKA_PATH and BROKERS must be set", "needs Apache Kafka's"),
    ("standard settings: average latency 21.504ms is outside range 5..5 +12ms",
     "a produce latency bound"),
    ('test_kafka_topics():5098: system("kafka-topics.sh --create --config segment.bytes=10000 '
     '--config min.cleanable.dirty.ratio=0.01") failed', "segment.bytes below 1 MiB"),
    ("test_admin_create_topic():5182: Topic rdkafkatest_0129_fetch_aborted_msgs result error: "
     "topic config segment.bytes='20000': must be at least 1048576", "segment.bytes below 1 MiB"),
    ("consume_msgs_verify_timestamps:127: rdkafkatest_0052_msg_timestamps_LogAppendTime_0.10.1.0"
     "_none: Verification of 20 received messages failed", "message.timestamp.type"),
])
def test_cause_of_tooling_and_latency_failures(reason, cause):
    assert suite.cause_of(suite.Row("0045_x", "FAILED", 1.0, reason)).startswith(cause)
