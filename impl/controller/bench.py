"""`kafkaref bench liveness`: do brokers keep their controller session on a starved machine?

Three phases on a 3-broker LocalCluster (Kafka's 9 s session timeout): idle (the baseline),
a producer at full speed (acks=all, RF 3), and the same producer while busy processes starve the
CPU (HOGS of them, several times the cores). For each phase, the longest silence the controller
saw from any broker (the gap between two of its messages; heartbeats go every
HEARTBEAT_INTERVAL_MS), against the old 1.5 s session timeout and the current one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from kafkaref.impl.controller.config import DEFAULT_SESSION_TIMEOUT_MS, HEARTBEAT_INTERVAL_MS

PHASE_S = 8.0
HOGS = 10  # busy processes during the starved phase (load ~10 on a 2-core machine)
OLD_SESSION_TIMEOUT_MS = 1500


# The producer runs in a process of its own: in this one its Python loop would take the GIL
# from the controller's threads and the silences measured would be the bench's own.
_PRODUCER = """
import sys, time
from confluent_kafka import Producer
producer = Producer({"bootstrap.servers": sys.argv[1], "acks": "all", "linger.ms": 5})
acked = [0]
def delivered(error, message):
    acked[0] += error is None
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    try:
        producer.produce(sys.argv[2], b"x" * 100, on_delivery=delivered)
    except BufferError:
        producer.poll(0.05)
    producer.poll(0)
producer.flush(10)
print(acked[0])
"""


def _producer(bootstrap: str, topic: str, seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _PRODUCER, bootstrap, topic, str(seconds)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _hogs(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def bench_liveness() -> dict:
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkaref.impl.server.local_cluster import LocalCluster

    rows = []
    with tempfile.TemporaryDirectory() as directory, LocalCluster(3, directory) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for future in admin.create_topics([NewTopic("liveness", 4, 3)]).values():
            future.result(30)
        for phase, producing, hogs in (("idle", False, 0), ("producing", True, 0),
                                       (f"producing + {HOGS} busy processes", True, HOGS)):
            hogged = _hogs(hogs)
            producer = _producer(cluster.bootstrap, "liveness", PHASE_S) if producing else None
            try:
                cluster.controller.reset_silences()
                time.sleep(PHASE_S)
                longest = max(cluster.controller.longest_silence_ms.values(), default=-1)
            finally:
                for hog in hogged:
                    hog.kill()
                    hog.wait()
                acked = int(producer.communicate(timeout=60)[0] or 0) if producer else 0
            rows.append({"phase": phase, "records acked": acked,
                         "longest silence ms": longest,
                         "heartbeat interval ms": HEARTBEAT_INTERVAL_MS,
                         f"fenced at {OLD_SESSION_TIMEOUT_MS} ms": longest > OLD_SESSION_TIMEOUT_MS,
                         f"fenced at {DEFAULT_SESSION_TIMEOUT_MS} ms":
                             longest > DEFAULT_SESSION_TIMEOUT_MS,
                         "load average": round(os.getloadavg()[0], 1)})
    idle = max(rows[0]["longest silence ms"], 1)
    return {"title": "broker liveness: longest silence seen by the controller, per phase",
            "rows": rows,
            "figures": {"starved / idle longest silence": rows[-1]["longest silence ms"] / idle,
                        "starved longest silence / session timeout":
                            rows[-1]["longest silence ms"] / DEFAULT_SESSION_TIMEOUT_MS}}
