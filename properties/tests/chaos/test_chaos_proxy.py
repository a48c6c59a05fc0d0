"""The proxy mesh: forwards both ways, holds a cut direction's bytes until heal (nothing lost,
nothing reordered), delays, refuses, and follows a retargeted link."""

from __future__ import annotations

import socket
import time

import pytest

from kafkaref.chaos.proxy import Fault, ProxyMesh
from kafkaref.properties.servers import tcp_server


@pytest.fixture
def echo():
    """An echo server on an ephemeral port; yields its address."""

    def echo_connection(conn):
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    port, stop = tcp_server(echo_connection)
    yield ("127.0.0.1", port)
    stop()


@pytest.fixture
def mesh():
    with ProxyMesh() as mesh:
        yield mesh


def _connect(link, timeout=2.0):
    sock = socket.create_connection(("127.0.0.1", link.port), timeout=timeout)
    return sock


def _read(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def test_forwards_both_ways(mesh, echo):
    link = mesh.add("l", echo)
    with _connect(link) as sock:
        payload = bytes(range(256)) * 4000
        sock.sendall(payload)
        assert _read(sock, len(payload)) == payload


def test_cut_holds_bytes_until_heal(mesh, echo):
    link = mesh.add("l", echo)
    with _connect(link, timeout=0.3) as sock:
        sock.sendall(b"before")
        assert _read(sock, 6) == b"before"
        mesh.set_fault("l", Fault(cut_up=True))
        sock.sendall(b"during")
        with pytest.raises(TimeoutError):
            sock.recv(10)
        mesh.heal()
        sock.settimeout(2)
        assert _read(sock, 6) == b"during"


def test_one_way_cut_of_answers(mesh, echo):
    link = mesh.add("l", echo)
    mesh.set_fault("l", Fault(cut_down=True))
    with _connect(link, timeout=0.3) as sock:
        sock.sendall(b"ping")
        with pytest.raises(TimeoutError):
            sock.recv(10)
        mesh.set_fault("l", Fault())
        sock.settimeout(2)
        assert _read(sock, 4) == b"ping"


def test_delay(mesh, echo):
    link = mesh.add("l", echo)
    mesh.set_fault("l", Fault(delay_ms=150))
    with _connect(link) as sock:
        started = time.monotonic()
        sock.sendall(b"x")
        assert _read(sock, 1) == b"x"
        assert time.monotonic() - started >= 0.29  # delayed both ways


def test_refuse_closes_connections(mesh, echo):
    link = mesh.add("l", echo)
    with _connect(link) as sock:
        mesh.set_fault("l", Fault(refuse=True))
        assert _read(sock, 1) == b""
    with _connect(link) as sock:
        assert _read(sock, 1) == b""


def test_target_down_closes_client_and_retarget_follows(mesh, echo):
    dead = socket.create_server(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()
    link = mesh.add("l", ("127.0.0.1", port))
    with _connect(link) as sock:
        assert _read(sock, 1) == b""
    mesh.retarget("l", echo)
    with _connect(link) as sock:
        sock.sendall(b"ok")
        assert _read(sock, 2) == b"ok"
