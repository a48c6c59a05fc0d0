"""Checks of the idempotent producer (KIP-98): a producer id, per-partition sequence numbers,
retries deduplicated, gaps refused."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import check
from kafkaref.chaos.conform.checks_log import values_batch
from kafkaref.chaos.conform.probe import Probe


@check("idempotent_dedupe", "producer", "KIP-98 (idempotent producer): duplicate sequence "
       "numbers are not written twice; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER")
def idempotent_dedupe(probe: Probe):
    """With a producer id from InitProducerId, a retried batch (same id, epoch and sequence) is
    acknowledged again without a second copy in the log (NONE with the first base offset, or
    DUPLICATE_SEQUENCE_NUMBER), and a batch skipping sequence numbers is refused with
    OUT_OF_ORDER_SEQUENCE_NUMBER."""
    topic = probe.create_topic("idem")
    init = probe.init_producer_id()
    probe.expect_error(init.error_code, ErrorCode.none, "InitProducerId", init)
    pid, epoch = init.producer_id, init.producer_epoch
    probe.expect(pid >= 0, f"producer id {pid}", response=init, expected="a producer id >= 0")

    def batch(prefix, sequence, count=2):
        return values_batch(prefix, count, producer_id=pid, producer_epoch=epoch,
                            base_sequence=sequence)

    first = probe.produce_ok(topic, batch(b"s0", 0))
    again = probe.produce(topic, batch(b"s0", 0))
    probe.expect_error(again.error_code, (ErrorCode.none, ErrorCode.duplicate_sequence_number),
                       "a retried batch (sequence 0 again)", again)
    if again.error_code == ErrorCode.none:
        probe.expect(again.base_offset == first, f"the retry got base offset "
                     f"{again.base_offset}, the original {first}", response=again,
                     expected=f"base offset {first}")
    probe.produce_ok(topic, batch(b"s2", 2))
    gap = probe.produce(topic, batch(b"s9", 9))
    probe.expect_error(gap.error_code, ErrorCode.out_of_order_sequence_number,
                       "a batch with sequence 9 where 4 is next", gap)
    values = [r.value for r in probe.read_all(topic)]
    want = [b"s0-0", b"s0-1", b"s2-0", b"s2-1"]
    probe.expect(values == want, "the log does not hold each batch exactly once",
                 response=str(values), expected=str(want))
