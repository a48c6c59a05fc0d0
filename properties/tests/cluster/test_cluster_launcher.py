"""Broker processes outlive the thread that (re)started them: PR_SET_PDEATHSIG follows the
forking *thread*, so every broker is forked by local_cluster's one launcher thread."""

import subprocess
import sys
import threading

from kafkaref.impl.server.local_cluster import popen_dying_with_us


def test_a_child_started_from_a_short_lived_thread_survives_that_thread():
    started = []
    thread = threading.Thread(target=lambda: started.append(popen_dying_with_us(
        [sys.executable, "-c", "import time; time.sleep(60)"])))
    thread.start()
    thread.join()
    child = started[0]
    try:
        # Had the short-lived thread forked it, SIGTERM would arrive as that thread exits.
        try:
            child.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
        assert child.poll() is None, f"child ended with {child.returncode}"
    finally:
        child.kill()
        child.wait(5)


def test_a_local_clusters_brokers_keep_their_port_and_create_topics_as_kafkas_do(tmp_path):
    """Defaults a cluster of `kafkaref cluster` / the kafkaref peer relies on: a broker killed
    and started again listens on the port it had (clients keep their bootstrap; the launcher
    learns each port from the broker's registration), and a Metadata asking for it creates a
    topic (Kafka's auto.create.topics.enable, true by default)."""
    from kafkaref.impl.client.connection import KafkaConnection
    from kafkaref.impl.server.local_cluster import LocalCluster
    from kafkaref.properties.waiting import wait_until

    def created(port: int) -> bool:
        try:
            with KafkaConnection("127.0.0.1", port, timeout_s=5) as conn:
                topic = conn.send(3, 8, {"topics": [{"name": "auto"}],
                                         "allow_auto_topic_creation": True,
                                         "include_cluster_authorized_operations": False,
                                         "include_topic_authorized_operations": False}).topics[0]
        except OSError:
            return False
        return topic.error_code == 0 and len(topic.partitions) > 0

    with LocalCluster(1, str(tmp_path)) as cluster:
        port = cluster.ports[0]
        wait_until(lambda: created(port), what="the topic auto-created")
        cluster.kill(0)
        cluster.start_broker(0)
        wait_until(lambda: created(port), what=f"the restarted broker on port {port}")
        assert cluster.ports[0] == port


def test_a_started_local_cluster_is_listed_whole_by_every_broker(tmp_path):
    """Registered with the controller is not yet ready for clients: a broker learns the others
    from its next metadata update. Found by the CI: conform counted one broker on a 3-broker
    cluster it asked right after start() and sized its topics so (replication factor 1, a
    mutant losing acknowledged writes passed). start() returns once every broker lists all."""
    from kafkaref.impl.client.cluster_view import brokers_seen
    from kafkaref.impl.server.local_cluster import LocalCluster

    with LocalCluster(3, str(tmp_path)) as cluster:
        assert [brokers_seen("127.0.0.1", port) for port in cluster.ports.values()] == [3, 3, 3]
