"""Deliberate faults on a threaded broker: what guards M12 (which this design cannot have), and
mutants reaching a broker process only through --mutant ... --allow-deliberate-bugs."""

import os
import subprocess
import sys
import threading

from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.server.config import ServerConfig
from kafkaref.properties.servers import BrokerSetup, running_broker
from kafkaref.properties.waiting import wait_until

KAFKAREF = os.path.join(os.path.dirname(sys.executable), "kafkaref")


def _produce(connection, topic, values, acks=1):
    data = build_batch([(None, v, (), None) for v in values])
    answer = connection.send(0, 8, {"transactional_id": None, "acks": acks, "timeout": 5000,
                                    "topic_data": [{"name": topic, "partition_data": [
                                        {"index": 0, "records": data}]}]})
    return answer.responses[0].partition_responses[0]


def created(connection, topic):
    """Auto-create the topic and wait until it exists (the creating Metadata answers
    UNKNOWN_TOPIC_OR_PARTITION, as Kafka's does)."""
    wait_until(lambda: connection.send(3, 4, {"topics": [{"name": topic}],
                                              "allow_auto_topic_creation": True}
                                       ).topics[0].error_code == ErrorCode.none,
               what=f"topic {topic}")


def test_concurrent_produces_get_unique_dense_offsets():
    """M12's property (offsets assigned under the partition's lock): 4 connections race 4 I/O
    threads on one partition; every batch gets its own offsets and together they leave no gap."""
    threads_n, batches_n, size = 4, 40, 3
    config = ServerConfig(num_network_threads=2, num_io_threads=4)
    with running_broker(BrokerSetup(server=config, broker=BrokerConfig(auto_create_topics=True))) as server:
        with KafkaConnection("127.0.0.1", server.port) as connection:
            created(connection, "race")
        bases, errors = [], []

        def run(n):
            with KafkaConnection("127.0.0.1", server.port) as connection:
                for i in range(batches_n):
                    answer = _produce(connection, "race", [b"%d-%d-%d" % (n, i, k)
                                                           for k in range(size)])
                    (bases if answer.error_code == ErrorCode.none else errors).append(
                        answer.base_offset if answer.error_code == 0 else answer.error_code)

        workers = [threading.Thread(target=run, args=(n,)) for n in range(threads_n)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
    assert errors == []
    assert sorted(bases) == list(range(0, threads_n * batches_n * size, size))


def test_broker_process_refuses_mutants_without_acknowledgement(tmp_path):
    result = subprocess.run([KAFKAREF, "broker", "--data-dir", str(tmp_path), "--mutant", "M4"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--allow-deliberate-bugs" in result.stderr and "deliberate bugs" in result.stderr


def test_broker_process_runs_the_acknowledged_mutant(tmp_path):
    """--mutant M11 --allow-deliberate-bugs reaches the core of a broker process: a fetch for
    at least one byte on an empty partition, allowed to wait 60 s, is answered at once."""
    process = subprocess.Popen(
        [KAFKAREF, "broker", "--data-dir", str(tmp_path), "--port", "0", "--mutant", "M11",
         "--allow-deliberate-bugs"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("listening on "), process.stderr.read()
        host, _, port = line.split()[-1].rpartition(":")
        with KafkaConnection(host, int(port), timeout_s=30) as connection:
            created(connection, "m11")
            answer = connection.send(1, 4, {
                "replica_id": -1, "max_wait": 60_000, "min_bytes": 1,
                "max_bytes": 1 << 20, "isolation_level": 0, "topics": [{
                    "topic": "m11", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                    "partition_max_bytes": 1 << 20}]}]})
        assert answer.responses[0].partitions[0].error_code == ErrorCode.none
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert "deliberate bugs switched on: M11" in stderr
