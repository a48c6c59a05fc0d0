"""The model explorer's bounds when an option is left out are the ones `kafkaref explore`
documents (commands/explore.py's defaults: --max-records 2, --max-epoch 2, --ticks 1, --crashes 1,
--reads 1; no flushes, elections on, acks=all produces only, no refinement check), so a caller
of model/explore_target.build that passes fewer options explores what the command would.

Found by mutation testing (session 79fa682's survivor 00326: the records bound left out read as 1
passed the model layer). The cluster it explores is one partition on every broker (the events
it tries name partition 0 only: a second partition would sit idle in every state and add states
of its own: 12,980 instead of 12,860 for two replicas, a record, epochs to 2, a tick, a crash
and a read; the fresh sample's 00085)."""

import pytest

from kafkaref.model import events as ev
from kafkaref.model.config import ClusterConfig
from kafkaref.model.explore_target import LAG_MS, Limits, config_from_options, limits_from_options


def test_left_out_options_are_the_commands_documented_defaults():
    assert limits_from_options({}) == Limits(
        records=2, max_epoch=2, ticks=1, crashes=1, reads=1, flushes=False, elections=True,
        acks=(ev.ACKS_ALL,), refinement=False)


@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
def test_the_explored_cluster_is_one_partition_on_every_broker(replicas):
    options = {} if replicas == 3 else {"replicas": replicas}
    assert config_from_options(options) == ClusterConfig(
        brokers=replicas, partitions=1, replication_factor=replicas,
        min_insync_replicas=min(2, replicas), unclean_leader_election=False,
        replica_lag_time_max_ms=LAG_MS, flush_interval_messages=None, bugs=frozenset())
