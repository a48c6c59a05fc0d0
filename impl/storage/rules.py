"""The storage layer's rules where a deliberate fault can act, and the faults (M6 M7 M8 M13).

As in impl/core/rules.py: a mutant (impl/mutants.py) never branches inside a rule, it puts a
faulty function (or class) in the rule's place; `rules_for(mutants)` builds the table once per
set of mutants (LogConfig.rules) and the log, its segments and recovery call what it holds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.impl.mutants import Mutant, replacements
from kafkaref.impl.protocol import records
from kafkaref.impl.storage.index import OffByOneIndex, OffsetIndex


# -- the rules ----------------------------------------------------------------------------------
def check_frame(batch) -> ErrorCode:
    """A stamped batch handed in unchecked: sizes, magic and CRC."""
    return records.check_batch(batch)


def check_producer_batch(batch, config) -> ErrorCode:
    """A producer's batch handed in unchecked: base offset 0 and its frame, or with
    config.validate_records its codec and every record too."""
    if config.validate_records:
        return records.validate_batch(batch, decompressed_bytes_max=config.decompressed_bytes_max)
    error = records.check_batch(batch)
    if error == ErrorCode.none and records.base_offset_of(batch) != 0:
        return ErrorCode.invalid_record
    return error


def checked_header(data) -> tuple[ErrorCode, records.BatchHeader | None]:
    """The one-batch leader path's quick check: one whole batch, magic, CRC (anything it
    refuses takes the general path, check_producer_batch, which finds the same error)."""
    return records.checked_header(data)


def cut_torn_tail(segment, valid_bytes: int) -> None:
    """Recovery cuts a segment after its last whole, valid batch."""
    segment.cut_at(valid_bytes)


def rolled(segment):
    """The segment a roll starts is where the batch that triggered it goes."""
    return segment


# -- the faults ---------------------------------------------------------------------------------
def frame_without_crc(batch) -> ErrorCode:
    """M7, for check_frame: any batch whose header parses passes (no CRC)."""
    return ErrorCode.none if records.parse_header(batch) is not None else ErrorCode.corrupt_message


def any_producer_batch(batch, config) -> ErrorCode:
    """M7, for check_producer_batch: nothing checked."""
    return ErrorCode.none


def no_quick_check(data) -> tuple[ErrorCode, None]:
    """M7, for checked_header: every batch goes to the general path (M7's there too)."""
    return ErrorCode.corrupt_message, None


def keep_torn_tail(segment, valid_bytes: int) -> None:
    """M8, for cut_torn_tail: the torn or corrupt tail stays in the file."""


class _LosesNextBatch:
    """M13, for rolled: the new segment, except that the batch that triggered the roll (the
    next one written to it) is lost."""

    def __init__(self, segment):
        self.segment = segment

    def append(self, batch, header) -> None:
        """Lost."""

    def append_parts(self, parts, size, last_offset, max_timestamp) -> None:
        """Lost."""


@attrs.frozen
class StorageRules:
    """What the log calls for each rule a fault can replace (module docstring)."""

    check_frame: Callable = check_frame
    check_producer_batch: Callable = check_producer_batch
    checked_header: Callable = checked_header
    offset_index: type[OffsetIndex] = OffsetIndex  # M6: OffByOneIndex (impl/storage/index.py)
    cut_torn_tail: Callable = cut_torn_tail
    rolled: Callable = rolled


# Each storage mutant: the rules it replaces and with what (docs/bugs.md says what each breaks).
FAULTS: dict[Mutant, dict[str, Callable]] = {
    Mutant.M6: {"offset_index": OffByOneIndex},
    Mutant.M7: {"check_frame": frame_without_crc, "check_producer_batch": any_producer_batch,
                "checked_header": no_quick_check},
    Mutant.M8: {"cut_torn_tail": keep_torn_tail},
    Mutant.M13: {"rolled": _LosesNextBatch},
}


@functools.lru_cache(maxsize=64)
def rules_for(mutants: frozenset[Mutant]) -> StorageRules:
    """The rules with the faults of `mutants` in place (those of other layers are ignored)."""
    return StorageRules(**replacements(FAULTS, mutants))
