"""Chaos against a peer (`kafkaref chaos run --peer apache-kafka`): each node in a network
namespace of its own (chaos/netns.py), partitions as blackhole routes, the nemesis driving the
peer through PeerCluster (chaos/peer_cluster.py); liveness measured from histories
(chaos/liveness.py); the one-line refusals when a run cannot be set up."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kafkaref.chaos import netns
from kafkaref.chaos.liveness import measure, summarise
from kafkaref.chaos.nemesis import Nemesis, Step
from kafkaref.chaos.peer_cluster import NetnsLinks, PeerCluster
from kafkaref.chaos.proxy import Fault
from kafkaref.chaos.recorder import Recorder
from kafkaref.chaos.run import EXIT_SETUP, EXIT_VALID, RunOptions, run, setup_problem
from kafkaref.commands.main import main as cli
from kafkaref.history.format import NEMESIS_PROCESS
from kafkaref.history.store import write_ops

needs_netns = pytest.mark.skipif(netns.unavailable() is not None,
                                 reason=str(netns.unavailable()))


class RecordingHosts:
    """Hosts' drop/heal, remembered instead of routed."""

    def __init__(self):
        self.drops: set[tuple[int, int]] = set()

    def drop(self, source: int, target: int) -> None:
        self.drops.add((source, target))

    def heal(self) -> None:
        self.drops.clear()


def test_mesh_links_map_onto_address_cuts():
    hosts = RecordingHosts()
    links = NetnsLinks(hosts, [1, 2, 3])
    cut = Fault(cut_up=True, cut_down=True)
    links.set_fault("peer-1-2", cut)
    links.set_fault("peer-3-1", Fault(cut_up=True))
    links.set_fault("ctrl-1", cut)  # combined mode: the quorum is the nodes, nothing more
    links.set_fault("client-2", Fault(cut_down=True))
    assert hosts.drops == {(1, 2), (2, 1), (3, 1), (2, netns.HOST_ID)}
    with pytest.raises(ValueError):
        links.set_fault("peer-1-3", Fault(delay_ms=50))  # no netem: refused, never faked
    links.heal()
    assert hosts.drops == set()
    assert len(links.links) == 3 + 3 + 6
    apart = NetnsLinks(hosts, [0, 1, 2], controller_apart=True)  # kafkaref's controller
    apart.set_fault("ctrl-1", cut)
    assert hosts.drops == {(1, netns.CONTROLLER_ID)}


class FakePeer:
    name, supports = "apache-kafka", frozenset({"kill", "restart", "pause"})
    nodes = {1: None, 2: None, 3: None}
    controller_ports = {1: 9093, 2: 9093, 3: 9093}

    def __init__(self):
        self.calls: list[tuple[str, int]] = []
        self.dead: set[int] = set()

    def alive(self, node_id):
        return node_id not in self.dead

    def kill(self, node_id):
        self.calls.append(("kill", node_id))
        self.dead.add(node_id)

    def restart(self, node_id):
        self.calls.append(("restart", node_id))
        self.dead.discard(node_id)

    def pause(self, node_id):
        self.calls.append(("pause", node_id))

    def resume(self, node_id):
        self.calls.append(("resume", node_id))


class FakeCluster(PeerCluster):
    def partition_meta(self, topic):
        from types import SimpleNamespace

        return [SimpleNamespace(leader=2, replicas=[1, 2, 3], isr=[1, 2, 3])]

    def quorum_leader(self):
        return 3


def test_the_nemesis_drives_a_peer_and_skips_what_it_cannot_do():
    peer, hosts = FakePeer(), RecordingHosts()
    cluster = FakeCluster(peer, hosts)
    nemesis = Nemesis(Recorder(), [], "chaos", seed=1, cluster=cluster)
    undo = nemesis.apply(Step(0, "kill", "controller", 1))  # the KRaft leader, node 3
    assert peer.calls == [("kill", 3)]
    undo()
    assert peer.calls[-1] == ("restart", 3)
    nemesis.apply(Step(0, "partition", "isolate", 1))()
    assert hosts.drops == set()  # healed by the undo
    undo = nemesis.apply(Step(0, "partition", "isolate", 1))
    assert hosts.drops == {(2, 1), (1, 2), (2, 3), (3, 2)}  # the leader, 2, cut off
    undo()
    for kind, target in (("partition", "delay"), ("clock", "wall-forward"),
                         ("corrupt", "bitflip")):
        assert nemesis.apply(Step(0, kind, target, 1)) is None
    assert set(nemesis.skipped) == {"partition delay", "clock", "corrupt"}
    nemesis.apply(Step(0, "pause", "leader", 1))
    peer.dead.add(1)
    nemesis.heal_all()  # resumes the paused, restarts the dead
    assert peer.calls[-2:] == [("restart", 1), ("resume", 2)]


def test_runs_that_cannot_be_set_up_are_refused_before_they_start(tmp_path, monkeypatch):
    assert "not 'tansu'" in setup_problem(RunOptions(peer="tansu"))
    assert "--bootstrap" in setup_problem(RunOptions(peer="apache-kafka",
                                                     bootstrap="127.0.0.1:9092"))
    assert setup_problem(RunOptions(peer="kafkaref")) is None  # as root: namespaces can be made
    assert setup_problem(RunOptions()) is None  # the proxy mesh needs nothing
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    result = CliRunner().invoke(cli, ["chaos", "run", "--peer", "apache-kafka",
                                      "--runs-dir", str(tmp_path)])
    assert result.exit_code == EXIT_SETUP
    assert result.output.strip().splitlines() == [
        "error: partitions need root: network namespaces and veth pairs are made with "
        "`ip netns`"]
    assert not list(tmp_path.iterdir())  # nothing recorded


def _history(tmp_path, ops):
    rows = []
    for index, (time_ms, process, type_, f, value, partition) in enumerate(ops):
        row = {"index": index, "time": time_ms * 1_000_000, "process": process, "type": type_,
               "f": f, "value": value}
        if type_ != "invoke":
            row["invoke_index"] = _invocation_of(rows, process, f)
        if f == "send" and type_ != "invoke":
            row["records"] = [{"kind": "send", "topic": "chaos", "partition": partition,
                               "offset": index if type_ == "ok" else None, "value": index}]
        rows.append(row)
    path = tmp_path / "history"
    write_ops(path, rows)
    return path


def _invocation_of(rows, process, f):
    return max(r["index"] for r in rows if r["process"] == process and r["f"] == f
               and r["type"] == "invoke")


def test_liveness_is_until_every_partition_took_a_write_invoked_after_the_moment(tmp_path):
    n = NEMESIS_PROCESS
    history = _history(tmp_path, [
        (0, 1, "invoke", "send", None, 0), (5, 1, "ok", "send", None, 0),
        (6, 2, "invoke", "send", None, 1), (8, 2, "ok", "send", None, 1),
        (10, n, "invoke", "kill", {"role": "leader", "brokers": [1]}, None),
        (12, n, "ok", "kill", None, None),
        (11, 1, "invoke", "send", None, 0),  # invoked before the kill completed: not counted
        (300, 1, "ok", "send", None, 0),
        (20, 2, "invoke", "send", None, 1), (50, 2, "ok", "send", None, 1),
        (400, 3, "invoke", "send", None, 0), (412, 3, "ok", "send", None, 0),
        (500, n, "invoke", "restart", {"role": "leader", "brokers": [1]}, None),
        (600, n, "ok", "restart", None, None),
        (610, 3, "invoke", "send", None, 0), (700, 3, "ok", "send", None, 0),
        (620, 2, "invoke", "send", None, 1),  # partition 1 never writes again: censored
        (900, 2, "info", "send", None, 1),
    ])
    measures = measure(history)
    assert [(m.kind, m.recovery_ns) for m in measures] == [
        ("leader-kill", 400_000_000), ("restart", None)]
    assert [(s.kind, s.events, s.censored, s.median_ms) for s in summarise(measures)] == [
        ("restart", 1, 1, None), ("leader-kill", 1, 0, 400.0)]



def test_heals_are_also_summarised_by_the_partition_mode_they_undo(tmp_path):
    n = NEMESIS_PROCESS
    cut = {"links": ["peer-0-1", "peer-1-0"], "mode": "isolate"}
    history = _history(tmp_path, [
        (0, n, "invoke", "partition", cut, None), (1, n, "ok", "partition", None, None),
        (10, n, "invoke", "heal", cut, None), (20, n, "ok", "heal", cut, None),
        (30, 1, "invoke", "send", None, 0), (50, 1, "ok", "send", None, 0),
        (60, n, "invoke", "partition", {**cut, "mode": "halves"}, None),
        (61, n, "ok", "partition", None, None),
        (70, n, "invoke", "heal", {**cut, "mode": "halves"}, None),
        (80, n, "ok", "heal", {**cut, "mode": "halves"}, None),
        (85, 1, "invoke", "send", None, 0), (180, 1, "ok", "send", None, 0),
        (200, n, "invoke", "heal", {"all": True}, None), (201, n, "ok", "heal", {}, None),
    ])
    rows = [(s.kind, s.events, s.median_ms) for s in summarise(measure(history))]
    assert rows == [("heal", 2, 65.0), ("heal: halves", 1, 100.0), ("heal: isolate", 1, 30.0)]

@needs_netns
def test_hosts_cut_node_pairs_and_leave_nothing_behind():
    with netns.Hosts([1, 2]) as hosts:
        server = subprocess.Popen(hosts.wrap(2, [
            sys.executable, "-c", "import socket,time;s=socket.create_server(('0.0.0.0',7000));"
            "print('up',flush=True);time.sleep(60)"]), stdout=subprocess.PIPE)
        try:
            assert server.stdout.readline().strip() == b"up"
            connect = [sys.executable, "-c", f"import socket;socket.create_connection(("
                       f"'{hosts.address(2)}',7000),timeout=3)"]
            assert subprocess.run(hosts.wrap(1, connect), check=False).returncode == 0
            assert subprocess.run(connect, check=False).returncode == 0  # the root side
            hosts.drop(1, 2)
            assert subprocess.run(hosts.wrap(1, connect), capture_output=True,
                                  check=False).returncode != 0
            assert subprocess.run(connect, check=False).returncode == 0
            hosts.heal()
            assert subprocess.run(hosts.wrap(1, connect), check=False).returncode == 0
        finally:
            server.kill()
            server.wait()
        names = [hosts.namespace(1), hosts.namespace(2)]
    assert not set(names) & set(netns.namespaces())
    assert hosts.bridge not in netns.ip("-o", "link").stdout


@needs_netns
def test_what_a_killed_runner_left_is_swept_by_the_next():
    orphan = subprocess.Popen(["true"])
    orphan.wait()  # a pid that no longer runs
    left = netns.Hosts([1], owner=orphan.pid).create()
    assert left.namespace(1) in netns.namespaces()
    with netns.Hosts([1]):
        assert left.namespace(1) not in netns.namespaces()


@needs_netns
@pytest.mark.parametrize("peer", ["apache-kafka", "kafkaref"])
def test_a_short_chaos_run_on_hosts_is_valid(tmp_path, peer):
    """Isolation, a majority/minority split, a killed leader and a killed controller, a pause,
    each node on a host of its own: acks=all, RF 3, min ISR 2 on Kafka itself and on kafkaref
    must come out valid, and nothing stays behind."""
    from kafkaref.spark_checks.checker import history_checker
    from kafkaref.spark_checks.session import shared_test_session

    schedule = (Step(2, "partition", "isolate", 3), Step(7, "partition", "halves", 3),
                Step(11, "pause", "follower", 2), Step(14, "kill", "controller", 2),
                Step(18, "kill", "leader", 2))
    options = RunOptions(seed=3, time_limit_s=24, peer=peer, schedule=schedule,
                         runs_dir=str(tmp_path), run_id="run", settle_s=2)
    result = run(options, log=lambda _: None,
                 check=history_checker("spark", spark=shared_test_session()))
    anomalies = {k: v["examples"][:2] for k, v in result.report.get("anomalies", {}).items()
                 if v["count"]}
    assert result.exit_code == EXIT_VALID, (result.report.get("error"), anomalies)
    # A Kafka node restarted on a loaded machine may take 10 s and more to serve again: the
    # nemesis waits for it, and a later step may then fall past the time limit.
    faults = result.summary["faults"]
    assert faults["partition"] == 2 and faults["pause"] == 1 and faults["kill"] >= 1, faults
    assert result.summary["acknowledged"] > 300
    mine = f"{netns.PREFIX}{os.getpid()}-"  # other runs may make and remove theirs meanwhile
    assert not [name for name in netns.namespaces() if name.startswith(mine)]
    assert (tmp_path / "run" / "report.html").exists()
    assert not _pids_named(tmp_path)  # every node stopped


def _pids_named(folder) -> list[int]:
    """Pids still running whose command line names folder (the peer's nodes)."""
    import psutil

    return [p.pid for p in psutil.process_iter(["cmdline"])
            if any(str(folder) in part for part in (p.info["cmdline"] or []))]


def test_compare_page_puts_each_run_in_a_column_of_its_own(tmp_path):
    from kafkaref.chaos.compare import write_comparison

    n = NEMESIS_PROCESS
    runs = []
    for broker in ("kafkaref", "apache-kafka"):
        run_dir = tmp_path / broker
        run_dir.mkdir()
        _history(run_dir, [
            (0, 1, "invoke", "send", None, 0), (5, 1, "ok", "send", None, 0),
            (10, n, "invoke", "partition", {"mode": "isolate"}, None),
            (11, n, "ok", "partition", None, None),
            (900, n, "invoke", "heal", {"mode": "isolate"}, None),
            (901, n, "ok", "heal", None, None),
            (950, 1, "invoke", "send", None, 0), (960, 1, "ok", "send", None, 0)])
        (run_dir / "report.json").write_text(json.dumps({
            "valid": True, "anomalies": {}, "run": {"broker": broker, "seed": 7,
                                                    "skipped": {"partition delay": "no netem"}}}))
        runs.append(run_dir)
    page = write_comparison(tmp_path / "compare.html", runs).read_text()
    assert page.count('<div class="side" style="--n:2">') >= 5
    assert "apache-kafka" in page and "kafkaref" in page and "no netem" in page
    assert page.count("<td>heal</td><td class=n>1</td><td class=n>0</td><td class=n>59") == 2


def test_each_bench_round_starts_with_the_next_broker():
    from kafkaref.chaos.peer_bench import _rotated

    brokers = ["kafkaref", "apache-kafka", "tansu"]
    assert [_rotated(brokers, r)[0] for r in range(4)] == [
        "kafkaref", "apache-kafka", "tansu", "kafkaref"]
    assert sorted(_rotated(brokers, 2)) == sorted(brokers)
    assert _rotated([], 3) == []


def test_bench_ratios_are_kafkaref_over_each_peer():
    from kafkaref.chaos.peer_bench import _ratios

    rows = [{"broker": "kafkaref", "rf": 1, "produce MB/s": 100.0, "p99 ms": 2.0},
            {"broker": "apache-kafka", "rf": 1, "produce MB/s": 50.0, "p99 ms": 4.0},
            {"broker": "tansu", "rf": 1, "produce MB/s": 200.0, "p99 ms": 1.0},
            {"broker": "tansu", "rf": 3, "note": "one node"}]
    figures = _ratios(rows)
    assert figures["rf1_produce_mb_s_kafkaref_over_apache_kafka"] == 2.0
    assert figures["rf1_produce_mb_s_kafkaref_over_tansu"] == 0.5
    assert figures["rf1_p99_latency_kafkaref_over_apache_kafka"] == 2.0  # higher: better
    assert figures["rf1_p99_latency_kafkaref_over_tansu"] == 0.5
    assert not any(key.startswith("rf3_") for key in figures)


def test_bench_ratios_give_the_spread_of_the_paired_rounds():
    """Each ratio comes with its lowest and highest round (same round of both brokers): a
    ratio whose rounds range across 1 is noise, not a gap."""
    from kafkaref.chaos.peer_bench import _ratios

    rows = [{"broker": "kafkaref", "rf": 3, "consume MB/s": 300.0,
             "rounds": {"consume MB/s": [150.0, 300.0, 540.0]}},
            {"broker": "apache-kafka", "rf": 3, "consume MB/s": 360.0,
             "rounds": {"consume MB/s": [300.0, 360.0, 270.0]}}]
    figures = _ratios(rows)
    key = "rf3_consume_mb_s_kafkaref_over_apache_kafka"
    assert (figures[f"{key}_lowest_round"], figures[f"{key}_highest_round"]) == (0.5, 2.0)
