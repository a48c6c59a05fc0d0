"""The core's rules where a deliberate fault can act, one function each, and the faults.

A mutant (impl/mutants.py) never branches inside a rule: it puts a faulty function in the rule's
place. `rules_for(mutants)` builds the table once per set of mutants (PartitionConfig.rules, and
ReplicaManager.rules for its own three), and the core calls whatever the table holds; with no
mutant every entry is the rule below. Each fault names the rule it replaces and the mutant.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.mutants import Mutant, replacements
from kafkaref.impl.protocol import records


# -- the rules (what Kafka does) ----------------------------------------------------------------
def isr_below_minimum(partition) -> bool:
    """The ISR is smaller than min.insync.replicas (capped at the replication factor): acks=all
    is refused before anything is written and (KIP-966) the hw does not advance."""
    return len(partition.isr) < partition.config.minimum_isr(len(partition.replicas))


def hw_members(partition) -> frozenset[int]:
    """The replicas whose log end offsets bound the leader's hw: the maximal ISR and itself."""
    return partition.maximal_isr | {partition.broker_id}


def consumer_fetch_limit(partition) -> int:
    """Consumers read below the hw (followers below the log end)."""
    return partition.high_watermark


def reached_hw(partition, leo: int) -> bool:
    """A follower joins the ISR only once its log end reaches the leader's hw."""
    return leo >= partition.high_watermark


def check_producer_batch(batch, timestamp_bounds: tuple[int, int] | None = None) -> ErrorCode:
    """A producer's batch in full: frame (sizes, magic, CRC), codec, every record, and on a
    CreateTime topic every record's timestamp within its bounds (INVALID_TIMESTAMP, KIP-937)."""
    return records.validate_batch(batch, from_client=True, timestamp_bounds=timestamp_bounds)


def check_copied_batch(batch) -> ErrorCode:
    """A batch a follower copies from its leader: the frame (sizes, magic, CRC)."""
    return records.check_batch(batch)


def waits_for_acks(required_acks: int, results) -> bool:
    """An acks=all produce waits in purgatory for the hw to pass what it appended."""
    return required_acks == -1 and any(r.error == ErrorCode.none for r in results.values())


def produce_timeout_ms(timeout_ms: int) -> int:
    """A waiting produce expires at the timeout it asked for."""
    return timeout_ms


def enough_to_answer(readable_bytes: int, min_bytes: int) -> bool:
    """A fetch is answered at once when min_bytes are readable (else it may wait)."""
    return readable_bytes >= min_bytes


# -- the faults ---------------------------------------------------------------------------------
def leader_alone(partition) -> frozenset[int]:
    """M1, for hw_members: the hw follows the leader's log end, the followers ignored."""
    return frozenset({partition.broker_id})


def never_below_minimum(partition) -> bool:
    """M3, for isr_below_minimum: min.insync.replicas is never enforced."""
    return False


def log_end(partition) -> int:
    """M4, for consumer_fetch_limit: consumers read up to the log end, above the hw."""
    return partition.log.log_end_offset


def crc_unchecked(check: Callable) -> Callable:
    """M7, around check_producer_batch and check_copied_batch: a bad CRC is let through."""

    def check_without_crc(batch, *bounds) -> ErrorCode:
        error = check(batch, *bounds)
        return ErrorCode.none if error == ErrorCode.corrupt_message else error

    return check_without_crc


def any_leo(partition, leo: int) -> bool:
    """M15, for reached_hw: a follower below the hw joins the ISR."""
    return True


def never_waits(required_acks: int, results) -> bool:
    """M2, for waits_for_acks: acks=all is answered at the append."""
    return False


def never_expires(timeout_ms: int) -> int:
    """M10, for produce_timeout_ms: a waiting produce never times out."""
    return 2**62


def always_enough(readable_bytes: int, min_bytes: int) -> bool:
    """M11, for enough_to_answer: min_bytes ignored, every fetch answered at once."""
    return True


@attrs.frozen
class CoreRules:
    """What the core calls for each rule a fault can replace (module docstring)."""

    isr_below_minimum: Callable = isr_below_minimum
    hw_members: Callable = hw_members
    consumer_fetch_limit: Callable = consumer_fetch_limit
    reached_hw: Callable = reached_hw
    check_producer_batch: Callable = check_producer_batch
    check_copied_batch: Callable = check_copied_batch
    waits_for_acks: Callable = waits_for_acks
    produce_timeout_ms: Callable = produce_timeout_ms
    enough_to_answer: Callable = enough_to_answer


# Each core mutant: the rules it replaces and with what (docs/bugs.md says what each breaks).
FAULTS: dict[Mutant, dict[str, Callable]] = {
    Mutant.M1: {"hw_members": leader_alone},
    Mutant.M2: {"waits_for_acks": never_waits},
    Mutant.M3: {"isr_below_minimum": never_below_minimum},
    Mutant.M4: {"consumer_fetch_limit": log_end},
    Mutant.M7: {"check_producer_batch": crc_unchecked(check_producer_batch),
                "check_copied_batch": crc_unchecked(check_copied_batch)},
    Mutant.M10: {"produce_timeout_ms": never_expires},
    Mutant.M11: {"enough_to_answer": always_enough},
    Mutant.M15: {"reached_hw": any_leo},
}


@functools.lru_cache(maxsize=64)
def rules_for(mutants: frozenset[Mutant]) -> CoreRules:
    """The rules with the faults of `mutants` in place (those of other layers are ignored)."""
    return CoreRules(**replacements(FAULTS, mutants))


RULES = rules_for(frozenset())  # no fault: every rule as stated above
