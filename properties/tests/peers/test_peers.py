"""Peers started by name (chaos/peers/): Apache Kafka from Maven by coordinates, kafkaref's own
cluster, each on 127.0.0.1 with kill / restart / pause / resume / tear, everything stopped and
removed afterwards; and the one-line errors when a peer cannot be had."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import uuid

import psutil
import pytest

from kafkaref.chaos.peers import (
    PeerError,
    apache_kafka,
    fetched,
    kfake,
    load_peer,
    make_peer,
    start_peer,
)
from kafkaref.chaos.peers.peer import Node, Peer
from kafkaref.impl.client.cluster_view import brokers_seen
from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.properties.servers import PeerSetup, running_peer
from kafkaref.properties.waiting import wait_until


def test_the_pom_pins_the_version_the_reports_print():
    with open(apache_kafka.POM) as f:
        pinned = re.search(r"<kafka.version>([^<]+)</kafka.version>", f.read()).group(1)
    assert pinned == apache_kafka.KAFKA_VERSION == make_peer("apache-kafka").version


def api_versions_answered(address: str) -> bool:
    with KafkaConnection.to(address, timeout_s=5) as conn:
        answer = conn.send(18, 3, {"client_software_name": "t", "client_software_version": "1"})
    return answer.error_code == 0 and len(answer.api_keys) > 20


def listening_ports(pid: int) -> set[int]:
    return {c.laddr.port for c in psutil.Process(pid).net_connections("inet")
            if c.status == psutil.CONN_LISTEN}


def test_apache_kafka_serves_on_loopback_and_takes_every_fault(peer):
    node = peer.nodes[1]
    assert peer.describe().startswith(f"apache-kafka {apache_kafka.KAFKA_VERSION}, 1 node")
    assert api_versions_answered(peer.bootstrap)
    addresses = {c.laddr.ip for c in psutil.Process(node.pid).net_connections("inet")
                 if c.status == psutil.CONN_LISTEN}
    assert addresses == {"127.0.0.1"}  # never bound outside loopback
    peer.pause(1)
    wait_until(lambda: psutil.Process(node.pid).status() == psutil.STATUS_STOPPED)
    peer.resume(1)
    wait_until(lambda: psutil.Process(node.pid).status() != psutil.STATUS_STOPPED)
    first = node.pid
    peer.kill(1)
    assert not peer.alive(1) and not psutil.pid_exists(first) or \
        psutil.Process(first).status() == psutil.STATUS_ZOMBIE
    again = load_peer(peer.directory)  # as a `kafkaref peer restart` in another process
    again.restart(1)
    assert peer.alive(1) and peer.nodes[1].pid != first
    assert api_versions_answered(peer.bootstrap)


def test_kafkaref_is_a_peer_like_the_others(tmp_path):
    with running_peer(PeerSetup("kafkaref", 3), str(tmp_path / "k")) as peer:
        assert brokers_seen(peer.nodes[0].host, peer.nodes[0].port) == 3
        peer.kill(2)
        peer.restart(2)
        assert api_versions_answered(peer.nodes[2].address)


def test_stop_ends_every_process_the_state_file_names_and_removes_the_directory(tmp_path):
    directory = str(tmp_path / "k")
    peer = start_peer("kafkaref", 1, directory)
    peer.kill(0)
    load_peer(directory).restart(0)  # restarted by "another process": not peer's child
    restarted = peer.nodes[0].pid if peer.alive(0) else load_peer(directory).nodes[0].pid
    peer.stop()
    assert not psutil.pid_exists(restarted) or \
        psutil.Process(restarted).status() == psutil.STATUS_ZOMBIE
    assert not os.path.exists(directory)


class Exits(Peer):
    name = "exits"

    def __init__(self, directory):
        super().__init__(directory)
        self.nodes[1] = Node(1, "127.0.0.1", 1, ["sh", "-c", "echo cannot bind; exit 3"],
                             os.path.join(directory, "n.log"), directory)


def test_a_node_that_dies_while_starting_is_one_line_naming_its_log(tmp_path):
    with pytest.raises(PeerError) as error:
        Exits(str(tmp_path / "x")).start()
    assert "exited while starting: cannot bind" in str(error.value)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "x").exists()


def test_an_unknown_peer_names_the_known_ones():
    with pytest.raises(PeerError, match="unknown peer 'kafka'; known peers: apache-kafka"):
        make_peer("kafka")


def test_apache_kafka_runs_one_or_three_nodes():
    with pytest.raises(PeerError, match="1 or 3 nodes, not 2"):
        make_peer("apache-kafka", 2)


def test_no_maven_is_one_line_saying_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKAREF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn on it
    with pytest.raises(PeerError, match="mvn is not installed: Maven Central must be reachable"):
        fetched.maven_classpath(apache_kafka.POM)
    assert not list((tmp_path / "cache" / "maven").glob("*/.complete"))


def test_an_artifact_maven_cannot_resolve_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKAREF_CACHE", str(tmp_path / "cache"))
    pom = tmp_path / "pom.xml"
    with open(apache_kafka.POM) as f:
        pom.write_text(f.read().replace("<kafka.version>", "<kafka.version>0.0.0-none"))
    with pytest.raises(PeerError) as error:
        fetched.maven_classpath(str(pom))
    assert "resolving pom.xml with Maven failed" in str(error.value)
    assert "\n" not in str(error.value)


def test_no_java_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PeerError, match="java is not installed: Apache Kafka 4 needs Java 17"):
        apache_kafka.classpath()


def test_a_port_taken_between_choice_and_bind_is_retried_on_fresh_ports(tmp_path, monkeypatch):
    taken = socket.create_server(("127.0.0.1", 0))
    ports = iter([taken.getsockname()[1]])
    real = apache_kafka.free_port
    monkeypatch.setattr(apache_kafka, "free_port", lambda: next(ports, None) or real())
    try:
        with start_peer("apache-kafka", 1, str(tmp_path / "k")) as peer:
            assert peer.nodes[1].port != taken.getsockname()[1]
            assert api_versions_answered(peer.bootstrap)
    finally:
        taken.close()


def test_a_peer_state_file_that_is_not_one_is_one_line(tmp_path):
    (tmp_path / "peer.json").write_text("{not json")
    with pytest.raises(PeerError, match="is not a peer's state file"):
        load_peer(str(tmp_path))
    with pytest.raises(PeerError, match="no peer in .*: peer.json is missing"):
        load_peer(str(tmp_path / "none"))


def test_tear_needs_a_stopped_node(peer):
    with pytest.raises(PeerError, match="is running: kill it before tearing"):
        peer.tear(1, "t", 0)


def test_every_process_of_a_peer_dies_with_its_owner(tmp_path):
    """An owner killed by SIGKILL cannot clean up: its nodes get SIGTERM from the kernel
    (PR_SET_PDEATHSIG), so nothing outlives it."""
    script = (f"import sys, time\nfrom kafkaref.chaos.peers import start_peer\n"
              f"p = start_peer('kafkaref', 1, {str(tmp_path / 'k')!r}, keep=True)\n"
              f"print(p.nodes[0].pid, flush=True)\ntime.sleep(600)\n")
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(owner.stdout.readline())
        owner.kill()
        owner.wait(10)
        wait_until(lambda: not psutil.pid_exists(pid) or
                   psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, timeout_s=20)
    finally:
        owner.kill()
        owner.stdout.close()


def test_the_kfake_main_pins_the_version_the_reports_print():
    with open(os.path.join(kfake.MAIN_DIR, "go.mod")) as f:
        go_mod = f.read()
    assert f"github.com/twmb/franz-go/pkg/kfake {kfake.KFAKE_VERSION}\n" in go_mod
    assert "github.com/twmb/franz-go v1.22.3 " in go_mod


def test_no_go_is_one_line_saying_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKAREF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no go on it
    with pytest.raises(PeerError, match="go is not installed: Go 1.26 and the Go module proxy"):
        fetched.go_binary(kfake.MAIN_DIR, "kfake-peer")
    assert not list((tmp_path / "cache" / "go").glob("*/.complete"))


@pytest.mark.kfake
def test_kfake_serves_every_broker_from_one_process_and_survives_a_restart(tmp_path):
    with start_peer("kfake", 3, str(tmp_path / "k")) as peer:
        assert len(peer.bootstrap.split(",")) == 3
        assert brokers_seen("127.0.0.1", peer.ports[2]) == 3
        peer.kill(1)
        assert not peer.alive(1)
        load_peer(peer.directory).restart(1)  # its ports come back from the state file
        assert all(map(api_versions_answered, peer.bootstrap.split(",")))


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch):
    """`StorageTool format -t -xyz` reads -xyz as an option; Kafka's Uuid.randomUuid draws again."""
    drawn = iter([uuid.UUID(bytes=b"\xfb" + bytes(15)), uuid.UUID(bytes=bytes(16))])
    monkeypatch.setattr(apache_kafka.uuid, "uuid4", lambda: next(drawn))
    assert apache_kafka._cluster_id() == "AAAAAAAAAAAAAAAAAAAAAA"
