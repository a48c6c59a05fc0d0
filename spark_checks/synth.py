"""`kafkaref synth`: seeded synthetic histories of a correct log, of any size, with anomalies
injected at chosen rates and the ground truth of what was injected written next to them.

The log is laid out in rounds so that any record can be recomputed from its coordinates (nothing
is remembered per record, only the ground truth, one entry per injection, so memory stays bounded
at any size): round r writes partition r % P; each of the
N producers sends one record whose value is r*N + j, concurrently (all invoke before any
completes), and the broker orders them by a per-round permutation derived from the seed. Every Q
rounds of a partition its consumer polls everything written since its last poll (and sees the hw);
at the end a final reader per partition reads the whole partition.

Injections (rate = probability per opportunity: per send for send kinds, per poll for poll kinds),
each recorded in ground_truth.jsonl with the values / (partition, offset) / ops it touches, the
anomaly that must report it (recall) and the other anomalies the same fault can show up as
("also"); every reported case must touch an injection that names its anomaly (precision).
Every anomaly of the catalogue has an injection (INJECTIONS maps kind -> anomaly):
  send kinds: lost_write, aborted_read, misordered_ack (realtime_order), unseen, offset_mismatch,
    nonmonotonic_send, send_reorder, swapped_acks (cycle);
  poll kinds: poll_skip, int_poll_skip, nonmonotonic_poll, inconsistent (inconsistent_offsets),
    duplicate, hw_regression, int_nonmonotonic_poll, dirty_read, corrupt_value (garbage_read),
    and observations in the poll's op value: reordered_answers (response_reorder), early_fetch
    (early_empty_fetch), hung_poll (hung_request), corrupt_batch (corrupt_read).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import attrs
import pyarrow as pa

from kafkaref.history.format import CheckConfig
from kafkaref.history.store import OPS_SCHEMA, RECORDS_SCHEMA, HistoryWriter, WriterLimits

TOPIC = "t"
ROUND_NS = 100
# Injection kind -> the anomaly that must report it. New kinds go at the END of their dict: the
# order fixes which kind a seeded draw picks, so appending keeps older seeds' histories.
SEND_KINDS = {"lost_write": "lost_write", "aborted_read": "aborted_read",
              "misordered_ack": "realtime_order",
              "unseen": "unseen",  # acked (acks=0 style, no offset), never written
              "offset_mismatch": "offset_mismatch",  # acked at its round neighbour's offset
              "nonmonotonic_send": "nonmonotonic_send",  # acked at its previous send's offset
              "send_reorder": "send_reorder",  # two retried (info) sends land swapped
              "swapped_acks": "cycle"}  # two sends of a round get each other's offsets
POLL_KINDS = {"poll_skip": "poll_skip", "int_poll_skip": "int_poll_skip",
              "nonmonotonic_poll": "nonmonotonic_poll", "inconsistent": "inconsistent_offsets",
              "duplicate": "duplicate", "hw_regression": "hw_regression",
              "int_nonmonotonic_poll": "int_nonmonotonic_poll",  # a record repeated in a poll
              "dirty_read": "dirty_read",  # a poll reads past the log end a value never kept
              "corrupt_value": "garbage_read",  # a poll returns a value with a bit flipped
              # observations in the poll's op value (history/format.py): a client's measures
              "reordered_answers": "response_reorder", "early_fetch": "early_empty_fetch",
              "hung_poll": "hung_request",
              "corrupt_batch": "corrupt_read"}  # a poll met bytes that are no batch
INJECTIONS = {**SEND_KINDS, **POLL_KINDS}  # injection kind -> the anomaly that must report it
# Send kinds acknowledged at another send's offset: their ops interleave in the version order.
_CYCLIC = frozenset({"misordered_ack", "offset_mismatch", "nonmonotonic_send", "swapped_acks"})
# Injection kind -> the other anomalies the same fault can show up as (ground truth "also"; see
# scoring.py). Whether each fires can depend on the neighbours (a value acked at a taken offset
# forms a write-write cycle only if it sorts after the value there), so they explain cases
# (precision) but recall is measured on the anomaly in INJECTIONS alone.
_TAKEN = ("inconsistent_offsets", "duplicate", "offset_mismatch")  # acked at another's offset
SIDE_EFFECTS: dict[str, tuple[str, ...]] = {
    "lost_write": ("unseen", "int_poll_skip", "dirty_read"),  # final reads skip it; polls saw it
    "aborted_read": (),
    "misordered_ack": (*_TAKEN, "nonmonotonic_send", "cycle"),
    "unseen": ("garbage_read",),  # the log holds a value whose send record says another
    "offset_mismatch": ("inconsistent_offsets", "duplicate", "cycle"),
    "nonmonotonic_send": (*_TAKEN, "realtime_order", "cycle"),
    "send_reorder": (),
    "swapped_acks": _TAKEN,
    "poll_skip": (),
    "int_poll_skip": (),
    "nonmonotonic_poll": (),
    # the log holds another value there, one nobody sent
    "inconsistent": ("offset_mismatch", "dirty_read", "garbage_read"),
    "duplicate": ("inconsistent_offsets", "offset_mismatch", "dirty_read", "cycle"),
    "hw_regression": (),
    "int_nonmonotonic_poll": (),
    # the offset read past the end is written later (another value there), and the next poll
    # starts at it again
    "dirty_read": ("inconsistent_offsets", "offset_mismatch", "nonmonotonic_poll",
                   "garbage_read"),
    "corrupt_value": ("inconsistent_offsets", "offset_mismatch", "dirty_read"),
    "reordered_answers": (),
    "early_fetch": (),
    "hung_poll": (),
    "corrupt_batch": (),
}
# The observation each op-level injection puts in its poll's completion (history/format.py).
OBSERVATIONS = {
    "reordered_answers": {"sent": [1, 2], "answered": [2, 1]},
    "early_fetch": {"max_wait_ms": 500, "empty_fetch_ms": 3},
    "hung_poll": {"timeout_ms": 3000, "waited_ms": 9000, "probe": "answered"},
    "corrupt_batch": {"corrupt_batch": {"topic": TOPIC, "partition": 0, "offset": 0}},
}
_MASK = (1 << 64) - 1


def _mix(*parts: int, x: int = 0) -> int:
    """A 64-bit hash of integers (splitmix64 finaliser): the seeded randomness of the log.
    _mix(*a, *b) == _mix(*b, x=_mix(*a)): hashes sharing a prefix can share its work."""
    for part in parts:
        x = (x ^ (part & _MASK)) * 0x9E3779B97F4A7C15 & _MASK
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & _MASK
        x = (x ^ (x >> 27)) * 0x94D049BB133111EB & _MASK
        x ^= x >> 31
    return x


def _unit(*parts: int) -> float:
    return _mix(*parts) / 2.0**64


@attrs.frozen
class SynthSpec:
    sends: int = attrs.field(validator=attrs.validators.ge(1))
    partitions: int = attrs.field(default=4, validator=attrs.validators.ge(1))
    producers: int = attrs.field(default=4, validator=attrs.validators.ge(1))
    consumers: int = attrs.field(default=2, validator=attrs.validators.ge(1))
    poll_every: int = attrs.field(default=4, validator=attrs.validators.ge(1))  # rounds per poll
    seed: int = 0
    rates: dict = attrs.field(factory=dict)  # injection kind -> rate
    config: CheckConfig = CheckConfig()

    def __attrs_post_init__(self):
        unknown = set(self.rates) - set(INJECTIONS)
        if unknown:
            raise ValueError(f"unknown injection kinds {sorted(unknown)}; known: {sorted(INJECTIONS)}")
        if any(not 0 <= rate <= 1 for rate in self.rates.values()):
            raise ValueError("injection rates must lie between 0 and 1")
        for kinds in (SEND_KINDS, POLL_KINDS):
            if sum(self.rates.get(k, 0.0) for k in kinds) > 1:
                raise ValueError("injection rates of one opportunity must sum to at most 1")

    @property
    def rounds(self) -> int:
        """Every round is full: the history holds rounds * producers sends (sends rounded up)."""
        return -(-self.sends // self.producers)


class _Layout:
    """Closed-form coordinates of the round layout."""

    def __init__(self, spec: SynthSpec):
        self.s = spec
        self.n, self.p, self.q = spec.producers, spec.partitions, spec.poll_every
        self.assign_ops = 2 * spec.consumers
        # Rounds are visited a few at a time (a round, a poll window, a final read's sweep):
        # small caches make every hash of a round be computed about once.
        self.round_hash = functools.lru_cache(maxsize=1 << 12)(self.round_hash)
        self._reorders = spec.rates.get("send_reorder", 0.0) > 0
        self.block = functools.lru_cache(maxsize=1 << 12)(self._block)
        self.draws = functools.lru_cache(maxsize=1 << 12)(self._draws)
        self._reordered = functools.lru_cache(maxsize=1 << 12)(
            lambda r: frozenset(j for j, kind in enumerate(self.draws(r))
                                if kind == "send_reorder" and self._reorder_possible(r, j)))
        self._send_total = _edges(spec.rates, SEND_KINDS)[-1]

    def is_poll_round(self, r: int) -> bool:
        return (r // self.p) % self.q == self.q - 1

    def polls_before(self, r: int) -> int:
        cycle = self.p * self.q
        return (r // cycle) * self.p + max(0, r % cycle - (self.q - 1) * self.p)

    def base_index(self, r: int) -> int:
        return self.assign_ops + 2 * self.n * r + 2 * self.polls_before(r)

    def round_hash(self, r: int) -> int:
        return _mix(self.s.seed, r)

    def slot(self, r: int, j: int) -> int:
        h = self.round_hash(r)
        b = h % self.n
        return (b - j) % self.n if h >> 63 else (j + b) % self.n

    def producer_at(self, r: int, slot: int) -> int:
        h = self.round_hash(r)
        b = h % self.n
        return (b - slot) % self.n if h >> 63 else (slot - b) % self.n

    def value_at(self, partition: int, offset: int) -> int:
        return self.block((offset // self.n) * self.p + partition)[offset % self.n]

    def _block(self, r: int) -> tuple[int, ...]:
        """The values round r's offsets hold, in slot order: each slot's producer's send,
        unless a send_reorder swapped it with the same producer's send one round of the
        partition away."""
        values = [r * self.n + self.producer_at(r, slot) for slot in range(self.n)]
        if self._reorders:
            later = self.reordered(r)
            earlier = self.reordered(r - self.p) if r >= self.p else frozenset()
            step = self.p * self.n
            values = [v + step if v % self.n in later else v - step if v % self.n in earlier
                      else v for v in values]
        return tuple(values)

    def log_end(self, partition: int) -> int:
        rounds = self.s.rounds
        full = rounds // self.p + (1 if partition < rounds % self.p else 0)
        return full * self.n

    def send_injection(self, r: int, j: int) -> str | None:
        """The kind drawn for send j of round r (applied() says whether it can apply there)."""
        return self.draws(r)[j]

    def _draws(self, r: int) -> tuple[str | None, ...]:
        """_pick(rates, SEND_KINDS, _unit(seed, 1, r, j)) for every j, sharing the hash of
        (seed, 1, r) and skipping _pick when no kind can be drawn (u past the rates' sum)."""
        prefix, total = _mix(self.s.seed, 1, r), self._send_total
        draws = [_mix(j, x=prefix) / 2.0**64 for j in range(self.n)]
        return tuple(None if u >= total else _pick(self.s.rates, SEND_KINDS, u) for u in draws)

    def applied(self, r: int, j: int) -> str | None:
        """The send injection that really happens at (r, j): the draw, if its preconditions
        hold. Pair kinds need a partner send with no injection of its own."""
        kind = self.send_injection(r, j)
        qq, n = r // self.p, self.n
        if kind == "misordered_ack" and qq < 2 or kind == "nonmonotonic_send" and qq < 1:
            return None
        if kind == "lost_write" and qq * n + self.slot(r, j) >= self.log_end(r % self.p) - 1:
            return None
        if kind in ("offset_mismatch", "swapped_acks") and n < 2:
            return None
        if kind == "send_reorder" and not self._reorder_possible(r, j):
            return None
        if kind == "nonmonotonic_send" and not self._clean(r - self.p, j):
            return None  # an injected previous send may itself be acked lower than its slot
        if kind == "misordered_ack" and not any(self._clean(r - self.p, k) for k in range(n)):
            return None  # realtime_order needs an earlier completed send acked above it
        if kind == "swapped_acks":
            partner = self.swap_partner(r, j)
            if self.send_injection(r, partner) is not None or self.reorder_partner(r, partner):
                return None
            if self._near_other_cycles(r, j):
                return None
        return kind

    def _near_other_cycles(self, r: int, j: int) -> bool:
        """Could another injection's ops interleave with round r's in the version order? Then
        the swap's cycle and theirs would be one strongly connected component, which the cycle
        check reports with one witness for both. Such ops are acked at another's offset in round
        r (drawn in round r, or one or two rounds of the partition later) or a duplicate polled
        over round r."""
        p, q = self.p, self.q
        if any(kind in _CYCLIC for k, kind in enumerate(self.draws(r)) if k != j):
            return True
        if any(kind in _CYCLIC for d in (1, 2) for kind in self.draws(r + d * p)):
            return True
        qq = r // p
        return self.poll_injection((qq + q - 1 - qq % q) * p + r % p) == "duplicate"

    def _clean(self, r: int, j: int) -> bool:
        """Send (r, j) is acknowledged at its own slot: no injection of its own, and not the
        partner of one (swapped_acks partners get another offset, send_reorder ones none)."""
        if self.send_injection(r, j) is not None or self.reorder_partner(r, j):
            return False
        before = self.producer_at(r, (self.slot(r, j) - 1) % self.n)
        return (self.n < 2 or self.send_injection(r, before) != "swapped_acks"
                or self.applied(r, before) != "swapped_acks")

    def _reorder_possible(self, r: int, j: int) -> bool:
        """The partner (r + P, j) exists, has no injection, and no poll falls between the two
        (a poll in between would read the later value before it was sent)."""
        return (not self.is_poll_round(r) and r + self.p < self.s.rounds
                and self.send_injection(r + self.p, j) is None)

    def reordered(self, r: int) -> frozenset[int]:
        """Producers whose send in round r is swapped (send_reorder) with their next one."""
        return self._reordered(r) if self._reorders else frozenset()

    def reorder_partner(self, r: int, j: int) -> bool:
        return r >= self.p and j in self.reordered(r - self.p)

    def swap_partner(self, r: int, j: int) -> int:
        """The producer in the next slot of round r (swapped_acks exchanges offsets with it)."""
        return self.producer_at(r, (self.slot(r, j) + 1) % self.n)

    def poll_injection(self, r: int) -> str | None:
        return _pick(self.s.rates, POLL_KINDS, _unit(self.s.seed, 2, r))


def _edges(rates: dict, kinds: dict) -> list[float]:
    """The cumulative rates _pick compares u with, summed in the same order (same floats)."""
    edges, edge = [0.0], 0.0
    for kind in kinds:
        edge += rates.get(kind, 0.0)
        edges.append(edge)
    return edges


def _pick(rates: dict, kinds: dict, u: float) -> str | None:
    edge = 0.0
    for kind in kinds:
        edge += rates.get(kind, 0.0)
        if u < edge:
            return kind
    return None


class _Columns:
    """Rows of one table, kept as tuples (one append per row) and turned into columns when a
    table is taken."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.rows: list[tuple] = []
        self.add = lambda *row: self.rows.append(row)

    def table(self) -> pa.Table:
        columns = list(zip(*self.rows, strict=True)) or [() for _ in self.schema]
        if len(columns) != len(self.schema):
            raise ValueError(f"rows of {len(columns)} cells for {len(self.schema)} columns")
        table = pa.table([pa.array(c, f.type) for c, f in zip(columns, self.schema, strict=True)],
                         schema=self.schema)
        self.rows = []
        return table

    def __len__(self) -> int:
        return len(self.rows)


def generate(spec: SynthSpec, path: str | Path, progress: Callable[[int, int], None] | None = None,
             chunk_rounds: int = 4096, limits: WriterLimits | None = None) -> dict:
    """Write the history and ground_truth.jsonl; returns a summary (counts per injection)."""
    path = Path(path)
    lay = _Layout(spec)
    truth: list[dict] = []
    meta = {"generator": "kafkaref synth", "spec": {**attrs.asdict(spec, recurse=False),
                                                    "config": spec.config.as_dict()}}
    with HistoryWriter(path, config=spec.config, meta=meta,
                       limits=limits or WriterLimits()) as writer:
        ops, records = _Columns(OPS_SCHEMA), _Columns(RECORDS_SCHEMA)
        for c in range(spec.consumers):
            ops.add(2 * c, 0, spec.producers + c, "invoke", "assign", None, None, None)
            ops.add(2 * c + 1, 1, spec.producers + c, "ok", "assign", 2 * c, None,
                    json.dumps([[TOPIC, p] for p in range(spec.partitions) if p % spec.consumers == c]))
        for r in range(spec.rounds):
            _round(lay, r, ops, records, truth)
            if (r + 1) % chunk_rounds == 0:
                writer.ops_table(ops.table())
                writer.records_table(records.table())
                if progress:
                    progress(r + 1, spec.rounds)
        _final_reads(lay, ops, records, writer, truth)
        writer.ops_table(ops.table())
        writer.records_table(records.table())
        summary = {"ops": writer.ops.rows, "records": writer.records.rows}
    with open(path / "ground_truth.jsonl", "w") as handle:
        for item in truth:
            handle.write(json.dumps(item) + "\n")
    if progress:
        progress(spec.rounds, spec.rounds)
    summary["records"] = writer.records.rows
    summary["injected"] = {k: sum(1 for t in truth if t["kind"] == k) for k in INJECTIONS}
    return summary


def _round(lay: _Layout, r: int, ops: _Columns, records: _Columns, truth: list[dict]) -> None:
    n, p = lay.n, r % lay.p
    base, t0 = lay.base_index(r), r * ROUND_NS
    kinds = [lay.applied(r, j) for j in range(n)]
    swapped_with = {lay.swap_partner(r, j): j for j in range(n) if kinds[j] == "swapped_acks"}
    for j in range(n):
        type_, acked, sent, item = _send(lay, r, j, kinds[j], swapped_with)
        invoke_time, complete_time = t0 + j % 10, t0 + 50 + j % 10
        ops.add(base + j, invoke_time, j, "invoke", "send", None, None, None)
        ops.add(base + n + j, complete_time, j, type_, "send", base + j,
                "injected" if type_ != "ok" else None, None)
        records.add(base + n + j, 0, "send", j, type_, invoke_time, complete_time, TOPIC, p,
                    acked, sent)
        if item:
            truth.append(item)
    if lay.is_poll_round(r):
        _poll(lay, r, base + 2 * n, ops, records, truth)


def _send(lay: _Layout, r: int, j: int, kind: str | None, swapped_with: dict[int, int]):
    """(type, acknowledged offset, value sent, ground truth or None) of send j of round r."""
    n, p, qq = lay.n, r % lay.p, r // lay.p
    offset, value = qq * n + lay.slot(r, j), r * n + j
    if lay.reorder_partner(r, j):  # the later send of a send_reorder pair (truth: the earlier)
        return "info", None, value, None
    if j in swapped_with:  # the partner of a swapped_acks: gets the initiator's offset
        return "ok", qq * n + lay.slot(r, swapped_with[j]), value, None
    type_, acked, sent, others = "ok", offset, value, []  # others: (round, producer) involved
    if kind == "aborted_read":
        type_, acked = "fail", None
    elif kind == "misordered_ack":
        acked = offset - 2 * n
    elif kind == "unseen":
        acked, sent = None, -(1 << 40) - value  # what the producer sent never reached the log
    elif kind in ("offset_mismatch", "swapped_acks"):
        other = lay.swap_partner(r, j)
        acked, others = qq * n + lay.slot(r, other), [(r, other)]
    elif kind == "nonmonotonic_send":
        acked, others = (qq - 1) * n + lay.slot(r - lay.p, j), [(r - lay.p, j)]
    elif kind == "send_reorder":
        type_, acked, others = "info", None, [(r + lay.p, j)]
    if kind is None:
        return type_, acked, sent, None
    locations = [[TOPIC, p, offset]] + (
        [[TOPIC, p, acked]] if acked is not None and acked != offset else [])
    item = {"kind": kind, "anomaly": INJECTIONS[kind], "also": list(SIDE_EFFECTS[kind]),
            "values": [sent] + (
                [value] if sent != value else []),
            "locations": locations, "ops": [lay.base_index(r) + n + j]}
    for rr, jj in others:
        item["values"].append(rr * n + jj)
        item["locations"].append([TOPIC, p, rr // lay.p * n + lay.slot(rr, jj)])
        item["ops"].append(lay.base_index(rr) + n + jj)
    return type_, acked, sent, item


def _poll(lay: _Layout, r: int, index: int, ops: _Columns, records: _Columns,
          truth: list[dict]) -> None:
    n, p, qq = lay.n, r % lay.p, r // lay.p
    process = lay.s.producers + p % lay.s.consumers
    invoke_time, complete_time = r * ROUND_NS + 80, r * ROUND_NS + 90
    end = (qq + 1) * n
    start = (qq - lay.q + 1) * n
    pairs = [(o, lay.value_at(p, o)) for o in range(start, end)]
    hw = end
    kind = lay.poll_injection(r) if qq >= 2 * lay.q - 1 and len(pairs) >= 3 else None
    if kind and lay.poll_injection(r - lay.p * lay.q) is not None:
        # The previous poll of the partition was drawn an injection too: it may hide this one
        # (a dirty read past the end makes a skipped first record look in order; a lowered hw
        # makes a lowered one not go back).
        kind = None
    touched_values, locations, touched_ops = [], [], [index + 1]
    if kind == "poll_skip":
        pairs = pairs[1:]
    elif kind == "int_poll_skip":
        pairs = pairs[:1] + pairs[2:]
    elif kind == "nonmonotonic_poll":
        pairs = [(start - 1, lay.value_at(p, start - 1))] + pairs
    elif kind == "inconsistent":
        fresh = -(r + 1)
        pairs[0] = (pairs[0][0], fresh)
        touched_values, locations = [fresh], [[TOPIC, p, pairs[0][0]]]
    elif kind == "duplicate":
        pairs[-1] = (pairs[-1][0], pairs[0][1])
        touched_values, locations = [pairs[0][1]], [[TOPIC, p, pairs[-1][0]]]
        writer_round, writer = divmod(pairs[0][1], n)
        touched_ops.append(lay.base_index(writer_round) + n + writer)
    elif kind == "hw_regression":
        hw = start - 1
    elif kind == "int_nonmonotonic_poll":
        pairs = pairs[:1] + pairs
        locations = [[TOPIC, p, pairs[0][0]]]
    elif kind == "dirty_read":  # read past the log end; the final log never holds it
        fresh = -(1 << 41) - r
        pairs = pairs + [(end, fresh)]
        touched_values, locations = [fresh], [[TOPIC, p, end]]
    elif kind == "corrupt_value":  # a high bit flipped: a value no producer has
        flipped = pairs[1][1] ^ (1 << 62)
        pairs[1] = (pairs[1][0], flipped)
        touched_values, locations = [flipped], [[TOPIC, p, pairs[1][0]]]
    observed = json.dumps(OBSERVATIONS[kind]) if kind in OBSERVATIONS else None
    ops.add(index, invoke_time, process, "invoke", "poll", None, None, None)
    ops.add(index + 1, complete_time, process, "ok", "poll", index, None, observed)
    for position, (offset, value) in enumerate(pairs):
        records.add(index + 1, position, "poll", process, "ok", invoke_time, complete_time,
                    TOPIC, p, offset, value)
    records.add(index + 1, len(pairs), "hw", process, "ok", invoke_time, complete_time, TOPIC, p,
                hw, None)
    if kind:
        truth.append({"kind": kind, "anomaly": INJECTIONS[kind],
                      "also": list(SIDE_EFFECTS[kind]), "values": touched_values,
                      "locations": locations, "ops": touched_ops})


def _final_reads(lay: _Layout, ops: _Columns, records: _Columns, writer: HistoryWriter,
                 truth: list[dict]) -> None:
    lost = {(loc[1], loc[2]) for t in truth if t["kind"] == "lost_write" for loc in t["locations"]}
    # The log is read straight from the round layout; the values send_reorder swapped come from
    # the ground truth (as many as injected), so the sweep needs no injection draws.
    swapped = {}
    for t in truth:
        if t["kind"] == "send_reorder":
            (_, p, earlier), (_, _, later) = t["locations"]
            swapped[(p, earlier)], swapped[(p, later)] = t["values"][1], t["values"][0]
    index = lay.base_index(lay.s.rounds)
    time = lay.s.rounds * ROUND_NS + 10
    n = lay.n
    for p in range(lay.p):
        process = lay.s.producers + lay.s.consumers + p
        ops.add(index, time, process, "invoke", "final_read", None, None, None)
        ops.add(index + 1, time + 5, process, "ok", "final_read", index, None, None)
        position = 0
        for offset in range(lay.log_end(p)):
            if (p, offset) in lost:
                continue
            r = offset // n * lay.p + p
            value = swapped.get((p, offset), r * n + lay.producer_at(r, offset % n))
            records.add(index + 1, position, "final_read", process, "ok", time, time + 5, TOPIC,
                        p, offset, value)
            position += 1
            if len(records) >= 1 << 18:
                writer.records_table(records.table())
        index += 2
