"""LogConfig: every size, interval and bound of one partition's log, in one frozen value."""

import attrs

from kafkaref.impl.protocol.records import DECOMPRESSED_BYTES_MAX, HEADER_SIZE, INT32_MAX

DAY_MS = 24 * 60 * 60 * 1000

# Deliberate faults ("mutants", BUG_CATALOG.md) that checks must catch when switched on.
MUTANTS = frozenset({"M6", "M7", "M8", "M13"})


def _positive(instance, attribute, value):
    if value is not None and value <= 0:
        raise ValueError(f"{attribute.name} must be positive, got {value}")


@attrs.frozen
class LogConfig:
    """Kafka's topic-level log settings, with Kafka's defaults; None / -1 mean "no limit".

    mutants names deliberate faults from BUG_CATALOG.md to switch on, so tests can show that the
    checks catch them: M6 index lookup one entry too far, M7 no CRC check on append, M8 recovery
    keeps a torn tail, M13 the batch that triggers a roll is dropped.
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
    validate_records: bool = True  # append_as_leader checks every record, not just the frame
    decompressed_bytes_max: int = DECOMPRESSED_BYTES_MAX
    mutants: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)

    def __attrs_post_init__(self):
        if not HEADER_SIZE <= self.segment_bytes <= INT32_MAX:
            raise ValueError("segment_bytes must fit one batch header and int32 positions")
        if self.segment_index_bytes < 8:
            raise ValueError("segment_index_bytes must hold at least one 8-byte entry")
        unknown = self.mutants - MUTANTS
        if unknown:
            raise ValueError(f"unknown mutants {sorted(unknown)}; known: {sorted(MUTANTS)}")

    @property
    def index_entries_max(self) -> int:
        return self.segment_index_bytes // 8
