"""The proxied cluster: a broker restarted from another thread outlives that thread."""

from __future__ import annotations

import signal
import threading

from kafkaref.chaos.cluster import ProxiedCluster


def test_broker_restarted_by_a_thread_survives_the_thread(tmp_path):
    """PR_SET_PDEATHSIG follows the thread that forked a broker: brokers the nemesis thread
    restarted were SIGTERMed when it ended, and every partition went offline at the end of
    a run. Brokers are now forked by the cluster's one launcher thread."""
    with ProxiedCluster(1, str(tmp_path)) as cluster:
        cluster.signal(0, signal.SIGKILL)
        restarter = threading.Thread(target=cluster.start_broker, args=(0,))
        restarter.start()
        restarter.join()
        # Registering takes the broker its whole start-up, long after the restarter thread's
        # exit would have delivered a SIGTERM: alive once registered means it was never sent.
        cluster.wait_registered({0}, timeout_s=30)
        assert cluster.alive(0)
