"""Broker processes outlive the thread that (re)started them: PR_SET_PDEATHSIG follows the
forking *thread*, so every broker is forked by local_cluster's one launcher thread."""

import subprocess
import sys
import threading

from kafkaref.impl.server.local_cluster import popen_dying_with_us


def test_a_child_started_from_a_short_lived_thread_survives_that_thread():
    started = []
    thread = threading.Thread(target=lambda: started.append(popen_dying_with_us(
        [sys.executable, "-c", "import time; time.sleep(60)"])))
    thread.start()
    thread.join()
    child = started[0]
    try:
        # Had the short-lived thread forked it, SIGTERM would arrive as that thread exits.
        try:
            child.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
        assert child.poll() is None, f"child ended with {child.returncode}"
    finally:
        child.kill()
        child.wait(5)
