"""The response queue of each network thread, and per-connection ordering.

Per-connection ordering: a network thread MUTES a connection as soon as it has read one whole
request from it (no further reads) and unmutes it only once that request's response has been
written (acks=0, which has no response: once the request was handled). So a client has at most
one request inside the broker and its responses leave in request order; and the response queues
are bounded by the number of connections. Deliberate bug M9 skips the mute (tests only).

Whichever thread answers a request (an I/O thread, or the one completing a purgatory operation,
or the ticker expiring it) puts the answer on the owning network thread's ResponseQueue and
wakes that thread; only the network thread touches the socket. An answer is one of:
bytes; a list of parts (bytes and storage FetchSlices, the latter sent with os.sendfile());
None (nothing to send: unmute); CLOSE (the handler failed: close the connection).
"""

from __future__ import annotations

import collections
import queue
import socket
from collections.abc import Callable, Iterator

CLOSE = object()  # response sentinel: the handler failed; close the connection


def mute_until_answered() -> bool:
    """The rule: a connection stays muted from a read request until its response is written."""
    return True


def never_mute() -> bool:
    """Mutant M9, in mute_until_answered's place (ServerConfig.mutes): pipelined requests are
    read at once."""
    return False


class ResponseQueue:
    """One per network thread: many writers (any thread answering), one reader (its owner)."""

    def __init__(self, wake: Callable[[], None]):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._wake = wake

    def put(self, connection_id: int, frame) -> None:
        """frame: bytes, a list of parts, None (nothing to send: unmute), or CLOSE."""
        self._queue.put((connection_id, frame))
        self._wake()

    def pending(self) -> bool:
        return not self._queue.empty()

    def drain(self) -> Iterator[tuple[int, object]]:
        while True:
            try:
                yield self._queue.get_nowait()
            except queue.Empty:
                return


class FilePart:
    """A file range of a response still to be sent with os.sendfile()."""

    __slots__ = ("slice", "done")

    def __init__(self, fetch_slice):
        self.slice, self.done = fetch_slice, 0


def queue_parts(outbuf: collections.deque, frame) -> None:
    """Append a response (bytes or a list of parts) to a connection's output buffer."""
    for part in frame if isinstance(frame, list) else [frame]:
        outbuf.append(memoryview(part) if isinstance(part, bytes | bytearray | memoryview)
                      else FilePart(part))


def write_pending(sock: socket.socket, outbuf: collections.deque) -> None:
    """Write as much of outbuf as the socket takes now, in order; what is written leaves
    outbuf. OSError (peer gone, segment truncated under us) is the caller's to handle."""
    try:
        while outbuf:
            part = outbuf[0]
            if isinstance(part, FilePart):
                remaining = part.slice.size - part.done
                sent = part.slice.sendfile(sock.fileno(), part.done, remaining)
                if sent == 0 and remaining > 0:  # the file was truncated under us
                    raise OSError("segment truncated while sending")
                part.done += sent
                if part.done < part.slice.size:
                    return
                part.slice.close()
            else:
                sent = sock.send(part)
                if sent < len(part):
                    outbuf[0] = part[sent:]
                    return
            outbuf.popleft()
    except (BlockingIOError, InterruptedError):
        pass


def discard(frame) -> None:
    """A response for a connection closed meanwhile: release the file ranges it holds."""
    for part in frame if isinstance(frame, list) else ():
        if hasattr(part, "close"):
            part.close()


def release_unsent(outbuf: collections.deque) -> None:
    """A closing connection's unsent file ranges hold file descriptors: close them."""
    for part in outbuf:
        if isinstance(part, FilePart):
            part.slice.close()
    outbuf.clear()
