"""The threaded shell over raw sockets: framing limits, malformed frames, muting, ordering."""

import socket
import struct
import time

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.connection import KafkaConnection
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.core.memory_log import MemoryLog
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build
from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.single import single_broker
from kafkaref.properties.servers import NO_RETENTION_TASK_MS, BrokerSetup
from kafkaref.properties.waiting import wait_until

TWO_THREADS_SMALL_FRAMES = pytest.mark.parametrize("broker_setup", [BrokerSetup(
    server=ServerConfig(num_network_threads=2, num_io_threads=2,
                        socket_request_max_bytes=1 << 16, connections_max_idle_ms=60_000))])


def connect(server):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    return sock


def recv_frame(sock):
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def api_versions_frame(correlation_id, version=2):
    return wire.encode_request(correlation_id, "t", build(load_request_schema(18, version), {}))


def metadata_frame(correlation_id):
    return wire.encode_request(correlation_id, "t", build(load_request_schema(3, 8), {
        "topics": None, "allow_auto_topic_creation": False}))


def assert_closed(sock):
    sock.settimeout(5)
    try:
        assert sock.recv(1) == b""
    except ConnectionResetError:
        pass


def assert_serves(server):
    sock = connect(server)
    try:
        sock.sendall(api_versions_frame(1))
        correlation_id, body = wire.decode_response(18, 2, recv_frame(sock))
        assert correlation_id == 1 and body.error_code == ErrorCode.none
    finally:
        sock.close()


@TWO_THREADS_SMALL_FRAMES
def test_pipelined_requests_are_answered_in_order(broker):
    sock = connect(broker)
    try:
        frames = b"".join(api_versions_frame(i) if i % 2 else metadata_frame(i)
                          for i in range(20))
        sock.sendall(frames)
        seen = [struct.unpack_from(">i", recv_frame(sock))[0] for _ in range(20)]
        assert seen == list(range(20))
    finally:
        sock.close()


@TWO_THREADS_SMALL_FRAMES
@pytest.mark.parametrize("garbage", [
    struct.pack(">i", 1 << 30),  # huge length prefix
    struct.pack(">i", -5),
    struct.pack(">i", 3) + b"abc",  # shorter than any header
    struct.pack(">i", 12) + b"\x7f\x7f\x00\x01\x00\x00\x00\x01\x00\x00\x00\x00",  # unknown api
    struct.pack(">i", 10) + b"\x00\x00\x00\x63\x00\x00\x00\x01\xff\xff",  # Produce v99
    struct.pack(">i", 13) + b"\x00\x03\x00\x08\x00\x00\x00\x01\x00\x01x\xff\xff",  # truncated
])
def test_malformed_frame_closes_only_that_connection(broker, garbage):
    bystander = connect(broker)
    bad = connect(broker)
    try:
        bad.sendall(garbage)
        assert_closed(bad)
        bystander.sendall(api_versions_frame(7))
        assert struct.unpack_from(">i", recv_frame(bystander))[0] == 7
        assert_serves(broker)
    finally:
        bad.close()
        bystander.close()


@TWO_THREADS_SMALL_FRAMES
def test_unknown_api_versions_version_gets_unsupported_version_v0(broker):
    sock = connect(broker)
    try:
        frame = bytearray(api_versions_frame(3, version=3))  # framed as flexible, as v77 is
        frame[6:8] = struct.pack(">h", 77)
        sock.sendall(frame)
        _, body = wire.decode_response(18, 0, recv_frame(sock))
        assert body.error_code == ErrorCode.unsupported_version
        assert {k.api_key for k in body.api_keys} == {18}  # ApiVersions' own range (KIP-511)
        sock.sendall(api_versions_frame(4))  # and the connection stays usable
        assert struct.unpack_from(">i", recv_frame(sock))[0] == 4
    finally:
        sock.close()


@TWO_THREADS_SMALL_FRAMES
def test_unknown_api_versions_version_with_a_header_of_the_wrong_shape_is_closed(broker):
    """v77 implies request header v2 (ApiVersions is flexible from v3); a v1 header there does
    not parse, and Apache Kafka 4.3.1 closes such a connection (RequestHeader.parse)."""
    sock = connect(broker)
    try:
        frame = bytearray(api_versions_frame(3, version=0))  # header v1 and an empty v0 body
        frame[6:8] = struct.pack(">h", 77)
        sock.sendall(frame)
        assert_closed(sock)
    finally:
        sock.close()


def test_idle_connections_are_closed(tmp_path):
    config = ServerConfig(num_network_threads=1, num_io_threads=1, connections_max_idle_ms=200,
                          select_timeout_ms=20)
    server = single_broker("", config, log_factory=lambda key: MemoryLog()).start()
    try:
        sock = connect(server)
        sock.sendall(api_versions_frame(1))
        recv_frame(sock)
        wait_until(lambda: not server.network_threads[0].connections, timeout_s=5,
                   what="the idle connection closed")
        assert not server.network_threads[0].connections
        assert_closed(sock)
        sock.close()
    finally:
        server.shutdown()


def fetch_then_api_versions_order(server):
    """Pipeline a fetch parked in purgatory (min_bytes unreachable, 1.5 s) and an ApiVersions;
    return the correlation ids in the order the answers arrive."""
    sock = connect(server)
    try:
        fetch = wire.encode_request(1, "t", build(load_request_schema(1, 11), {
            "replica_id": -1, "max_wait": 1500, "min_bytes": 1 << 20, "max_bytes": 1 << 20,
            "topics": [{"topic": "p", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                      "partition_max_bytes": 1 << 20}]}]}))
        sock.sendall(fetch + api_versions_frame(2))
        return [struct.unpack_from(">i", recv_frame(sock))[0] for _ in range(2)]
    finally:
        sock.close()


@pytest.mark.parametrize("mutants, expected", [((), [1, 2]), ({"M9"}, [2, 1])])
def test_muting_keeps_responses_in_request_order(mutants, expected):
    config = ServerConfig(num_network_threads=1, num_io_threads=2, mutants=mutants)
    server = single_broker("", config, log_factory=lambda key: MemoryLog()).start()
    try:
        with server.lock:
            server.broker.create_topic("p", 1, 1, {}, lambda error, message: None)
        assert fetch_then_api_versions_order(server) == expected
    finally:
        server.shutdown()


def test_connections_over_the_limit_are_refused():
    config = ServerConfig(num_network_threads=1, num_io_threads=1, max_connections=2)
    server = single_broker("", config, log_factory=lambda key: MemoryLog()).start()
    socks = []
    try:
        socks = [connect(server) for _ in range(2)]
        for i, sock in enumerate(socks):
            sock.sendall(api_versions_frame(i))
            recv_frame(sock)
        extra = connect(server)
        socks.append(extra)
        assert_closed(extra)
        assert_serves_on(socks[0])
    finally:
        for sock in socks:
            sock.close()
        server.shutdown()


def assert_serves_on(sock):
    sock.sendall(api_versions_frame(9))
    assert struct.unpack_from(">i", recv_frame(sock))[0] == 9


def test_full_request_queue_blocks_network_threads_then_drains():
    config = ServerConfig(num_network_threads=1, num_io_threads=1, queued_max_requests=1)
    server = single_broker("", config, log_factory=lambda key: MemoryLog()).start()
    socks = []
    try:
        with server.lock:  # the I/O thread blocks on the core: nothing leaves the queue
            socks = [connect(server) for _ in range(5)]
            for i, sock in enumerate(socks):
                sock.sendall(api_versions_frame(i))
            wait_until(lambda: server.requests.qsize() >= 1, timeout_s=5, what="a queued request")
            assert server.requests.qsize() == 1  # the rest wait in the blocked network thread
        for i, sock in enumerate(socks):  # released: every request is answered
            assert struct.unpack_from(">i", recv_frame(sock))[0] == i
    finally:
        for sock in socks:
            sock.close()
        server.shutdown()


def produce_frame(correlation_id, value: bytes, acks=1):
    from kafkaref.impl.protocol.records import NewRecord, build_batch

    batch = build_batch([NewRecord(value=value, timestamp=1)])
    return wire.encode_request(correlation_id, "t", build(load_request_schema(0, 8), {
        "transactional_id": None, "acks": acks, "timeout": 5000,
        "topic_data": [{"name": "p", "partition_data": [{"index": 0, "records": batch}]}]}))


@pytest.mark.parametrize("mutants", [(), {"M9"}])
def test_pipelined_large_produces_keep_their_own_bytes(tmp_path, mutants):
    """Large frames are received into a buffer the request's records are views of (no copy);
    the next frame must not overwrite it before the response is out. Each pipelined batch
    must come back with its own bytes, muted or not (M9), and the buffers held stay bounded."""
    from kafkaref.impl.storage.log import Log

    config = ServerConfig(num_network_threads=1, num_io_threads=2, mutants=mutants)
    server = single_broker("", config, log_factory=lambda key: Log(str(tmp_path / "p"))).start()
    try:
        with server.lock:
            server.broker.create_topic("p", 1, 1, {}, lambda error, message: None)
        values = [bytes([i]) * (200_000 - i) for i in range(6)]  # each fits the last buffer
        sock = connect(server)
        try:
            with server.lock:  # the I/O threads wait: unmuted (M9), every frame gets read
                wait_until(lambda: server.network_threads[0].connections, what="the connection")
                (connection,) = server.network_threads[0].connections.values()
                for i, value in enumerate(values):  # a frame's head first, so that its rest
                    frame = produce_frame(i, value)  # is received into the frame buffer
                    send_in_two_writes(sock, connection, frame)
            answers = [wire.decode_response(0, 8, recv_frame(sock))[1] for _ in values]
        finally:
            sock.close()
        assert all(a.responses[0].partition_responses[0].error_code == 0 for a in answers)
        with server.lock:
            data = server.broker.replica_manager.partition(("p", 0)).log.read(0, 1 << 24)
        from kafkaref.impl.protocol.records import decode_batch, split_batches

        _, views = split_batches(data)
        stored = sorted(r.value for v in views for r in decode_batch(v).records)
        assert stored == sorted(values)
        assert server.network_threads[0]._frame_bytes <= 2 * max(map(len, values)) + 4096
    finally:
        server.shutdown()


def send_in_two_writes(sock, connection, frame: bytes, head: int = 1000) -> None:
    """Write a large frame's head, wait until the network thread has taken it (it then receives
    the rest into a frame buffer) or holds the connection muted, then write the rest and wait
    until the frame is whole. Conditions, not sleeps: the two writes are two reads however
    loaded the machine is."""
    sock.sendall(frame[:head])
    wait_until(lambda: connection.muted or connection.frame is not None, what="the frame's head")
    sock.sendall(frame[head:])
    wait_until(lambda: connection.muted or connection.frame is None, what="the whole frame")


def parked_fetch(max_wait_ms: int) -> bytes:
    """A fetch that cannot be satisfied (min_bytes unreachable): answered at max_wait_ms."""
    return wire.encode_request(1, "t", build(load_request_schema(1, 11), {
        "replica_id": -1, "max_wait": max_wait_ms, "min_bytes": 1 << 20, "max_bytes": 1 << 20,
        "topics": [{"topic": "p", "partitions": [{"partition": 0, "fetch_offset": 0,
                                                  "partition_max_bytes": 1 << 20}]}]}))


def not_answered_yet(sock) -> bool:
    """True while nothing has arrived on sock (and it is still open)."""
    sock.setblocking(False)
    try:
        sock.recv(1, socket.MSG_PEEK)  # an answer, or b"" if closed: either way not waiting
        return False
    except BlockingIOError:
        return True
    finally:
        sock.setblocking(True)


def test_parked_fetches_expire_on_time_with_the_ticker_asleep():
    """The ticker sleeps until the next purgatory deadline (here for up to 10 min): a fetch
    parked meanwhile, alone or due before one already parked, must wake it and be answered at
    its max_wait, not at the ticker's next wake-up. No wall-clock upper bound: the ticker would
    otherwise sleep for minutes (the socket timeout fails the test first), and the earlier
    fetch must be answered while the later one (a minute) is still parked."""
    config = ServerConfig(num_network_threads=1, num_io_threads=2, tick_max_ms=600_000)
    # ISR checks run at the multiples of half the lag time on the monotonic clock (ReplicaManager.
    # run_isr_checks), not counted from the start: at 10 min, one was due within a minute of
    # the start whenever the machine's uptime was 9 to 10 min past a multiple of 10 min, and
    # "the ticker asleep" below timed out (1 run in 20). At this lag time none is due for years.
    # The retention task's first run (log.initial.task.delay.ms, Kafka's 30 s) is a deadline
    # too: with it the ticker slept at most until then, and "the ticker asleep" took the 30 s
    # of its wait, timing out on a loaded machine. A day late here, as the fixtures start it.
    broker_config = BrokerConfig(replica_lag_time_max_ms=2 * 10**12,
                                 log_initial_task_delay_ms=NO_RETENTION_TASK_MS)
    server = single_broker("", config, broker_config, log_factory=lambda key: MemoryLog()).start()
    long_wait = connect(server)
    try:
        with server.lock:
            server.broker.create_topic("p", 1, 1, {}, lambda error, message: None)
        # The ticker asleep with nothing parked: it plans to wake after the sockets' timeout.
        wait_until(lambda: (server.ticker_wakes_at_ms or 0) > server.clock.monotonic_ms() + 60_000,
                   what="the ticker asleep")
        for max_wait_ms in (250, 120):  # the first alone; the second before the 60 s one below
            sock = connect(server)
            sock.settimeout(60)  # bounds a failing run only
            try:
                started = time.monotonic()
                sock.sendall(parked_fetch(max_wait_ms))
                recv_frame(sock)
                waited_ms = (time.monotonic() - started) * 1000
            finally:
                sock.close()
            assert max_wait_ms - 5 <= waited_ms, waited_ms
            assert not_answered_yet(long_wait)
            long_wait.sendall(parked_fetch(60_000))  # parked from now on: a later deadline
    finally:
        long_wait.close()
        server.shutdown()


def test_describe_groups_names_a_members_host_as_kafka_does(broker):
    """The server passes the connection's peer with each request: Kafka's client_host is
    InetAddress.toString, "/127.0.0.1" for a loopback client."""
    with KafkaConnection("127.0.0.1", broker.port) as conn:
        wait_until(lambda: conn.send(10, 0, {"key": "hosts"}).error_code == ErrorCode.none,
                   timeout_s=10)  # the group's coordinator is ready
        joined = conn.send(11, 0, {
            "group_id": "hosts", "member_id": "", "session_timeout": 30_000,
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b"\0"}]})
        assert joined.error_code == ErrorCode.none
        [group] = conn.send(15, 0, {"groups": ["hosts"]}).groups
    assert [m.client_host for m in group.members] == ["/127.0.0.1"]
