"""Every size, interval and bound of impl/storage in one module: LogConfig, the settings of one
partition's log (a frozen value), and the fixed limits of the storage code, unit last."""

import attrs

from kafkaref.impl.mutants import Mutant, Switches, mutants_field, switches_field
from kafkaref.impl.protocol.limits import DECOMPRESSED_MAX_BYTES
from kafkaref.impl.protocol.records import HEADER_SIZE, INT32_MAX
from kafkaref.impl.storage.rules import StorageRules, rules_for

DAY_MS = 24 * 60 * 60 * 1000
SCAN_CHUNK_BYTES = 8 * 1024  # header scans read this much at once (many small batches per read)
RECOVERY_WINDOW_BYTES = 16 * 1024 * 1024  # the most of a segment recovery maps at once
# checkpoint files: bounds on what a (possibly corrupt) file can make us allocate
CHECKPOINT_MAX_ENTRIES = 1_000_000
CHECKPOINT_MAX_BYTES = 64 * 1024 * 1024


def _positive(instance, attribute, value):
    if value is not None and value <= 0:
        raise ValueError(f"{attribute.name} must be positive, got {value}")


@attrs.frozen
class LogConfig:
    """Kafka's topic-level log settings, with Kafka's defaults; None / -1 mean "no limit".

    mutants: deliberate faults (impl/mutants.py) to switch on, so tests can show that the checks
    catch them. Used here, each in the place of the rule it breaks (impl/storage/rules.py): M6
    index lookup one entry too far, M7 no CRC check on append, M8 recovery keeps a torn tail,
    M13 the batch that triggers a roll is dropped; the others are ignored (a broker passes its
    whole set to every layer).
    """

    segment_bytes: int = attrs.field(default=1024 * 1024 * 1024, validator=_positive)
    segment_ms: int = attrs.field(default=7 * DAY_MS, validator=_positive)
    segment_index_bytes: int = attrs.field(default=10 * 1024 * 1024, validator=_positive)
    index_interval_bytes: int = attrs.field(default=4096, validator=_positive)
    flush_messages: int | None = attrs.field(default=None, validator=_positive)
    flush_ms: int | None = attrs.field(default=None, validator=_positive)
    # Kafka's replica.high.watermark.checkpoint.interval.ms: how often ticks persist a changed hw
    # (and log start), so a broker killed with -9 restarts with a recent one, not a stale one.
    checkpoint_interval_ms: int = attrs.field(default=5000, validator=_positive)
    retention_bytes: int = -1
    retention_ms: int = 7 * DAY_MS
    # When a caller hands append_as_leader bytes nobody checked (no `checked` headers: tools,
    # tests), the log walks every record too, not just the frame. The core always checks first
    # and passes the headers, so its appends never depend on this (docs/storage.md).
    validate_records: bool = True
    decompressed_bytes_max: int = DECOMPRESSED_MAX_BYTES
    # Power-loss mode (chaos/, off by default): what was not fsynced is lost when the broker
    # dies uncleanly, as on a machine losing power. Each fsync of a segment records the size
    # it made durable beside it (NAME.log.durable); opening a log that was not closed cleanly
    # first cuts every segment back to that size (none recorded: 0). A clean close fsyncs all.
    lose_unflushed_on_crash: bool = False
    mutants: frozenset[Mutant] = mutants_field()
    on: Switches = switches_field()
    # the rules the log follows where a fault can act, the faults of `mutants` in their place
    rules: StorageRules = attrs.field(init=False, eq=False, repr=False, default=attrs.Factory(
        lambda config: rules_for(config.mutants), takes_self=True))

    def __attrs_post_init__(self):
        if not HEADER_SIZE <= self.segment_bytes <= INT32_MAX:
            raise ValueError("segment_bytes must fit one batch header and int32 positions")
        if self.segment_index_bytes < 8:
            raise ValueError("segment_index_bytes must hold at least one 8-byte entry")

    @property
    def index_entries_max(self) -> int:
        """The offset index's capacity: segment.index.bytes of 8-byte entries (Kafka's
        AbstractIndex: maxIndexSize / entrySize)."""
        return self.segment_index_bytes // 8

    @property
    def time_index_entries_max(self) -> int:
        """The time index's: the same segment.index.bytes of 12-byte entries (Kafka gives both
        indexes the one maxIndexSize), at least one (Kafka's 0 for fewer than 12 bytes would
        roll the segment before every batch)."""
        return max(1, self.segment_index_bytes // 12)
