"""`kafkaref broker` as an OS process: ready line, SIGTERM, kill -9 and recovery on restart."""

import os
import signal
import subprocess
import sys
import time

import confluent_kafka as ck
import pytest

from kafkaref.impl.server.local_cluster import signal_and_wait

KAFKAREF = os.path.join(os.path.dirname(sys.executable), "kafkaref")


def start_broker(data_dir):
    with open(data_dir / "broker.stderr", "a") as stderr:
        proc = subprocess.Popen([KAFKAREF, "broker", "--port", "0", "--data-dir", str(data_dir)],
                                stdout=subprocess.PIPE, stderr=stderr, text=True)
    line = proc.stdout.readline()
    assert line.startswith("listening on "), (line, (data_dir / "broker.stderr").read_text())
    return proc, line.split()[-1]


def produce(address, topic, values):
    producer = ck.Producer({"bootstrap.servers": address, "acks": "all",
                            "enable.idempotence": True})
    acked = []
    for value in values:
        producer.produce(topic, value=value,
                         on_delivery=lambda e, m: acked.append(m.offset()) if e is None else None)
    assert producer.flush(20) == 0
    return acked


def consume(address, topic, count):
    consumer = ck.Consumer({"bootstrap.servers": address, "group.id": "g",
                            "enable.auto.commit": False})
    got = []
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 20
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_restart_keeps_every_acknowledged_record(tmp_path, sig):
    proc, address = start_broker(tmp_path)
    try:
        values = [b"v%d" % i for i in range(50)]
        assert sorted(produce(address, "t", values)) == list(range(50))
        signal_and_wait(proc, sig)
        assert os.path.isdir(tmp_path / "t-0")
        proc, address = start_broker(tmp_path)
        assert consume(address, "t", 50) == values
        more = produce(address, "t", [b"after"])
        assert more == [50]
    finally:
        signal_and_wait(proc)


def test_bad_arguments_exit_2_without_traceback():
    result = subprocess.run([KAFKAREF, "broker", "--port", "x"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_config_file_is_read_and_bad_lines_are_rejected(tmp_path):
    good = tmp_path / "good.properties"
    good.write_text(f"# comment\nport=0\nnum.network.threads=1\nlog.dirs={tmp_path / 'd'}\n")
    proc = subprocess.Popen([KAFKAREF, "broker", "--config", str(good)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout.readline().startswith("listening on 127.0.0.1:")
        assert (tmp_path / "d").is_dir()
    finally:
        signal_and_wait(proc)
    assert proc.returncode == 0
    for text in ("port=abc\n", "just words\n"):
        bad = tmp_path / "bad.properties"
        bad.write_text(text)
        result = subprocess.run([KAFKAREF, "broker", "--config", str(bad)], capture_output=True,
                                text=True, timeout=30)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
