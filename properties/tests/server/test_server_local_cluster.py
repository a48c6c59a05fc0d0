"""LocalCluster waits for its brokers to register with the controller: it returns once they
have, and says which did not when its time runs out. Found by mutation testing
(docs/mutation.md): the wait's loop negated (never waiting at all) passed the server layer, whose
tests start brokers one by one; only the cluster layer started a LocalCluster."""

import time

import pytest

from kafkaref.properties.servers import ClusterSetup, running_cluster


def test_a_local_cluster_waits_for_its_brokers_and_names_the_missing(tmp_path):
    with running_cluster(ClusterSetup(brokers=1), str(tmp_path)) as cluster:
        cluster.wait_registered({0}, timeout_s=10)  # registered: returns at once
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"brokers \[7\] did not register"):
            cluster.wait_registered({7}, timeout_s=0.3)
        assert time.monotonic() - started >= 0.3  # it waited its time out


def test_a_process_started_by_the_launcher_dies_with_its_launcher():
    """Brokers must not outlive whatever started them, even a launcher killed by SIGKILL
    (PR_SET_PDEATHSIG: the kernel sends them SIGTERM)."""
    import contextlib
    import os
    import signal
    import subprocess
    import sys

    from kafkaref.properties.waiting import wait_until

    child = None
    launcher = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\n"
        "from kafkaref.impl.server.local_cluster import popen_dying_with_us\n"
        "child = popen_dying_with_us(['sleep', '60'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        child = int(launcher.stdout.readline())
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(10)

        def gone() -> bool:
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                return True
            # a zombie until init reaps it is gone too
            with open(f"/proc/{child}/stat") as stat:
                return stat.read().split(") ")[1].startswith("Z")
        wait_until(gone, timeout_s=10, what="the launcher's child to die with it")
    finally:
        if launcher.poll() is None:
            launcher.kill()
        if child is not None:  # left behind (the test failed): stop it, it is ours
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def test_a_broker_command_carries_each_setting_given_and_no_other():
    """What `kafkaref cluster` and the tests hand a broker process: each option given, with its
    value, and none left unset (the broker then keeps Kafka's default). Found by mutation
    testing (session 2225a17's 00241: the initial task delay's `is not None` negated, which
    passed `None` for an unset delay and dropped a set one)."""
    from kafkaref.impl.server.local_cluster import broker_command

    plain = broker_command(0, 9092, "/d", "127.0.0.1:9093")
    assert not [arg for arg in plain[1:] if arg.startswith("--") and arg not in (
        "--broker-id", "--port", "--data-dir", "--controller")]
    assert "None" not in plain
    given = broker_command(0, 9092, "/d", "127.0.0.1:9093", offsets_topic_partitions=5,
                           num_partitions=2, auto_create_topics=False,
                           initial_rebalance_delay_ms=0, log_initial_task_delay_ms=7,
                           log_retention_check_interval_ms=9)
    pairs = dict(zip(given, given[1:], strict=False))
    assert (pairs["--offsets-topic-partitions"], pairs["--num-partitions"]) == ("5", "2")
    assert pairs["--group-initial-rebalance-delay-ms"] == "0"
    assert (pairs["--log-initial-task-delay-ms"], pairs["--log-retention-check-interval-ms"]) == (
        "7", "9")
    assert "--no-auto-create-topics" in given
