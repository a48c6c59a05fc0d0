"""The typed mutant registry (impl/mutants.py): one validation, every layer's config uses it,
and no client request can switch a deliberate bug on."""

import attrs
import pytest
from click.testing import CliRunner
from kio.schema.errors import ErrorCode

from kafkaref.impl.controller.state import ControllerState
from kafkaref.impl.core.broker import Broker, BrokerConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.core.metadata import PartitionMeta, TopicMeta
from kafkaref.impl.core.partition import PartitionConfig
from kafkaref.impl.mutants import (
    LAYERS,
    M12_ABSENT,
    OFF,
    Mutant,
    of_layer,
    parse_mutants,
    switches,
)
from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.local_cluster import broker_command
from kafkaref.impl.storage.config import LogConfig


def test_registry_has_m1_to_m15_with_what_each_breaks():
    assert [m.code for m in Mutant] == [f"M{i}" for i in range(1, 16)]
    for mutant in Mutant:
        assert mutant.layer in LAYERS and mutant.breaks and str(mutant) == mutant.code
        assert isinstance(mutant.client_observable, bool)
    assert {m for layer in LAYERS for m in of_layer(layer)} == set(Mutant)
    assert [m for m in Mutant if not m.possible] == [Mutant.M12]


def test_parse_mutants_is_the_one_validation():
    assert parse_mutants(["M2", "m7", Mutant.M9]) == {Mutant.M2, Mutant.M7, Mutant.M9}
    assert parse_mutants("M1,M3") == {Mutant.M1, Mutant.M3}
    assert parse_mutants(None) == parse_mutants([]) == frozenset()
    with pytest.raises(ValueError, match="unknown mutant 'M16'; known: M1, M2"):
        parse_mutants(["M16"])
    with pytest.raises(ValueError, match="no partition lock"):
        parse_mutants(["M12"])
    assert "core lock" in M12_ABSENT
    with pytest.raises(TypeError):
        parse_mutants([2])


@pytest.mark.parametrize("make", [
    lambda m: PartitionConfig(mutants=m), lambda m: LogConfig(mutants=m),
    lambda m: ServerConfig(mutants=m), lambda m: BrokerConfig(mutants=m)])
def test_every_config_validates_through_the_registry(make):
    assert make({"M4"}).mutants == {Mutant.M4}
    with pytest.raises(ValueError, match="unknown mutant"):
        make({"M99"})


def test_hot_paths_read_precomputed_switches():
    config = PartitionConfig(mutants={Mutant.M4})
    assert config.on.M4 and not config.on.M1 and config.on.any
    assert PartitionConfig().on is OFF and not OFF.any
    assert attrs.evolve(config, mutants=()).on is OFF  # recomputed, not copied
    assert switches(frozenset({Mutant.M4})) is config.on  # one Switches per distinct set
    with pytest.raises(AttributeError):
        config.on.M4 = False
    assert ControllerState(lambda: 0)._epoch_bump == 1
    assert ControllerState(lambda: 0, mutants={"M14"})._epoch_bump == 0


def test_a_topic_config_never_carries_mutants():
    topic = TopicMeta("t", (PartitionMeta(0, 0, (0,), (0,)),),
                      (("kafkaref.mutants", "M1,M2,M4"), ("min.insync.replicas", "1")))
    assert topic.config().mutants == frozenset()


def _create_topics(broker, configs):
    from kafkaref.impl.protocol import wire
    from kafkaref.impl.protocol.messages import build

    body = build(wire.request_class(19, 4), {
        "topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1,
                    "assignments": [], "configs": [{"name": k, "value": v}
                                                   for k, v in configs.items()]}],
        "timeout": 1000, "validate_only": False})
    request = wire.Request(api_key=19, api_version=4, correlation_id=1, client_id="c",
                           body=body)
    answers = []
    broker.handle(request, answers.append)
    return answers[0].topics[0]


def test_create_topics_with_the_old_mutant_config_is_refused_and_switches_nothing():
    from kafkaref.impl.controller.local import LocalController

    broker = Broker(BrokerConfig(), lambda: 0, lambda key: MemoryLog())
    LocalController().register(broker, "127.0.0.1", 9092)
    answer = _create_topics(broker, {"kafkaref.mutants": "M4"})
    assert answer.error_code == ErrorCode.invalid_config
    assert "reserved" in answer.error_message and "--mutant" in answer.error_message
    assert broker.metadata.topic("t") is None
    answer = _create_topics(broker, {"min.insync.replicas": "1"})
    assert answer.error_code == ErrorCode.none
    partition = broker.replica_manager.partition(("t", 0))
    assert partition.config.mutants == frozenset() and not partition.config.on.any


def test_bad_min_insync_value_is_refused_not_crashing():
    from kafkaref.impl.controller.local import LocalController

    broker = Broker(BrokerConfig(), lambda: 0, lambda key: MemoryLog())
    LocalController().register(broker, "127.0.0.1", 9092)
    answer = _create_topics(broker, {"min.insync.replicas": "many"})
    assert answer.error_code == ErrorCode.invalid_config
    assert "must be an integer" in answer.error_message


def test_broker_refuses_mutants_without_the_acknowledgement(tmp_path):
    from kafkaref.commands.broker import broker

    result = CliRunner().invoke(broker, ["--data-dir", str(tmp_path), "--mutant", "M2"])
    assert result.exit_code == 2
    assert "--allow-deliberate-bugs" in result.output and "M2" in result.output
    result = CliRunner().invoke(broker, ["--data-dir", str(tmp_path), "--mutant", "M42",
                                         "--allow-deliberate-bugs"])
    assert result.exit_code == 2 and "unknown mutant 'M42'" in result.output
    result = CliRunner().invoke(broker, ["--data-dir", str(tmp_path), "--mutant", "M12",
                                         "--allow-deliberate-bugs"])
    assert result.exit_code == 2 and "no partition lock" in result.output


def test_cluster_refuses_mutants_without_the_acknowledgement(tmp_path):
    from kafkaref.commands.cluster import cluster

    result = CliRunner().invoke(cluster, ["--dir", str(tmp_path), "--mutant", "M14"])
    assert result.exit_code == 2 and "--allow-deliberate-bugs" in result.output
    assert not (tmp_path / "cluster.json").exists()  # refused before starting anything


def test_cluster_passes_mutants_to_each_broker_with_the_acknowledgement():
    command = broker_command(1, 0, "/d", "127.0.0.1:1", parse_mutants(["M10", "M2"]))
    assert command[-5:] == ["--mutant", "M2", "--mutant", "M10", "--allow-deliberate-bugs"]
    assert "--mutant" not in broker_command(1, 0, "/d", "127.0.0.1:1")


def test_the_controllers_refuse_the_old_mutant_config_too():
    """Whoever creates a topic (a client's CreateTopics, a test calling the controller), the
    old switch fails loudly instead of silently doing nothing."""
    from kafkaref.impl.controller.local import LocalController

    state = ControllerState(lambda: 0)
    state.register(0, "127.0.0.1", 9092)
    error, message = state.create_topic("t", 1, 1, {"kafkaref.mutants": "M1"})
    assert error == ErrorCode.invalid_config and "BrokerConfig(mutants=" in message
    answers = []
    LocalController().create_topic("t", 1, 1, {"kafkaref.mutants": "M1"},
                                   lambda error, message: answers.append(error))
    assert answers == [ErrorCode.invalid_config]


def test_a_single_broker_reopens_topics_saved_with_the_old_config(tmp_path):
    import json

    from kafkaref.impl.server.single import _saved_configs

    (tmp_path / "topic-configs.json").write_text(json.dumps(
        {"t": {"kafkaref.mutants": "M4", "min.insync.replicas": "1"}}))
    assert _saved_configs(str(tmp_path), "t") == {"min.insync.replicas": "1"}
