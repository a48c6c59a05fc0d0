"""A response that fails to encode (a bug) closes its one connection and nothing else leaks: a
Fetch answer's file ranges hold file descriptors the encoder never got to hand on, and the
responder must close them; any other answer is simply dropped."""

from types import SimpleNamespace

from kafkaref.impl.protocol import wire
from kafkaref.impl.protocol.fetch_response import FetchAnswer, PartitionAnswer
from kafkaref.impl.server.io_threads import responder
from kafkaref.impl.server.request_queue import QueuedRequest
from kafkaref.impl.server.response_queue import CLOSE


class Range:
    """A file range as the storage hands it out: sized, and closed once sent or dropped."""

    closed = False

    def __len__(self) -> int:
        return 10

    def close(self) -> None:
        self.closed = True


class Network:
    def __init__(self):
        self.sent = []

    def send_response(self, connection_id, frame) -> None:
        self.sent.append((connection_id, frame))


def respond_with_a_broken_encoder(monkeypatch, answer) -> Network:
    def broken(correlation_id, response):
        raise ValueError("an encoder bug")

    monkeypatch.setattr(wire, "encode_response_parts", broken)
    network = Network()
    request = wire.Request(1, 12, 7, "c", SimpleNamespace())
    responder(network, QueuedRequest(0, 3, request, 0))(answer)
    return network


def test_a_fetch_answer_that_fails_to_encode_releases_its_file_ranges(monkeypatch):
    ranges = [Range(), Range()]
    answer = FetchAnswer(12, [("t", [PartitionAnswer(0, 0, 5, 0, ranges[0]),
                                     PartitionAnswer(1, 0, 5, 0, ranges[1])])])
    network = respond_with_a_broken_encoder(monkeypatch, answer)
    assert network.sent == [(3, CLOSE)]
    assert all(r.closed for r in ranges)


def test_any_other_answer_that_fails_to_encode_closes_the_connection(monkeypatch):
    network = respond_with_a_broken_encoder(monkeypatch, SimpleNamespace(error_code=0))
    assert network.sent == [(3, CLOSE)]
