"""LocalCluster waits for its brokers to register with the controller: it returns once they
have, and says which did not when its time runs out. Found by mutation testing
(docs/mutation.md): the wait's loop negated (never waiting at all) passed the server layer, whose
tests start brokers one by one; only the cluster layer started a LocalCluster."""

import time

import pytest

from kafkaref.properties.servers import ClusterSetup, running_cluster


def test_a_local_cluster_waits_for_its_brokers_and_names_the_missing(tmp_path):
    with running_cluster(ClusterSetup(brokers=1), str(tmp_path)) as cluster:
        cluster.wait_registered({0}, timeout_s=10)  # registered: returns at once
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"brokers \[7\] did not register"):
            cluster.wait_registered({7}, timeout_s=0.3)
        assert time.monotonic() - started >= 0.3  # it waited its time out
