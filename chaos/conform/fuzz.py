"""The protocol fuzzer: random and mutated frames against a running broker (random bit flips,
truncation, huge or negative length prefixes, wrong API versions and keys, trailing garbage,
noise, batches with bad CRCs or counts). Every case comes from one seeded random.Random. The
broker must keep serving other connections and lose nothing it acknowledged. The `fuzz` check
mutates frames of Produce, Fetch, Metadata and ApiVersions at the version of its level: the
lowest, then the highest, each API's broker advertises (issue 23).

Used by the `fuzz` check (`kafkaref conform --fuzz N`) and by properties' fuzz tests.
"""

from __future__ import annotations

import concurrent.futures
import random
import socket
import struct

import attrs
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import HIGHEST, LOWEST, check
from kafkaref.chaos.conform.faults import serves
from kafkaref.chaos.conform.probe import PREFERRED, Probe, batch_now
from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.messages import build

SEED = 20261122
SETTLE_S = 0.5  # how long a fuzzed connection is given to answer or close
HEALTH_EVERY = 200  # cases between checks that a fresh connection is still served
PRODUCE, FETCH, METADATA, API_VERSIONS = 0, 1, 3, 18
# The APIs whose frames are mutated, at these versions unless a probe's level chooses (the
# properties' fuzz tests)
FUZZED = {PRODUCE: 8, FETCH: 11, METADATA: 8, API_VERSIONS: 3}


@attrs.frozen
class Frames:
    """What the valid frames are built from: each fuzzed API's version and the topic as each
    version names it (by name; by id too where the version names topics by id, KIP-516)."""

    topic: str = "fz"
    versions: dict = attrs.Factory(lambda: dict(FUZZED))
    named: dict = attrs.Factory(dict)  # api key -> {field: name, "topic_id": id}

    def topic_of(self, api_key: int, field: str) -> dict:
        return self.named.get(api_key) or {field: self.topic}


def probe_frames(probe: Probe, topic: str) -> Frames:
    """The frames of the probe's level: each fuzzed API at the version the probe sends it."""
    return Frames(topic, {k: probe.version(k) for k in FUZZED},
                  {PRODUCE: probe.named(topic, PRODUCE), FETCH: probe.named(topic, FETCH, "topic")})


def produce_frame(records_bytes, version=8, acks=1, correlation_id=1, topic="fz",
                  named: dict | None = None):
    request = build(load_request_schema(PRODUCE, version), {
        "transactional_id": None, "acks": acks, "timeout": 1000,
        "topic_data": [{**(named or {"name": topic}), "partition_data": [{
            "index": 0, "records": records_bytes}]}]})
    return wire.encode_request(correlation_id, "fuzz", request)


def damaged_batch(rng) -> bytes:
    """A batch with a wrong CRC, record count, length or magic."""
    batch = bytearray(batch_now([(None, b"x", (), None), (None, b"y", (), None)]))
    kind = rng.randrange(4)
    if kind == 0:
        batch[-1] ^= 0xFF
    elif kind == 1:
        batch[57:61] = struct.pack(">i", rng.choice([0, 5, -1, 1 << 30]))
    elif kind == 2:
        batch[8:12] = struct.pack(">i", rng.choice([len(batch) + 100, 3, -7]))
    else:
        batch[16] = rng.choice([0, 1, 3])
    return bytes(batch)


def valid_frames(rng, frames: Frames | None = None):
    """One well-formed frame of each kind, at the versions `frames` says (build drops the
    fields a version does not have)."""
    frames = frames or Frames()
    versions, produce_topic = frames.versions, frames.topic_of(PRODUCE, "name")
    batch = batch_now([(b"k", b"v" * rng.randrange(50), (), None)])
    large = batch_now([(b"k", rng.randbytes(300_000 + rng.randrange(100_000)), (), None)])
    return [
        produce_frame(batch, versions[PRODUCE], named=produce_topic),
        # > one recv(): a frame buffer lent to the request
        produce_frame(large, versions[PRODUCE], named=produce_topic),
        produce_frame(damaged_batch(rng), versions[PRODUCE], named=produce_topic),
        wire.encode_request(2, "f", build(load_request_schema(METADATA, versions[METADATA]),
                                          {"topics": None})),
        wire.encode_request(3, "f", build(load_request_schema(
            API_VERSIONS, versions[API_VERSIONS]), {
            "client_software_name": "f", "client_software_version": "1"})),
        wire.encode_request(4, "f", build(load_request_schema(FETCH, versions[FETCH]), {
            "replica_id": -1, "replica_state": {"replica_id": -1, "replica_epoch": -1},
            "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 16,
            "topics": [{**frames.topic_of(FETCH, "topic"), "partitions": [{
                "partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 16}]}]})),
    ]


def mutate(rng, frame: bytes) -> bytes:
    data = bytearray(frame)
    kind = rng.randrange(8)
    if kind == 0:  # bit flips anywhere after the size prefix
        for _ in range(rng.randrange(1, 6)):
            i = rng.randrange(4, len(data))
            data[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # truncated body, size prefix fixed up
        cut = rng.randrange(4, len(data))
        data = data[:cut]
        data[0:4] = struct.pack(">i", len(data) - 4)
    elif kind == 2:  # huge or negative length prefix
        data[0:4] = struct.pack(">i", rng.choice([1 << 30, 2**31 - 1, -1, -(2**31), 7]))
    elif kind == 3:  # wrong API version
        data[6:8] = struct.pack(">h", rng.choice([-1, 99, 1000, 12, 2]))
    elif kind == 4:  # unknown API key
        data[4:6] = struct.pack(">h", rng.choice([-5, 77, 1000, 32767]))
    elif kind == 5:  # trailing garbage, size prefix fixed up
        data += rng.randbytes(rng.randrange(1, 40))
        data[0:4] = struct.pack(">i", len(data) - 4)
    elif kind == 6:  # the frame unchanged (its own damage, if any, is the case)
        pass
    else:  # pure noise with a plausible size
        body = rng.randbytes(rng.randrange(0, 200))
        data = bytearray(struct.pack(">i", len(body)) + body)
    return bytes(data)


def send_and_settle(address: tuple[str, int], frame: bytes, settle_s: float = 1.0) -> str:
    """Send one frame on a new connection: 'answered', 'closed' or 'silent' (still open)."""
    sock = socket.create_connection(address, timeout=5)
    try:
        try:
            sock.sendall(frame)
        except (BrokenPipeError, ConnectionResetError):
            return "closed"
        sock.settimeout(settle_s)
        try:
            data = sock.recv(1 << 16)
        except TimeoutError:
            return "silent"  # e.g. a frame whose size promises more bytes than were sent
        except ConnectionResetError:
            return "closed"
        return "answered" if data else "closed"
    finally:
        sock.close()


def fuzz_frames(seed: int, cases: int, frames: Frames):
    rng = random.Random(seed)
    for _ in range(cases):
        yield mutate(rng, rng.choice(valid_frames(rng, frames)))


@check("protocol_fuzz", "fuzz", "protocol: malformed requests close their connection; Kafka "
       "never loses acknowledged data (acks=all)", deadline_s=120.0, levels=(LOWEST, HIGHEST))
def protocol_fuzz(probe: Probe):
    """After N random and mutated frames (--fuzz N, each on its own connection) the broker still
    serves a connection opened before them and new ones, and every acks=all record is intact;
    at each level, the frames mutated are of Produce, Fetch, Metadata and ApiVersions at the
    lowest (then the highest) version the broker advertises."""
    cases = int(probe.options.get("fuzz", 300))
    topic = probe.create_topic("fuzz")
    frames = probe_frames(probe, topic)
    for api_key, version in frames.versions.items():
        probe.sent(api_key, version)  # sent on raw sockets: recorded here
    acked = [b"acked-%d" % i for i in range(20)]
    for value in acked:
        probe.produce_ok(topic, batch_now([(None, value, (), None)]))
    bystander = probe.leader(topic)
    address = bystander.address
    outcomes = {"answered": 0, "closed": 0, "silent": 0, "refused": 0}
    crashes = []
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        mutated = fuzz_frames(int(probe.options.get("seed", SEED)), cases, frames)
        done = 0
        while done < cases:
            chunk = [next(mutated) for _ in range(min(HEALTH_EVERY, cases - done))]
            for result in pool.map(lambda f: _settle(address, f), chunk):
                outcomes[result] += 1
            done += len(chunk)
            if not serves(probe):
                crashes.append(done)
                if len(crashes) > 2:
                    break
    at = ", ".join(f"{PREFERRED[k][0]} v{v}" for k, v in frames.versions.items())
    report = (f"{sum(outcomes.values())} frames ({at}): {outcomes['answered']} answered, "
              f"{outcomes['closed']} connections closed, {outcomes['silent']} left open, "
              f"{outcomes['refused']} refused; {len(crashes)} crashes")
    probe.expect(not crashes, f"the broker stopped serving after case {crashes[:3]}",
                 response=report, expected="a fresh connection served after every chunk")
    answer = bystander.call(18, {"client_software_name": "c", "client_software_version": "1"})
    probe.expect(answer.error_code == ErrorCode.none, "the bystander connection is not served",
                 response=report, expected="NONE")
    # Read where the partition is led now: what is judged is that the acknowledged records
    # survive the frames, not who leads (on a loaded machine a broker's session may lapse
    # during the fuzzing, its leaderships moving; seen once in the 43-check run).
    probe.forget_leaders()
    values = [r.value for r in probe.read_all(topic, end=20)]
    probe.expect(values == acked, "acknowledged records changed or lost",
                 response=f"{report}; log starts {values[:5]}", expected="acked-0..acked-19")
    return f"{report}; the 20 acknowledged records intact"


def _settle(address, frame) -> str:
    try:
        return send_and_settle(address, frame, SETTLE_S)
    except ConnectionRefusedError:
        return "refused"
    except OSError:
        return "closed"
