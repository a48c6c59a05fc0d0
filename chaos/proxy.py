"""A TCP proxy mesh on 127.0.0.1 that a cluster is wired through, so links can be cut.

Every link is one listening port forwarding to one target (a broker or the controller). Clients
reach broker j through its client link, broker i fetches from broker j through the pair link
(i, j), broker i talks to the controller through its controller link. The nemesis changes a
link's Fault:

- cut one direction (or both): the proxy stops reading that direction's bytes, so they stay in
  the kernel's buffers the way packets a partition drops are retransmitted: nothing is lost or
  reordered inside a TCP stream, the far side just hears nothing (and times out), and on heal
  the stream resumes. A FIN is held back the same way.
- delay: bytes are forwarded delay_ms after they were read.
- refuse: existing connections are closed and new ones closed on accept (a REJECT rule).
- corrupt_produce: a share of the Produce requests going up get one bit flipped in the value
  of their last record (the bit a network or a NIC could flip; TCP's checksum is weak): a
  correct broker refuses the batch (its CRC no longer matches: CORRUPT_MESSAGE), a broker that
  skips the check serves a value nobody wrote. Frames are followed in every up direction, so
  a fault set mid-stream still knows where each request ends.

One selector thread serves every link (tens of connections): no thread per connection.
A link whose target is down closes the client side, as a refused connection would.
"""

from __future__ import annotations

import collections
import errno
import logging
import random
import selectors
import socket
import struct
import threading
import time
import traceback

import attrs

log = logging.getLogger(__name__)
HOST = "127.0.0.1"
CHUNK = 256 * 1024
# Bytes a direction holds (delayed or unsent) before the proxy stops reading it: a bound on the
# proxy's memory whatever the traffic, and backpressure to the sender as TCP would give.
HELD_MAX = 4 * 1024 * 1024


@attrs.frozen
class Fault:
    """What a link does to its traffic. up: client -> target, down: target -> client."""

    cut_up: bool = False
    cut_down: bool = False
    delay_ms: int = 0
    refuse: bool = False
    corrupt_produce: float = 0.0  # the share of Produce requests corrupted


    @property
    def healthy(self) -> bool:
        return self == HEALTHY


HEALTHY = Fault()


# A Produce request (non-flexible versions, one record per batch as the chaos producers send)
# ends with its last record's value (8 bytes) and its header count (one byte, 0): the value's
# most significant byte is 9 bytes before the frame's end. Bit 62 is set in no value a chaos
# producer writes (process << 32 | sequence), so the flipped value is one nobody sent.
_VALUE_MSB_FROM_END, _FLIP = 9, 0x40
PRODUCE = 0


class _Frames:
    """Kafka request frames (4-byte size, then api key) followed across a byte stream."""

    __slots__ = ("head", "left", "corrupt")

    def __init__(self):
        self.head = bytearray()  # the size and api key of the next frame, as they arrive
        self.left = 0  # bytes of the current frame still to come
        self.corrupt = False  # flip a bit of the current frame's value when its end arrives

    def scan(self, data: bytes, corrupt_share: float, rng: random.Random) -> bytes:
        """data, with the value bit flipped in the Produce requests chosen for corruption."""
        out, i = None, 0
        while i < len(data):
            if self.left == 0:
                take = data[i:i + 6 - len(self.head)]
                self.head += take
                i += len(take)
                if len(self.head) == 6:
                    size, api_key = struct.unpack(">ih", self.head)
                    self.head.clear()
                    self.left = max(0, size - 2)
                    self.corrupt = api_key == PRODUCE and corrupt_share > 0 and \
                        rng.random() < corrupt_share
                continue
            end = i + min(self.left, len(data) - i)
            self.left -= end - i
            if self.corrupt and self.left == 0 and end - _VALUE_MSB_FROM_END >= 0:
                out = out if out is not None else bytearray(data)
                out[end - _VALUE_MSB_FROM_END] ^= _FLIP
            i = end
        return data if out is None else bytes(out)


class _Direction:
    """Bytes read from src, waiting (until their release time) to be written to dst."""

    __slots__ = ("src", "dst", "held", "held_bytes", "eof", "shut", "frames")

    def __init__(self, src: socket.socket, dst: socket.socket, frames: bool = False):
        self.src, self.dst = src, dst
        self.held: collections.deque = collections.deque()  # (release time, memoryview)
        self.held_bytes = 0
        self.eof = False  # src sent FIN; propagate once held bytes are out
        self.shut = False
        self.frames = _Frames() if frames else None  # requests followed (the up direction)


class _Pair:
    def __init__(self, link: Link, client: socket.socket, upstream: socket.socket):
        self.link = link
        self.client, self.upstream = client, upstream
        self.connected = False  # the non-blocking connect to the target finished
        self.up = _Direction(client, upstream, frames=True)
        self.down = _Direction(upstream, client)
        self.closed = False


class Link:
    """One listening port forwarding to a target address the mesh can change (a restart)."""

    def __init__(self, name: str, target: tuple[str, int] | None = None):
        self.name = name
        self.target = target
        self.fault = HEALTHY
        self.listener = socket.create_server((HOST, 0))
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.accepted = 0

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"


def _is_cut(pair: _Pair, direction: _Direction) -> bool:
    """Whether the link's current fault cuts this direction (held, not forwarded)."""
    fault = pair.link.fault
    return fault.cut_up if direction is pair.up else fault.cut_down


class ProxyMesh:
    """Links served by one selector thread. Thread-safe control: add, retarget, set_fault."""

    def __init__(self):
        self.links: dict[str, Link] = {}
        self._pairs: list[_Pair] = []
        self._lock = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, ("wake", None))
        self._stopping = threading.Event()
        self.errors: list[str] = []  # tracebacks of failed rounds (a bug to fix, not noise)
        self.rng = random.Random(0)  # which Produce requests a corrupt_produce fault hits
        self._thread = threading.Thread(target=self._loop, daemon=True, name="chaos-proxy")
        self._thread.start()

    # -- control ------------------------------------------------------------------------------
    def add(self, name: str, target: tuple[str, int] | None = None) -> Link:
        link = Link(name, target)
        with self._lock:
            self.links[name] = link
            self._selector.register(link.listener, selectors.EVENT_READ, ("accept", link))
        self._wake()
        return link

    def retarget(self, name: str, target: tuple[str, int]) -> None:
        """New connections go to target (a restarted broker's new port)."""
        with self._lock:
            self.links[name].target = target

    def set_fault(self, name: str, fault: Fault) -> None:
        with self._lock:
            self.links[name].fault = fault
        self._wake()

    def heal(self) -> None:
        with self._lock:
            for link in self.links.values():
                link.fault = HEALTHY
        self._wake()

    def faulty(self) -> dict[str, Fault]:
        with self._lock:
            return {n: k.fault for n, k in self.links.items() if not k.fault.healthy}

    def close(self) -> None:
        self._stopping.set()
        self._wake()
        self._thread.join(5)
        for pair in self._pairs:
            self._close_pair(pair)
        for link in self.links.values():
            link.listener.close()
        self._wake_r.close()
        self._wake_w.close()
        self._selector.close()

    def __enter__(self) -> ProxyMesh:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    # -- the loop -----------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self._round()
            except Exception:  # noqa: BLE001 -- the mesh must outlive one bad connection
                self.errors.append(traceback.format_exc())
                log.exception("proxy mesh round failed")

    def _round(self) -> None:
        with self._lock:
            timeout = self._arm()
        for key, events in self._selector.select(timeout):
            kind, item = key.data
            if kind == "wake":
                try:
                    self._wake_r.recv(4096)
                except OSError:
                    pass
            elif kind == "accept":
                self._accept(item)
            else:
                self._serve(item, key.fileobj, events)
        self._release()

    def _arm(self) -> float:
        """Set each socket's interest from its pair's state; the time to the next release."""
        now = time.monotonic()
        next_release = 0.5
        self._pairs = [p for p in self._pairs if not p.closed]
        for pair in self._pairs:
            fault = pair.link.fault
            if fault.refuse:
                self._close_pair(pair)
                continue
            interest = {pair.client: 0, pair.upstream: 0}
            if not pair.connected:
                interest[pair.upstream] = selectors.EVENT_WRITE
            else:
                for direction, cut in ((pair.up, fault.cut_up), (pair.down, fault.cut_down)):
                    if not cut and not direction.eof and direction.held_bytes < HELD_MAX:
                        interest[direction.src] |= selectors.EVENT_READ
                    if direction.held and not cut:
                        wait = direction.held[0][0] - now
                        if wait <= 0:
                            interest[direction.dst] |= selectors.EVENT_WRITE
                        else:
                            next_release = min(next_release, wait)
            for sock, mask in interest.items():
                self._set_interest(sock, mask, pair)
        return next_release

    def _set_interest(self, sock: socket.socket, mask: int, pair: _Pair) -> None:
        try:
            registered = self._selector.get_key(sock).events
        except KeyError:
            registered = 0
        if mask == registered:
            return
        if not mask:
            self._selector.unregister(sock)
        elif not registered:
            self._selector.register(sock, mask, ("pair", pair))
        else:
            self._selector.modify(sock, mask, ("pair", pair))

    def _accept(self, link: Link) -> None:
        while True:
            try:
                client, _ = link.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            link.accepted += 1
            if link.fault.refuse or link.target is None:
                client.close()
                continue
            client.setblocking(False)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            upstream.setblocking(False)
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            code = upstream.connect_ex(link.target)
            pair = _Pair(link, client, upstream)
            if code not in (0, errno.EINPROGRESS):
                self._close_pair(pair)
                continue
            self._pairs.append(pair)

    def _serve(self, pair: _Pair, sock: socket.socket, events: int) -> None:
        if pair.closed:
            return
        if not pair.connected:
            if sock is pair.upstream and events & selectors.EVENT_WRITE:
                if pair.upstream.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    self._close_pair(pair)  # the target refused: so do we
                else:
                    pair.connected = True
            return
        now = time.monotonic()
        for direction in (pair.up, pair.down):
            # The fault is read again here, not only when the round was armed: a cut set while
            # select() waited must hold the bytes that arrive after set_fault() returned.
            if _is_cut(pair, direction):
                continue
            if sock is direction.src and events & selectors.EVENT_READ:
                self._read(pair, direction, now)
            if sock is direction.dst and events & selectors.EVENT_WRITE:
                self._write(pair, direction, now)

    def _read(self, pair: _Pair, direction: _Direction, now: float) -> None:
        try:
            data = direction.src.recv(CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close_pair(pair)
            return
        if not data:
            direction.eof = True
            if not direction.held:
                self._shut(pair, direction)
            return
        if direction.frames is not None:
            data = direction.frames.scan(data, pair.link.fault.corrupt_produce, self.rng)
        release = now + pair.link.fault.delay_ms / 1000
        direction.held.append((release, memoryview(data)))
        direction.held_bytes += len(data)
        if release <= now:
            self._write(pair, direction, now)

    def _write(self, pair: _Pair, direction: _Direction, now: float) -> None:
        while direction.held and direction.held[0][0] <= now:
            release, data = direction.held[0]
            try:
                sent = direction.dst.send(data)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._close_pair(pair)
                return
            direction.held_bytes -= sent
            if sent < len(data):
                direction.held[0] = (release, data[sent:])
                return
            direction.held.popleft()
        if direction.eof and not direction.held:
            self._shut(pair, direction)

    def _release(self) -> None:
        """Write delayed bytes whose time has come (their sockets may be writable already)."""
        now = time.monotonic()
        for pair in self._pairs:
            if pair.closed or not pair.connected:
                continue
            for direction in (pair.up, pair.down):
                if direction.held and direction.held[0][0] <= now and not _is_cut(pair, direction):
                    self._write(pair, direction, now)

    def _shut(self, pair: _Pair, direction: _Direction) -> None:
        if direction.shut:
            return
        direction.shut = True
        try:
            direction.dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        if pair.up.shut and pair.down.shut:
            self._close_pair(pair)

    def _close_pair(self, pair: _Pair) -> None:
        pair.closed = True
        for sock in (pair.client, pair.upstream):
            try:
                self._selector.unregister(sock)
            except (KeyError, ValueError):
                pass
            try:
                sock.close()
            except OSError:
                pass
