"""A single broker (`kafkaref broker`) restarted on its data directory reopens its topics with
the configs they were created with (data_dir/topic-configs.json), leaving out only the reserved
names an older kafkaref saved there (kafkaref.mutants: dropped, so the topic still reopens).

Found by mutation testing (session 79fa682's survivor 00228: the filter negated, so a restarted
broker kept only the reserved names and forgot every override)."""

import json
import os

from kafkaref.impl.core.topic_rules import RESERVED_CONFIG_PREFIX
from kafkaref.impl.server.single import single_broker


def overrides_after_restart(data_dir: str, configs: dict[str, str], saved_extra: dict) -> dict:
    first = single_broker(data_dir)
    answers = []
    with first.lock:
        first.broker.create_topic("t", 2, 1, configs, lambda error, _: answers.append(error))
    assert answers == [0]
    first.shutdown()
    path = os.path.join(data_dir, "topic-configs.json")
    with open(path) as f:
        saved = json.load(f)
    saved["t"].update(saved_extra)
    with open(path, "w") as f:
        json.dump(saved, f)
    again = single_broker(data_dir)
    try:
        topic = again.broker.metadata.topic("t")
        assert len(topic.partitions) == 2
        return dict(topic.configs)
    finally:
        again.shutdown()


def test_a_restarted_broker_keeps_its_topics_configs(tmp_path):
    configs = {"retention.ms": "1000", "cleanup.policy": "compact"}
    reserved = {RESERVED_CONFIG_PREFIX + "mutants": "M1"}
    assert overrides_after_restart(str(tmp_path), configs, reserved) == configs


def test_a_restart_reopens_partition_folders_only(tmp_path):
    """What else a data directory holds (a folder that is no partition, such as lost+found; a
    file named like one) is no topic: the broker reopens its real topic and nothing else."""
    first = single_broker(str(tmp_path))
    answers = []
    with first.lock:
        first.broker.create_topic("t", 1, 1, {}, lambda error, _: answers.append(error))
    assert answers == [0]
    first.shutdown()
    os.mkdir(tmp_path / "lost+found")
    (tmp_path / "notes-1").write_text("not a partition")
    again = single_broker(str(tmp_path))
    try:
        assert sorted(t.name for t in again.broker.metadata.topics) == ["t"]
    finally:
        again.shutdown()
