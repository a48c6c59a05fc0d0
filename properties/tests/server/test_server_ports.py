"""The broker's port for port 0 lies below the kernel's ephemeral range, so no outgoing connection
can take it while the broker is down, and a restart binds it again."""

import socket

from kafkaref.impl.server import ports


def test_port_zero_is_below_the_ephemeral_range():
    start = ports.ephemeral_range_start()
    with ports.listen("127.0.0.1", 0) as sock:
        port = sock.getsockname()[1]
    if start is not None and start > ports.LOWEST_PORT:
        assert ports.LOWEST_PORT <= port < start


def test_a_closed_listener_port_binds_again():
    sock = ports.listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    with socket.create_connection(("127.0.0.1", port)):
        pass
    sock.close()
    with ports.listen("127.0.0.1", port) as again:
        assert again.getsockname()[1] == port


def test_without_the_range_file_the_kernel_chooses(monkeypatch, tmp_path):
    monkeypatch.setattr(ports, "RANGE_FILE", str(tmp_path / "absent"))
    assert ports.ephemeral_range_start() is None
    with ports.listen("127.0.0.1", 0) as sock:
        assert sock.getsockname()[1] > 0


def test_a_taken_candidate_is_skipped(monkeypatch):
    """Every candidate but the last is taken: the listener still comes up, on the free one."""
    taken = [ports.listen("127.0.0.1", 0) for _ in range(3)]
    free = ports.listen("127.0.0.1", 0)
    free_port = free.getsockname()[1]
    free.close()
    candidates = [s.getsockname()[1] for s in taken] + [free_port]
    monkeypatch.setattr(ports.random, "sample", lambda population, k: candidates)
    try:
        with ports.listen("127.0.0.1", 0) as sock:
            assert sock.getsockname()[1] == free_port
    finally:
        for s in taken:
            s.close()


def test_the_ephemeral_range_starts_at_the_files_first_number(monkeypatch, tmp_path):
    """The kernel's file holds "first<TAB>last" (net.ipv4.ip_local_port_range); the broker
    stays below the first (found by mutation testing: reading the last passed every test)."""
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("32768\t60999\n")
    monkeypatch.setattr(ports, "RANGE_FILE", str(range_file))
    assert ports.ephemeral_range_start() == 32768
