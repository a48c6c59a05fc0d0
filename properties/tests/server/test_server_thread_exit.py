"""A broker process whose main thread ends without shutting the server down (an uncaught error
in whatever started it) exits: every thread the server starts is a daemon, so none holds the
interpreter open at exit. A non-daemon thread loops until `stopping`, which nobody sets then,
and the process would hang instead of dying (and its port stay taken).

Found by mutation testing (docs/mutation.md, session 79fa682's 00017): a network thread made
non-daemon passed every server test."""

import subprocess
import sys
import textwrap

EXIT_WAIT_S = 60  # a child imports kafkaref and starts a broker: seconds on a loaded machine

CHILD = textwrap.dedent("""
    import socket, sys
    from kafkaref.impl.server.config import ServerConfig
    from kafkaref.impl.server.single import single_broker

    server = single_broker(sys.argv[1], ServerConfig(num_network_threads=2, num_io_threads=2))
    server.start()
    # one connection open, so the network threads have a peer to serve
    client = socket.create_connection(("127.0.0.1", server.port))
    print("started", flush=True)
    # the main thread ends here, without server.shutdown()
""")


def test_a_started_broker_does_not_keep_its_process_alive(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = child.communicate(timeout=EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise AssertionError(f"the process did not exit within {EXIT_WAIT_S} s of its main "
                             "thread ending: a server thread holds it open") from None
    assert "started" in out, err
    assert child.returncode == 0, err
