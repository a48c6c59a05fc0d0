"""`kafkaref topics`, `produce` and `consume` against a running single broker."""

import os
import subprocess
import sys

KAFKAREF = os.path.join(os.path.dirname(sys.executable), "kafkaref")


def run(*args, stdin=""):
    return subprocess.run([KAFKAREF, *args], input=stdin, capture_output=True, text=True,
                          timeout=60)


def test_topics_produce_consume_round_trip(broker):
    boot = ["--bootstrap-server", broker.address]
    result = run("topics", "create", *boot, "--topic", "lines", "--partitions", "2",
                 "--config", "min.insync.replicas=1")
    assert result.returncode == 0, result.stderr
    again = run("topics", "create", *boot, "--topic", "lines")
    assert again.returncode == 2 and "topic_already_exists" in again.stderr
    assert run("topics", "list", *boot).stdout.split() == ["lines"]
    described = run("topics", "describe", *boot, "--topic", "lines").stdout
    assert "Partition: 1" in described and "Leader: 0" in described
    lines = "".join(f"k{i % 3}:value {i}\n" for i in range(20))
    result = run("produce", *boot, "--topic", "lines", "--key-separator", ":", stdin=lines)
    assert result.returncode == 0, result.stderr
    result = run("consume", *boot, "--topic", "lines", "--from-beginning",
                 "--max-messages", "20", "--timeout-ms", "5000", "--print-key")
    assert result.returncode == 0, result.stderr
    got = sorted(result.stdout.splitlines())
    assert got == sorted(f"k{i % 3}\tvalue {i}" for i in range(20))


def test_bad_cli_input_exits_2_with_a_message(broker):
    for args in (["topics", "create", "--bootstrap-server", "nonsense", "--topic", "x"],
                 ["topics", "create", "--bootstrap-server", broker.address, "--topic", "x",
                  "--config", "novalue"],
                 ["consume", "--bootstrap-server", broker.address, "--topic", "x",
                  "--partition", "-1"],
                 ["produce", "--bootstrap-server", broker.address, "--topic", "x",
                  "--acks", "1", "--idempotence"]):
        result = run(*args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr


def test_topics_delete_add_partitions_and_configs(broker):
    boot = ["--bootstrap-server", broker.address]
    assert run("topics", "create", *boot, "--topic", "adm").returncode == 0
    result = run("topics", "add-partitions", *boot, "--topic", "adm", "--partitions", "3")
    assert result.returncode == 0, result.stderr
    assert "PartitionCount: 3" in run("topics", "describe", *boot, "--topic", "adm").stdout
    shrink = run("topics", "add-partitions", *boot, "--topic", "adm", "--partitions", "2")
    assert shrink.returncode == 2 and "invalid_partitions" in shrink.stderr
    result = run("topics", "configs", *boot, "--topic", "adm", "--set", "retention.ms=1000")
    assert result.returncode == 0, result.stderr
    shown = run("topics", "configs", *boot, "--topic", "adm").stdout
    assert "retention.ms=1000\t(override)" in shown and "segment.ms=604800000\t(default)" in shown
    bad = run("topics", "configs", *boot, "--topic", "adm", "--set", "bogus=1")
    assert bad.returncode == 2 and "invalid_config" in bad.stderr
    assert run("topics", "configs", *boot, "--topic", "adm", "--delete",
               "retention.ms").returncode == 0
    assert "retention.ms=604800000\t(default)" in run("topics", "configs", *boot,
                                                        "--topic", "adm").stdout
    assert run("topics", "delete", *boot, "--topic", "adm").returncode == 0
    gone = run("topics", "delete", *boot, "--topic", "adm")
    assert gone.returncode == 2 and "unknown_topic_or_partition" in gone.stderr
    assert run("topics", "list", *boot).stdout.split() == []


def test_consume_from_an_offset_outside_the_log_is_exit_2_naming_the_range(broker):
    """It used to start at 0 silently (the consumer's offset reset)."""
    boot = ["--bootstrap-server", broker.address]
    assert run("topics", "create", *boot, "--topic", "few").returncode == 0
    assert run("produce", *boot, "--topic", "few", stdin="a\nb\nc\n").returncode == 0
    result = run("consume", *boot, "--topic", "few", "--offset", "999", "--timeout-ms", "500")
    assert result.returncode == 2, result.stderr
    assert result.stderr == ("error: --offset 999 is outside partition 0 of few: its offsets "
                             "run from 0 to 3 (the end: where the next record goes)\n")
    assert result.stdout == ""
    at_end = run("consume", *boot, "--topic", "few", "--offset", "3", "--timeout-ms", "300")
    assert at_end.returncode == 0, at_end.stderr  # the end itself: waits for new records


def test_an_illegal_topic_name_is_refused_before_any_request(broker):
    """Asked for by name, a broker answers "unknown topic" after the client's retries (10.7 s):
    the name is what is wrong, and it is said at once, even with no broker to ask."""
    for command in (["produce"], ["consume"], ["topics", "create"], ["topics", "delete"]):
        result = run(*command, "--bootstrap-server", "127.0.0.1:9", "--topic", "bad topic!")
        assert result.returncode == 2, (command, result.stderr)
        assert ("'bad topic!' is not a legal Kafka topic name: 1 to 249 of the characters "
                "a-z A-Z 0-9 . _ - (and neither '.' nor '..')") in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_deleting_an_unknown_topic_says_what_and_why(broker):
    result = run("topics", "delete", "--bootstrap-server", broker.address, "--topic", "nosuch")
    assert result.returncode == 2
    assert result.stderr == ("error: delete topic nosuch: unknown_topic_or_partition "
                             "(no such topic)\n")
