"""The history format: what clients observed, as two tables. The single source of truth for
its schema, its validation and the anomaly catalogue; pure data and functions (no I/O, no
Parquet library): history/store.py writes and reads histories as Parquet and JSON lines, and
spark_checks/ checks them (Spark reads the same Parquet files directly). See docs/histories.md
for the model (Jepsen's queue workload).

A history is a directory:

    meta.json            {"schema_version": 1, "config": {...}, ..., "manifest": {...}}
    ops/part-NNNNN.parquet      one row per invocation or completion (OPS_COLUMNS)
    records/part-NNNNN.parquet  one row per record inside an op (RECORDS_COLUMNS)

The manifest (history/integrity.py) lists every data file's rows, size and digest; the rows
must also follow the structural rules below (STRUCTURE) before any anomaly is looked for.

records is denormalised on purpose: each row repeats its op's process, completion type and the
invoke and completion times, so every check is a scan, group-by or window over one table and never
a join of hundreds of millions of records against the ops.

Values are int64 and unique across the whole run (a writer encodes its process and sequence in
them); checks rely on it. Record kinds:

    send        a record a send op wrote; offset is the acknowledged offset (null unless type ok)
    poll        a record a poll returned (type ok), at offset with value, in the order returned
    final_read  a record returned by the final phase, which reads every partition from the start
                after healing; these define "the final log"
    hw          a high watermark observed in a fetch response: offset holds the hw, value is null

How the final phase marks a partition as read (covered): an ok final_read op holds, for every
partition it read, an hw record whose offset is the end offset it read up to (the high watermark
its last fetch of that partition answered, exclusive), besides the final_read records of what it
returned. A partition the final phase read and found empty is therefore an hw record and no
final_read records; a partition absent from every ok final_read op was not read, and records
polled from it cannot be judged (not dirty, not lost: unknown). Older histories without these hw
records count a partition as read only when a final_read record came from it. The final log of
a covered partition ends at max(its highest final_read offset + 1, the highest such hw).

Offsets need not be dense (transaction markers, aborted batches and compaction take offsets), so
the checks judge order and gaps on the log's values: a poll skipped something only if some value
is known (from an ok send or any read) at an offset strictly between two successive ones it read.

An op's value may hold an observation (a JSON object): what a client measured about one request
rather than a value it read (the order of a connection's answers, how long a fetch or a silent
request waited); observation(), reordered(), early_empty() and hung() read and judge them.

The anomaly catalogue (names, what each means, what each configuration allows) is defined here
too, once, and imported by both checkers.
"""

from __future__ import annotations

import json

import attrs

SCHEMA_VERSION = 1

OP_TYPES = ("invoke", "ok", "fail", "info")
RECORD_KINDS = ("send", "poll", "final_read", "hw")
NEMESIS_PROCESS = -1
# Ops of a process after which its poll positions legitimately restart (see poll checks).
POSITION_RESET_FS = ("assign", "subscribe", "seek")


@attrs.frozen
class Column:
    """One column of a history table: its name, its Arrow type name (int32, int64, string) and
    whether it may be null. history/store.py turns these into Parquet schemas."""

    name: str
    type: str
    nullable: bool = True


OPS_COLUMNS = (
    Column("index", "int64", nullable=False),  # position in the history, unique
    Column("time", "int64", nullable=False),  # ns since the run started, one clock
    Column("process", "int64", nullable=False),  # NEMESIS_PROCESS for fault injection
    Column("type", "string", nullable=False),  # OP_TYPES
    Column("f", "string", nullable=False),  # send, poll, final_read, assign, kill, ...
    Column("invoke_index", "int64"),  # for a completion: index of its invocation
    Column("error", "string"),  # error name for fail/info completions
    Column("value", "string"),  # free-form detail (nemesis target, assignment, JSON)
)

RECORDS_COLUMNS = (
    Column("op_index", "int64", nullable=False),  # the completion op holding it
    Column("position", "int32", nullable=False),  # order inside the op
    Column("kind", "string", nullable=False),  # RECORD_KINDS
    Column("process", "int64", nullable=False),
    Column("type", "string", nullable=False),  # the completion's type
    Column("invoke_time", "int64", nullable=False),
    Column("complete_time", "int64", nullable=False),
    Column("topic", "string", nullable=False),
    Column("partition", "int32", nullable=False),
    Column("offset", "int64"),  # null for a send not acknowledged
    Column("value", "int64"),  # null only for kind hw
)

TABLE_COLUMNS = {"ops": OPS_COLUMNS, "records": RECORDS_COLUMNS}


# Kafka spells acks=all as -1 on the wire and in client configs: both mean the same.
_ACKS_SPELLINGS = {"-1": "all"}


class HistoryError(ValueError):
    """A history that does not follow this schema (wrong version, bad rows, corrupt files)."""


# --- validation ----------------------------------------------------------------------------


def check_op(index: int, type: str, invoke_index: int | None) -> None:
    """Raise HistoryError unless an op row is well-formed (a known type; a completion names
    its invocation): a bad row fails at once rather than producing a history nobody can check."""
    if type not in OP_TYPES:
        raise HistoryError(f"op {index}: type {type!r} is not one of {OP_TYPES}")
    if type != "invoke" and invoke_index is None:
        raise HistoryError(f"op {index}: a completion needs invoke_index")


def check_record(op_index: int, kind: str, value: int | None) -> None:
    """Raise HistoryError unless a record row is well-formed (a known kind; value null exactly
    for kind hw)."""
    if kind not in RECORD_KINDS:
        raise HistoryError(f"op {op_index}: record kind {kind!r} not in {RECORD_KINDS}")
    if (value is None) != (kind == "hw"):
        raise HistoryError(f"op {op_index}: value must be null exactly for kind hw")


def check_meta(meta, where) -> dict:
    """meta.json's content, checked for a schema version this code understands."""
    if not isinstance(meta, dict) or meta.get("schema_version") != SCHEMA_VERSION:
        version = meta.get("schema_version") if isinstance(meta, dict) else None
        raise HistoryError(f"{where}: schema version {version!r}, expected {SCHEMA_VERSION}")
    return meta


# --- structure: what every history's rows must satisfy before any anomaly is looked for -----
# A row breaking one of these is no observation of a broker but a damaged or wrongly written
# history: the checkers refuse it ("corrupt history", exit 2) instead of judging it. Both
# checkers implement each rule (spark_checks/structure.py, spark_checks/twin_structure.py) and
# report, per rule broken, how many rows break it and the lowest op index among them.

COMPLETION_TYPES = ("ok", "fail", "info")

# name -> (the table it is about, the rule).
STRUCTURE: dict[str, tuple[str, str]] = {
    "op_index": ("ops", "op indexes are 0..N-1, each used once"),
    "op_type": ("ops", "an op's type is one of invoke, ok, fail, info"),
    "op_range": ("ops", "an op's time is >= 0 and its process >= -1 (the nemesis)"),
    "completion": (
        "ops",
        "a completion names by invoke_index one earlier invocation (a lower index, not later in "
        "time) of its process and f, which no other completion names; an invocation names none",
    ),
    "record_kind": (
        "records",
        "a record's kind is send, poll, final_read or hw (value null exactly for hw) and its "
        "type ok, fail or info",
    ),
    "record_range": (
        "records",
        "a record's partition, position and offset (when not null) are >= 0 and its "
        "invoke_time <= complete_time",
    ),
    "record_op": (
        "records",
        "a record's op_index names one completion whose process, type, time and invocation's "
        "time it repeats, and an op's records are at positions 0..k-1, each once",
    ),
}


def structure_problem(rule: str, rows: int, first: int) -> str:
    """One line saying which rule how many rows break (first: the lowest op index among them)."""
    return (f"{rows:,} row{'s' if rows != 1 else ''} break{'' if rows != 1 else 's'} the rule "
            f"{rule!r} ({STRUCTURE[rule][1]}), the first at op {first}")


# --- the anomaly catalogue -----------------------------------------------------------------


@attrs.frozen
class CheckConfig:
    """The client/broker configuration a history was recorded under; it decides what is allowed."""

    acks: str = attrs.field(default="all", converter=lambda v: _ACKS_SPELLINGS.get(str(v), str(v)),
                            validator=attrs.validators.in_(("0", "1", "all")))
    idempotence: bool = True
    unclean_election: bool = False
    mode: str = attrs.field(default="assign", validator=attrs.validators.in_(("assign", "subscribe")))

    @classmethod
    def from_dict(cls, raw: dict) -> CheckConfig:
        unknown = set(raw) - {a.name for a in attrs.fields(cls)}
        if unknown:
            raise HistoryError(f"unknown config keys: {sorted(unknown)}")
        try:
            return cls(**raw)
        except (TypeError, ValueError) as error:
            raise HistoryError(f"bad config {raw!r}: {error}") from None

    def as_dict(self) -> dict:
        return attrs.asdict(self)


# The fields of cases that several anomalies share: one record at its position; two successive
# sends of a process to a partition; two successive polls (or records of one poll) of a partition.
_RECORD = ("topic", "partition", "offset", "value")
_SEND_STEP = ("process", "topic", "partition", "prev_value", "prev_offset", "value", "offset")
_POLL_STEP = ("process", "topic", "partition", "prev_op", "prev_offset", "op", "offset")

# Latency anomalies (docs/histories.md, "observations"): a client measures, on its own monotonic
# clock, how long a request waited and records it in the op's value; these bounds judge it. A
# correct broker answers an empty fetch at max_wait (a timer), and expires a request at its
# timeout (one ticker period late at most): both bounds leave seconds of room for a loaded
# machine. A clock fault moves the broker's timers, so a history with one is not judged.
EARLY_FETCH_FRACTION = 0.5
HUNG_GRACE_MS = 3000
LATENCY_ANOMALIES = ("early_empty_fetch", "hung_request")
CLOCK_FAULT_F = "clock"  # the nemesis op whose presence switches the latency checks off

# name -> (what it means, the fields of one case in canonical order).
ANOMALIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "inconsistent_offsets": (
        "one (topic, partition, offset) observed with two different values",
        ("topic", "partition", "offset", "values"),
    ),
    "duplicate": (
        "one value observed at two (topic, partition, offset) positions",
        ("value", "positions"),
    ),
    "lost_write": (
        "an acknowledged send (ok, or info proven by a read) absent from the final log of its "
        "partition although the final log extends past its offset",
        _RECORD,
    ),
    "unseen": (
        "an ok send whose value no read (poll or final read) ever returned",
        _RECORD,
    ),
    "offset_mismatch": (
        "a send acknowledged at an offset where a read returned another value",
        ("topic", "partition", "offset", "value", "observed_value"),
    ),
    "nonmonotonic_send": (
        "a process's successive ok sends to one partition got non-increasing offsets",
        _SEND_STEP,
    ),
    "send_reorder": (
        "a process's successive sends to one partition appear in the final log out of order",
        _SEND_STEP,
    ),
    "poll_skip": (
        "a process's successive polls of one partition skip a value of the log (a record known at "
        "an offset between; no assign/seek between)",
        _POLL_STEP,
    ),
    "nonmonotonic_poll": (
        "a process's successive polls of one partition go back or repeat an offset",
        _POLL_STEP,
    ),
    "int_poll_skip": (
        "inside one poll, successive records of a partition skip a value of the log",
        _POLL_STEP,
    ),
    "int_nonmonotonic_poll": (
        "inside one poll, successive records of a partition go back or repeat an offset",
        _POLL_STEP,
    ),
    "aborted_read": (
        "a read returned a value whose send failed (type fail)",
        _RECORD,
    ),
    "dirty_read": (
        "a poll returned a record that the final log does not hold at that offset, in a "
        "partition the final phase read (also one it found empty or shorter)",
        _RECORD,
    ),
    "hw_regression": (
        "a process observed a partition's high watermark go backwards",
        ("process", "topic", "partition", "prev_op", "prev_hw", "op", "hw"),
    ),
    "realtime_order": (
        "a send invoked after another ok send to the partition completed got a lower offset; "
        "the witness is the highest offset acknowledged before it was invoked",
        ("topic", "partition", "value", "offset", "prior_value", "prior_offset"),
    ),
    "garbage_read": (
        "a read returned a value that no send wrote (no send record, whatever its outcome, "
        "holds it): a record corrupted on its way or at rest, or one the broker made up",
        _RECORD,
    ),
    "corrupt_read": (
        "a read got bytes that are no record batch even with the CRC ignored (an op's "
        "observation {\"corrupt_batch\": {\"topic\", \"partition\", \"offset\"}}): a "
        "broker served a torn or overwritten batch",
        ("op", "topic", "partition", "offset"),
    ),
    "response_reorder": (
        "a connection's responses came back in another order than its requests were sent "
        "(an ok op's observation {\"sent\": [correlation ids], \"answered\": [...]})",
        ("op", "sent", "answered"),
    ),
    "early_empty_fetch": (
        "a fetch with min_bytes >= 1 was answered empty and without error in less than "
        f"{EARLY_FETCH_FRACTION} of its max_wait_ms (an ok op's observation "
        "{\"max_wait_ms\": W, \"empty_fetch_ms\": E}); not judged in a history with clock "
        "faults",
        ("op", "max_wait_ms", "empty_fetch_ms"),
    ),
    "hung_request": (
        f"a request left unanswered more than {HUNG_GRACE_MS} ms past its timeout_ms on a "
        "broker that answered a probe meanwhile (an op's observation {\"timeout_ms\": T, "
        "\"waited_ms\": W, \"probe\": \"answered\"}), not waiting through a clients' cut or a "
        "pause; not judged in a history with clock faults",
        ("op", "timeout_ms", "waited_ms"),
    ),
    "cycle": (
        "a cycle of write-write (log order) and write-read edges between ops (G0 / G1c), "
        "found after contracting ops that write one contiguous run of one partition (they "
        "cannot start a cycle); the case is a shortest cycle through the lowest op of each "
        "strongly connected component. Realtime edges are covered by realtime_order",
        ("ops",),
    ),
}

_LOSSY = (
    "lost_write",
    "unseen",
    "offset_mismatch",
    "inconsistent_offsets",
    "dirty_read",
    "hw_regression",
    "nonmonotonic_send",
    "realtime_order",
)


def allowed_anomalies(config: CheckConfig) -> frozenset[str]:
    """What the configuration permits, so the verdict can tell expected loss from a defect.

    acks=0/1 or unclean election: acknowledged records can be truncated away, so loss and
    everything loss causes (offsets reused by other values, reads of truncated records, hw and
    offsets moving back) is expected. Without idempotence, retries duplicate and reorder records.
    In subscribe mode rebalances move positions between polls invisibly to the history.
    """
    allowed: set[str] = set()
    if config.acks != "all" or config.unclean_election:
        allowed.update(_LOSSY)
    if not config.idempotence:
        allowed.update(("duplicate", "send_reorder"))
    if config.mode == "subscribe":
        allowed.update(("poll_skip", "nonmonotonic_poll"))
    return frozenset(allowed)


# --- observations: what a client measured about one request, in its op's value -------------


def observation(value: str | None) -> dict | None:
    """The op's value as an observation dict (None for the other values: free text, lists)."""
    if not value or not value.startswith("{"):
        return None
    try:
        found = json.loads(value)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def corrupt_batch(found: dict) -> tuple | None:
    """(topic, partition, offset) of a batch a read could not decode, or None."""
    where = found.get("corrupt_batch")
    if not isinstance(where, dict):
        return None
    topic, partition, offset = (where.get(k) for k in ("topic", "partition", "offset"))
    if isinstance(topic, str) and isinstance(partition, int) and isinstance(offset, int):
        return topic, partition, offset
    return None


def reordered(found: dict) -> bool:
    """A pipelined connection's answers in another order than its requests."""
    sent, answered = found.get("sent"), found.get("answered")
    return isinstance(sent, list) and isinstance(answered, list) and sent != answered


def early_empty(found: dict) -> bool:
    """An empty, error-free fetch answered well before its max_wait_ms."""
    wait, took = found.get("max_wait_ms"), found.get("empty_fetch_ms")
    return isinstance(wait, int) and isinstance(took, int) and \
        took < wait * EARLY_FETCH_FRACTION


# Faults that silence a correct broker towards its clients: the clients' links cut (partition
# mode "clients") or a process paused. A request that waited through one heard nothing because
# of the harness: its answer (REQUEST_TIMED_OUT at the broker's timeout) was held in the cut or
# the stopped process, and the probe after the heal answers. hung_request does not judge it.
SILENCING_FAULTS = {"pause": "resume", "partition": "heal"}  # fault f -> the f that undoes it
SILENCING_PARTITION_MODES = ("clients",)


def silenced_windows(nemesis_ops) -> list[tuple[int, int]]:
    """(start, end) times of the faults that silence brokers towards clients, from the nemesis's
    ops in history order: a fault's invocation until the next completed undo of its kind (one
    fault at a time; an undo never seen: until the end of the history)."""
    windows, open_at = [], {}
    for op in nemesis_ops:
        f, value = op["f"], observation(op.get("value")) or {}
        if op["type"] == "invoke" and f in SILENCING_FAULTS and (
                f != "partition" or value.get("mode") in SILENCING_PARTITION_MODES):
            open_at.setdefault(SILENCING_FAULTS[f], op["time"])
        elif op["type"] == "ok" and f in open_at:
            windows.append((open_at.pop(f), op["time"]))
    return windows + [(start, 2**63 - 1) for start in open_at.values()]


def hung(found: dict) -> bool:
    """A request left unanswered far past its timeout while its broker answered a probe."""
    timeout, waited = found.get("timeout_ms"), found.get("waited_ms")
    return found.get("probe") == "answered" and isinstance(timeout, int) and \
        isinstance(waited, int) and waited > timeout + HUNG_GRACE_MS
