"""The differential machine's parts, without Apache Kafka: the normalisation rules, steps and
transcripts as text, "could not compare" kept apart from "diverged", and whole walks of kafkaref
against kafkaref (two brokers must agree; one broker twice must diverge at once)."""

import contextlib
import os
import socket
import time

import pytest

from kafkaref.properties.differential import normalise as n
from kafkaref.properties.differential import run
from kafkaref.properties.differential.endpoints import CouldNotCompare, Endpoint
from kafkaref.properties.differential.machine import Diverged
from kafkaref.properties.differential.steps import (
    KINDS,
    Names,
    Step,
    settle_group,
    settle_replicas,
)
from kafkaref.properties.differential.transcript import Entry, read, render
from kafkaref.properties.servers import running_broker, tcp_server

TRANSCRIPTS = os.path.join(os.path.dirname(run.__file__), "transcripts")


class FakeNames:
    """Names as normalise() sees them, without an endpoint."""

    prefix = "d1-1-"

    def symbol(self, text):
        return text[len(self.prefix):] if text.startswith(self.prefix) else text

    def producer_symbol(self, pid):
        return {7: "p0"}.get(pid, pid)

    def member_symbol(self, member):
        return {"abc-1": "m0"}.get(member, member)

    def node_symbol(self, node):
        return {"1": "n0", "0": "n0"}.get(str(node), "unknown node")

    def topic_id_symbol(self, topic_id):
        return {"5678": "t2"}.get(topic_id, "id")


def test_what_differs_by_nature_is_left_out_and_nothing_else():
    names = FakeNames()
    now = int(time.time() * 1000)
    answer = {"throttle_time": 5, "cluster_id": "x", "error_message": "text",
              "controller_id": 1, "brokers": [{"node_id": 1, "host": "h", "port": 9}],
              "topics": [{"name": "d1-1-t1", "topic_id": "1234", "error_code": "none"},
                         {"name": "d1-1-t0", "topic_id": n.ZERO_UUID, "error_code": "none"},
                         {"topic_id": "5678", "error_code": "none"}],
              "producer_id": 7, "member_id": "abc-1", "leader_id": -1,
              "log_append_time": now, "timestamp": 1000}
    assert n.normalise(answer, names) == {
        "controller_id": "node", "brokers": [{"node_id": "node"}],
        "topics": [{"name": "t0", "topic_id": n.ZERO_UUID, "error_code": "none"},
                   {"name": "t1", "topic_id": "id", "error_code": "none"},
                   {"topic_id": "t2", "error_code": "none"}],
        "producer_id": "p0", "member_id": "m0", "leader_id": -1,
        "log_append_time": "wall clock", "timestamp": 1000}


def test_a_broker_resource_is_compared_by_its_node_symbol():
    answer = {"results": [{"resource_type": 4, "resource_name": "1", "configs": []},
                          {"resource_type": 2, "resource_name": "1", "configs": []}]}
    assert [r["resource_name"] for r in n.normalise(answer, FakeNames())["results"]] == [
        "1", "n0"]


def test_records_are_compared_batch_by_batch_and_log_append_time_is_the_brokers_clock():
    from kafkaref.impl.protocol.records import LOG_APPEND_TIME_FLAG, build_batch

    batch = build_batch([(b"k", b"v", (), 1000), (None, b"w", (), 1001)])
    [decoded] = n.records(batch, FakeNames())
    assert decoded["records"] == [[0, 1000, "6b", "76", []], [1, 1001, None, "77", []]]
    assert "crc" in decoded
    stamped = bytearray(build_batch([(None, b"v", (), int(time.time() * 1000))]))
    stamped[22] |= LOG_APPEND_TIME_FLAG  # attributes, low byte
    [decoded] = n.records(bytes(stamped), FakeNames())
    assert "crc" not in decoded and decoded["max_timestamp"] == "wall clock"


def test_an_answer_listing_the_whole_cluster_is_cut_to_the_run():
    answer = {"topics": [{"name": "d1-1-t0"}, {"name": "__consumer_offsets"},
                         {"name": "d1-2-t0"}]}
    assert n.this_run_only(answer, "d1-1-")["topics"] == [{"name": "d1-1-t0"}]


def test_steps_read_back_as_they_were_written():
    step = Step("produce", 8, {"acks": 1, "partitions": [["t0", 0, [{"records": [[None, 3, 1]]}]]]})
    again = Step.parse(step.command())
    assert (again.kind, again.version, again.args) == (step.kind, step.version, step.args)
    with pytest.raises(ValueError, match="not a step"):
        Step.parse("frobnicate v1 {}")


def test_a_transcript_reads_back_its_steps_and_answers(tmp_path):
    steps = [Step("metadata", 9, {"topics": ["t0"]}), Step("list_groups", 2, {})]
    entries = [Entry(steps[0], {"apache-kafka": {"a": 1}, "kafkaref": {"a": 1}}),
               Entry(steps[1], {"apache-kafka": {"b": 1}, "kafkaref": {"b": 2}})]
    path = tmp_path / "t.txt"
    path.write_text(render(["a header"], entries))
    text = path.read_text()
    assert "both: {\"a\": 1}" in text and "differs at: b: 1 against 2" in text
    [(first, recorded), (second, split)] = read(str(path))
    assert first.command() == steps[0].command() and recorded["kafkaref"] == {"a": 1}
    assert split == {"apache-kafka": {"b": 1}, "kafkaref": {"b": 2}}


def test_every_kind_of_step_has_a_strategy_in_the_machine():
    from kafkaref.properties.differential.machine import DifferentialMachine

    rules = {name for name in dir(DifferentialMachine) if not name.startswith("_")}
    assert set(KINDS) <= rules


# -- could not compare -------------------------------------------------------------------------
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_broker_that_is_not_there_is_could_not_compare_in_one_line():
    with pytest.raises(CouldNotCompare) as error:
        Endpoint("apache-kafka", f"127.0.0.1:{closed_port()}")
    assert "cannot be reached" in str(error.value) and "\n" not in str(error.value)


def test_a_broker_that_never_answers_is_could_not_compare_after_a_bounded_wait():
    def silent(conn):
        with conn:
            while conn.recv(1 << 16):
                pass

    port, stop = tcp_server(silent)
    try:
        started = time.monotonic()
        with pytest.raises(CouldNotCompare, match="did not answer api 18 v3 within 1 s"):
            Endpoint("apache-kafka", f"127.0.0.1:{port}", answer_timeout_s=1)
        assert time.monotonic() - started < 10
    finally:
        stop()


@contextlib.contextmanager
def two_kafkarefs(same: bool = False):
    """Two in-process kafkaref brokers as (reference, candidate); one broker twice if same."""
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(running_broker())
        second = first if same else stack.enter_context(running_broker())
        pair = run.endpoints_of(f"127.0.0.1:{first.port}", f"127.0.0.1:{second.port}",
                                "self", "self")
        yield pair
        for endpoint in pair:
            endpoint.close()


def test_a_walk_stops_as_could_not_compare_when_a_broker_dies(tmp_path):
    """Never a divergence, never a pass: the walk ends at once, without shrinking."""
    with running_broker() as server:
        pair = run.endpoints_of(f"127.0.0.1:{server.port}", f"127.0.0.1:{server.port}")
    with pytest.raises(CouldNotCompare, match="could not compare: apache-kafka at .* is down"):
        run.run_walk(pair, run.walk_settings(5, 5), str(tmp_path))


def test_kafkaref_against_itself_never_diverges(tmp_path):
    """Two brokers of the same code answer every step alike: the normalisation and the
    machine's symbols hold (a walk of both against one broker would not: see below)."""
    with two_kafkarefs() as pair:
        tally = run.run_walk(pair, run.walk_settings(12, 25), str(tmp_path))
    assert tally.sequences >= 12 and tally.steps > 100
    assert not (tmp_path / "last-divergence.txt").exists()


def test_one_broker_twice_diverges_at_once_and_leaves_a_transcript_that_replays(tmp_path):
    """The second 'broker' finds every topic already created: the shrunk sequence is the first
    step alone, written as a transcript, and its replay diverges again."""
    with two_kafkarefs(same=True) as pair:
        with pytest.raises(Diverged, match="create_topics") as error:
            run.run_walk(pair, run.walk_settings(3, 5), str(tmp_path))
        path = tmp_path / "last-divergence.txt"
        assert str(path) in str(error.value)
        [(step, recorded)] = read(str(path))
        assert step.kind == "create_topics"
        assert recorded["apache-kafka"] != recorded["kafkaref"]
        assert run.replay(str(path), pair).diverged_at == 0


@pytest.mark.parametrize("transcript", sorted(
    f for f in os.listdir(TRANSCRIPTS) if f.endswith(".txt")) if os.path.isdir(TRANSCRIPTS)
    else [])
def test_kafkaref_still_answers_what_apache_kafka_answered(transcript):
    """The committed transcripts (properties/differential/transcripts/) hold Apache Kafka's
    answers to the divergences found and fixed: kafkaref alone must give them (no Java)."""
    with running_broker() as server:
        candidate = Endpoint("kafkaref", f"127.0.0.1:{server.port}")
        run.warm_up(candidate)
        result = run.replay(os.path.join(TRANSCRIPTS, transcript), candidate=candidate)
    assert result.diverged_at is None, result.entries[result.diverged_at].output()


def test_names_turn_symbols_into_each_brokers_values():
    class OneNode:
        node_ids = [5]

        def node_index(self, node_id):
            return 0 if node_id == 5 else None

    names = Names(OneNode(), "p-")
    assert names.real("t0") == "p-t0" and names.real("=bad/name") == "bad/name"
    assert len(names.real("long:250")) == 250 and names.symbol(names.real("long:250")) == "long:250"
    assert (names.node("n0"), names.node("n7")) == (5, 1007)
    assert (names.node_symbol(5), names.node_symbol(1007), names.node_symbol("")) == (
        "n0", "n7", "")


def test_a_topic_answered_in_two_entries_is_compared_as_one():
    answer = {"responses": [{"topic": "d1-1-t0", "partitions": [{"partition_index": 7}]},
                            {"topic": "bad/name", "partitions": [{"partition_index": 0}]},
                            {"topic": "d1-1-t0", "partitions": [{"partition_index": 0}]}]}
    assert n.normalise(answer, FakeNames())["responses"] == [
        {"topic": "bad/name", "partitions": [{"partition_index": 0}]},
        {"topic": "t0", "partitions": [{"partition_index": 0}, {"partition_index": 7}]}]


def test_a_join_is_followed_by_a_wait_until_its_coordinator_committed_what_it_wrote():
    """Kafka answers a JoinGroup before its records are committed and describes groups at the
    committed offset (`three-node-new-group-state`): after a join, and only then, the step
    waits on an OffsetFetch with require_stable to the group's coordinator."""
    class Coordinator:
        calls = []

        def group_call(self, api_key, version, values, group):
            self.calls.append((api_key, values["require_stable"], values["groups"], group))
            return {"groups": [{"group_id": group, "error_code": "none", "topics": []}]}

    names = Names(Coordinator(), "p-")
    settle_group(Step("describe_groups", 5, {"groups": ["g0"]}), names)
    assert Coordinator.calls == []
    settle_group(Step("join_group", 8, {"group": "g0", "member": "m0", "known_id": False}), names)
    assert Coordinator.calls == [(9, True, [{"group_id": "p-g0", "member_id": None,
                                              "member_epoch": -1, "topics": None}], "p-g0")]


def test_an_acks_1_produce_on_several_nodes_waits_until_the_followers_have_its_records():
    """Kafka answers acks 0 and 1 before the followers fetch (`replication-timing`): on several
    nodes the step waits until each partition's high watermark reaches its log end; on one
    node, and after acks=-1, it sends nothing."""
    class Cluster:
        node_addresses = {1: "a", 2: "b", 3: "c"}
        high_watermarks = iter([0, 0, 1])
        sent = []

        def call(self, api_key, version, values):
            self.sent.append(api_key)
            return {"topics": [{"name": "p-t0", "partitions": [
                {"partition_index": 0, "error_code": "none", "leader_epoch": 4}]}]}

        def partitioned_call(self, api_key, version, values, topics):
            self.sent.append(api_key)
            if api_key == 23:
                assert values["topics"][0]["partitions"][0]["leader_epoch"] == 4
                return {"topics": [{"topic": "p-t0", "partitions": [
                    {"partition": 0, "error_code": "none", "end_offset": 1}]}]}
            return {"topics": [{"name": "p-t0", "partitions": [
                {"partition_index": 0, "error_code": "none",
                 "offset": next(self.high_watermarks)}]}]}

    names = Names(Cluster(), "p-")
    produce = {"partitions": [["t0", 0, []], ["t0", 0, []]], "timeout_ms": 5000}
    settle_replicas(Step("produce", 8, {**produce, "acks": -1}), names)
    assert Cluster.sent == []
    settle_replicas(Step("produce", 8, {**produce, "acks": 1}), names)
    assert Cluster.sent == [3, 23, 2] * 3  # high watermark 0, 0, then 1: the log end
    Cluster.node_addresses, Cluster.sent = {1: "a"}, []
    settle_replicas(Step("produce", 8, {**produce, "acks": 0}), names)
    assert Cluster.sent == []
