"""A fetch slice whose file descriptor is 0 reads and sends its bytes like any other: a broker
started with its standard input closed (`kafkaref broker <&-`, a service manager) gets
descriptor 0 for the first file it opens or duplicates, and a slice is a duplicate of its
segment's descriptor. Only -1 means "no file" (an empty slice).

Found by mutation testing (session 9df4313ef37b's survivor 00128: read_bytes' `self.fd < 0`
read `< 1`, so a slice on descriptor 0 read as empty; no test had one)."""

import os

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from kafkaref.impl.storage.fetch import FetchSlice


@given(data=st.binary(min_size=1, max_size=200), start=st.integers(0, 20))
def test_a_slice_on_descriptor_zero_reads_its_bytes(tmp_path_factory, data, start):
    path = tmp_path_factory.mktemp("slice") / "segment"
    path.write_bytes(bytes(start) + data)
    stdin = _saved_stdin()
    fd = os.open(path, os.O_RDONLY)  # 0 itself when descriptor 0 is closed
    if fd != 0:
        os.dup2(fd, 0)  # the slice's descriptor is 0
        os.close(fd)
    piece = FetchSlice(ErrorCode.none, 0, str(path), start, len(data), 0, 1)
    try:
        reader, writer = os.pipe()
        try:
            sent = piece.sendfile(writer, 0)
            os.close(writer)
            assert (piece.read_bytes(), sent, os.read(reader, 1 << 10)) == (data, len(data), data)
        finally:
            os.close(reader)
    finally:
        piece.close()  # closes descriptor 0: give the process its own back, if it had one
        if stdin is not None:
            os.dup2(stdin, 0)
            os.close(stdin)


def _saved_stdin() -> int | None:
    """A duplicate of descriptor 0, None when it is closed (as under some test runners)."""
    try:
        return os.dup(0)
    except OSError:
        return None
