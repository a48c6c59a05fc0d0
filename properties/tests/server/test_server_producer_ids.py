"""Producer ids never repeat, across restarts too (a reused id meets its old sequence numbers in
the recovered producer state and the new producer's first batch is refused as out of order)."""

from kafkaref.impl.server.config import PRODUCER_IDS_PER_BLOCK
from kafkaref.impl.server.producer_ids import ProducerIdBlocks


def take(blocks, count):
    return [next(blocks) for _ in range(count)]


def test_ids_after_a_restart_are_all_new(tmp_path):
    path = tmp_path / "producer_id_block"
    first = take(ProducerIdBlocks(path, broker_id=3), 5)
    second = take(ProducerIdBlocks(path, broker_id=3), PRODUCER_IDS_PER_BLOCK + 5)  # crosses a block
    third = take(ProducerIdBlocks(path, broker_id=3), 5)
    everything = first + second + third
    assert len(set(everything)) == len(everything)
    assert min(second) > max(first) and min(third) > max(second)


def test_brokers_own_disjoint_ranges(tmp_path):
    a = take(ProducerIdBlocks(tmp_path / "a", broker_id=0), 10)
    b = take(ProducerIdBlocks(tmp_path / "b", broker_id=1), 10)
    assert not set(a) & set(b)
    assert all(0 <= pid < 2**63 for pid in a + b)


def test_an_unreadable_block_file_skips_ahead(tmp_path):
    path = tmp_path / "producer_id_block"
    used = take(ProducerIdBlocks(path, broker_id=0), 3)
    path.write_text("garbage")
    after = take(ProducerIdBlocks(path, broker_id=0), 3)
    assert min(after) > max(used)


def test_block_file_written_before_ids_are_used(tmp_path):
    path = tmp_path / "sub" / "producer_id_block"
    blocks = ProducerIdBlocks(path, broker_id=0)
    pid = next(blocks)
    assert int(path.read_text()) > pid


def test_a_block_file_from_another_brokers_range_starts_at_this_brokers_first_id(tmp_path):
    """A data directory moved to a broker of a higher id holds an end below this broker's
    range: nothing of the range was handed out, so the first id is the range's first, and the
    next run starts past the block the first one wrote."""
    path = tmp_path / "producer_id_block"
    take(ProducerIdBlocks(path, broker_id=0), 3)  # broker 0's end, below broker 1's range
    assert take(ProducerIdBlocks(path, broker_id=1), 1) == [1 << 40]
    later = take(ProducerIdBlocks(path, broker_id=1), 1)[0]
    assert later >= (1 << 40) + PRODUCER_IDS_PER_BLOCK


def test_a_restarted_broker_takes_the_next_block_of_a_thousand_ids_as_kafkas_controller_hands(
        tmp_path):
    """Kafka's controller hands producer ids out in blocks of 1000 (ProducerIdsBlock's
    PRODUCER_ID_BLOCK_SIZE); a restarted broker starts at the next block, past every id of the
    one it had. Found by mutation testing (session 2225a17's 00271: the block size 999)."""
    path = tmp_path / "producer_id_block"
    assert take(ProducerIdBlocks(path, broker_id=0), 2) == [0, 1]
    assert take(ProducerIdBlocks(path, broker_id=0), 1) == [1000]
    assert take(ProducerIdBlocks(path, broker_id=0), 1001)[-1] == 3000  # 2000..2999, then 3000
