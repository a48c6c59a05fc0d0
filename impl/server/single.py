"""A single broker (RF 1) with its in-process control plane: what `kafkaref broker` runs."""

from __future__ import annotations

from kafkaref.impl.clock import SYSTEM_CLOCK, Clock
from kafkaref.impl.controller.local import LocalController
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.core.topic_rules import RESERVED_CONFIG_PREFIX
from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.server import KafkaServer, producer_id_file, storage_log_factory
from kafkaref.impl.storage.log import recorded_topic_id


def single_broker(data_dir: str, server_config: ServerConfig = ServerConfig(),  # noqa: B008
                  broker_config: BrokerConfig = BrokerConfig(),  # noqa: B008
                  log_factory=None, clock: Clock = SYSTEM_CLOCK) -> KafkaServer:
    """Build (not start) a broker serving on server_config.host:port (0 = ephemeral); its core
    and its logs run on the one `clock`."""
    server = KafkaServer(broker_config, server_config,
                         log_factory or storage_log_factory(
                             data_dir, clock=clock, mutants=broker_config.mutants), clock=clock,
                         producer_id_file=producer_id_file(data_dir))
    server.broker.log_dir = data_dir or None
    controller = LocalController(controller_id=broker_config.broker_id)
    with server.lock:
        controller.register(server.broker, server_config.host, server.port)
        _reopen_existing_topics(server, controller, data_dir)
    server.controller = controller
    if data_dir:
        _save_configs_on_create(server, controller, data_dir)
    return server


def _save_configs_on_create(server, controller, data_dir) -> None:
    """Topic configs survive a restart in data_dir/topic-configs.json: written on CreateTopics
    and AlterConfigs, dropped on DeleteTopics (a topic created again starts with none)."""
    broker = server.broker
    create, alter, delete = (controller.create_topic, controller.alter_topic_configs,
                             controller.delete_topic)

    def saving(topic, configs, done):
        def saved(error, message):
            if error == 0:
                _save_config(data_dir, topic, configs)
            done(error, message)
        return saved

    def create_and_save(name, partitions, replication_factor, configs, done, assignment=None):
        done = saving(name, configs, done) if configs else done
        if assignment:
            create(name, partitions, replication_factor, configs, done, assignment=assignment)
        else:
            create(name, partitions, replication_factor, configs, done)

    broker.create_topic = create_and_save
    broker.alter_topic_configs = lambda name, configs, done: alter(
        name, configs, saving(name, configs, done))
    broker.delete_topic = lambda name, done: delete(name, saving(name, None, done))


def _save_config(data_dir, topic, configs) -> None:
    """configs None: forget the topic."""
    import json
    import os

    path = os.path.join(data_dir, "topic-configs.json")
    saved = {}
    if os.path.exists(path):
        with open(path) as f:
            saved = json.load(f)
    if configs is None:
        saved.pop(topic, None)
    else:
        saved[topic] = dict(configs)
    with open(path + ".tmp", "w") as f:
        json.dump(saved, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def _reopen_existing_topics(server, controller, data_dir) -> None:
    """After a restart, topics are rediscovered from partition directories (RF 1 only)."""
    import os
    import re

    found: dict[str, int] = {}
    ids: dict[str, str | None] = {}
    if not data_dir or not os.path.isdir(data_dir):
        return
    for name in os.listdir(data_dir):
        match = re.fullmatch(r"(.+)-(\d+)", name)
        if match and os.path.isdir(os.path.join(data_dir, name)):
            topic, index = match.group(1), int(match.group(2))
            found[topic] = max(found.get(topic, 0), index + 1)
            ids.setdefault(topic, recorded_topic_id(os.path.join(data_dir, name)))
    for topic, partitions in sorted(found.items()):
        # the id its directories recorded: the same topic again, not a stray of a deleted one
        controller.create_topic(topic, partitions, 1, _saved_configs(data_dir, topic),
                                lambda error, message: None, topic_id=ids[topic])


def _saved_configs(data_dir, topic) -> dict:
    import json
    import os

    path = os.path.join(data_dir, "topic-configs.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        saved = json.load(f).get(topic, {})
    # written before reserved names were refused (kafkaref.mutants): dropped, not refused, so
    # the topic still reopens
    return {k: v for k, v in saved.items() if not k.startswith(RESERVED_CONFIG_PREFIX)}
