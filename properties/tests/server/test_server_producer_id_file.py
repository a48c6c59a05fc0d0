"""A broker with a data directory keeps its producer-id block there, so the producer ids it hands
out after a restart are new (even within the same second, where the clock-based base would
repeat); a broker without one keeps no file anywhere.

Found by mutation testing (session 79fa682's survivor 00311: the data-directory test negated, so a
broker with a data directory kept no block, and one without wrote it into the working directory)."""

import os

from kafkaref.impl.server.server import producer_id_file
from kafkaref.impl.server.single import single_broker
from kafkaref.properties.wire_calls import call


def producer_ids(data_dir: str, count: int) -> list[int]:
    server = single_broker(data_dir)
    try:
        return [call(server.broker, 22, 1, {"transactional_id": None,
                                             "transaction_timeout": 60_000}).producer_id
                for _ in range(count)]
    finally:
        server.shutdown()


def test_producer_ids_after_a_restart_are_new(tmp_path):
    first = producer_ids(str(tmp_path), 3)
    second = producer_ids(str(tmp_path), 3)  # at once: the same second of the wall clock
    assert len(set(first + second)) == 6 and min(second) > max(first)
    assert os.path.exists(producer_id_file(str(tmp_path)))


def test_no_data_directory_no_block_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert producer_id_file("") is None and producer_id_file(None) is None
    producer_ids("", 2)
    assert os.listdir(tmp_path) == []


def in_memory_producer_id(broker_id: int, wall_ms: int) -> int:
    from kafkaref.impl.clock import Clock
    from kafkaref.impl.core.broker import BrokerConfig

    server = single_broker("", broker_config=BrokerConfig(broker_id=broker_id),
                           clock=Clock(wall_ms=lambda: wall_ms))
    try:
        return call(server.broker, 22, 1, {"transactional_id": None,
                                           "transaction_timeout": 60_000}).producer_id
    finally:
        server.shutdown()


def test_a_broker_without_a_data_directory_starts_its_producer_ids_at_its_id_and_start_second():
    """Without a block file a broker's ids start at a base made of its broker id and the wall
    clock's second at start: a broker restarted a second later, or another broker, never hands
    out an id the first one did (a client still holding it would meet another producer's
    sequence numbers). Found by mutation testing (session 2225a17's 00053: the base's `|` to
    `&`, which made every start of broker 0 begin at id 0)."""
    first = in_memory_producer_id(0, 1_700_000_000_000)
    later = in_memory_producer_id(0, 1_700_000_001_000)
    other = in_memory_producer_id(1, 1_700_000_000_000)
    assert later > first and len({first, later, other}) == 3
