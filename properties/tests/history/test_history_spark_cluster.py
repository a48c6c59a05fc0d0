"""The same check, submitted with spark-submit to a real standalone cluster (master + worker on
127.0.0.1), reports exactly what local mode reports. Opt-in: tox -e spark-cluster."""

import json

import pytest

from kafkaref.spark_checks import cluster, job
from kafkaref.spark_checks.session import shared_test_session
from kafkaref.spark_checks.synth import INJECTIONS, SynthSpec, generate


@pytest.mark.cluster
@pytest.mark.timeout(900)
def test_standalone_cluster_reports_what_local_mode_reports(tmp_path):
    history = tmp_path / "history"
    generate(SynthSpec(sends=4000, seed=5, rates={k: 0.005 for k in INJECTIONS}), history)
    local = job.check(shared_test_session(), history)
    with cluster.standalone_cluster(tmp_path / "spark") as master:
        done = cluster.submit(master, history, tmp_path / "report.json", tmp_path / "spark")
    assert done.returncode == local.exit_code, done.stderr.decode()[-3000:]
    remote = json.loads((tmp_path / "report.json").read_text())
    assert remote == json.loads(local.dumps())
    assert remote["valid"] is False


@pytest.mark.cluster
@pytest.mark.timeout(600)
def test_a_master_port_taken_meanwhile_is_retried_on_new_ports(tmp_path, monkeypatch):
    """The master's port is picked before the master binds it; if another socket holds it by
    then, the master fails to start and the cluster starts again on new ports."""
    import socket

    taken = socket.create_server(("127.0.0.1", 0))
    picks = iter([taken.getsockname()[1]])
    real = cluster.free_port
    monkeypatch.setattr(cluster, "free_port", lambda: next(picks, None) or real())
    try:
        with cluster.standalone_cluster(tmp_path / "spark") as master:
            assert master != f"spark://127.0.0.1:{taken.getsockname()[1]}"
    finally:
        taken.close()
