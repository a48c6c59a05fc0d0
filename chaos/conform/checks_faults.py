"""Checks that need faults: a broker restart through the user's --kill-cmd / --restart-cmd, and
the chaos workload (chaos/workload.py) when it is installed."""

from __future__ import annotations

import importlib

from kafkaref.chaos.conform.catalogue import Skip, check
from kafkaref.chaos.conform.commands import run_command, wait_serving
from kafkaref.chaos.conform.probe import Probe


@check("restart_keeps_acked", "faults", "Kafka durability: records acknowledged with acks=all "
       "survive a broker restart (replication design; KIP-101)", deadline_s=120.0)
def restart_keeps_acked(probe: Probe):
    """Records acknowledged with acks=all before --kill-cmd are all readable, in order, once
    --restart-cmd has run and the broker serves again."""
    kill, restart = probe.options.get("kill_cmd"), probe.options.get("restart_cmd")
    if not kill or not restart:
        raise Skip("no --kill-cmd / --restart-cmd given")
    topic = probe.create_topic("restart")
    acked = [b"d%d" % i for i in range(50)]
    for i in range(0, 50, 5):
        probe.produce_ok(topic, _batch(acked[i:i + 5]))
    probe.forget_leaders()
    run_command(kill, "--kill-cmd", probe)
    run_command(restart, "--restart-cmd", probe)
    wait_serving(probe)
    probe.wait_for_leaders(topic, 1, timeout_s=60)
    values = [r.value for r in probe.read_all(topic)]
    probe.expect(values[:50] == acked, "acknowledged records lost over the restart",
                 response=str(values[:10]), expected="d0..d49")


def _batch(values):
    from kafkaref.impl.protocol.records import build_batch

    return build_batch([(None, v, (), None) for v in values])


@check("chaos_workload", "faults", "Jepsen-style history checked by spark_checks "
       "(docs/histories.md)", deadline_s=600.0)
def chaos_workload(probe: Probe):
    """The chaos workload (chaos/workload.py) against the broker, with the faults the given
    commands allow, its history judged by the history checks."""
    try:
        workload = importlib.import_module("kafkaref.chaos.workload")
    except ImportError:
        raise Skip("chaos workload not available (kafkaref.chaos.workload is not installed)") from None
    runner = getattr(workload, "run_conformance_workload", None)
    if runner is None:
        raise Skip("chaos workload has no run_conformance_workload entry point")
    verdict = runner(probe)
    probe.expect(verdict.get("valid", False), "the history has anomalies",
                 response=str(verdict)[:600], expected="no anomaly")
    return str(verdict)[:300]

