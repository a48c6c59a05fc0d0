"""The controller channel refuses a message whose size prefix is negative or past
MESSAGE_MAX_BYTES before reading a byte of it (a garbled or hostile peer must not make the
controller or a broker allocate gigabytes), and reads a well-formed one."""

import socket

import pytest

from kafkaref.impl.controller.channel import SIZE, recv_message, send_message
from kafkaref.impl.controller.config import MESSAGE_MAX_BYTES


@pytest.mark.parametrize("size", [-1, MESSAGE_MAX_BYTES + 1, 2**31 - 1])
def test_an_absurd_message_size_is_refused_at_once(size):
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(SIZE.pack(size))
        theirs.shutdown(socket.SHUT_WR)  # nothing follows: a reader that trusts the size ends
        with pytest.raises(ValueError, match="control message size"):
            recv_message(ours)


def test_a_message_within_the_bound_is_read():
    ours, theirs = socket.socketpair()
    with ours, theirs:
        send_message(theirs, {"type": "heartbeat", "broker_id": 1})
        assert recv_message(ours) == {"type": "heartbeat", "broker_id": 1}


@pytest.mark.parametrize("size", [0, 1, MESSAGE_MAX_BYTES])
def test_a_size_within_the_bound_is_read_on(size):
    """Sizes from 0 to MESSAGE_MAX_BYTES inclusive are read on, not refused: a peer that then
    closes ends the channel (None), as at a message boundary."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(SIZE.pack(size))
        theirs.shutdown(socket.SHUT_WR)
        if size == 0:  # read on: the empty body is then no JSON object
            with pytest.raises(ValueError) as refused:
                recv_message(ours)
            assert "control message size" not in str(refused.value)
        else:
            assert recv_message(ours) is None
