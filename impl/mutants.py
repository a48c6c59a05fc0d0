"""The one registry of deliberate faults ("mutants", docs/bugs.md): what each breaks, where it lives.

A mutant is a switchable bug in impl/ that the checks (lockstep machines, storage machine, broker
and chaos checks) must catch; `kafkaref mutants` runs them and prints who caught what.

How a mutant is switched on -- and the only ways:
- in tests, by constructing a config or cluster in-process: PartitionConfig / LogConfig /
  ServerConfig / BrokerConfig(mutants=...), ControllerState(mutants=...),
  LocalCluster(..., mutants=...);
- for a broker process, `kafkaref broker --mutant M2 --allow-deliberate-bugs` (and `kafkaref
  cluster --mutant M2 --allow-deliberate-bugs`, which passes them on); without the
  acknowledgement the broker refuses to start.
Nothing a client sends (CreateTopics configs, AlterConfigs, ...) reaches these sets: topic
configs under the reserved `kafkaref.` prefix are refused with INVALID_CONFIG.

`parse_mutants` is the one validation (every config field uses it as its converter). A mutant
never branches inside the rule it breaks: each layer states those rules as functions and puts
the fault in the rule's place when its config is built (impl/core/rules.py, impl/storage/
rules.py, ServerConfig.mutes, impl/replication/apply.truncation_rule, ControllerState's epoch
bump), so the rule's body reads as the correct protocol. Configs also carry `on`, a `Switches`
of plain bools computed once per set, for tests and reports.

client_observable: the fault changes what a client is told (an error code, an offset, the
records, the order or timing of answers, the leader epoch in Metadata), as opposed to only
internal replica state that a later failure turns into loss (M5, M15): the black-box checks
(chaos histories, conformance) can see the first kind directly.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable

import attrs

LAYERS = ("core", "storage", "server", "controller", "replication")

# M12 is in the catalogue but cannot be built in this design; why, in one place.
M12_ABSENT = (
    "M12 cannot be switched on: this design has no partition lock to step outside of. Every "
    "request runs against the single-threaded core under the server's one core lock "
    "(impl/server: the I/O threads call Broker.handle holding it), and offsets are assigned "
    "in the same call that appends (the log's append_as_leader stamps them from its own log "
    "end as it writes, in both PartitionLog implementations). Both logs also refuse a stamped "
    "batch below their log end (ValueError), so a stale offset could never be written twice. "
    "Building the bug would take two deliberate changes (release the core lock between "
    "assignment and append, and drop the log's offset check), i.e. a different design. "
    "What guards the property instead: the concurrent-produce test in "
    "properties/tests/server/test_server_mutants.py (unique, dense offsets under contention).")


class Mutant(enum.Enum):
    """M1..M15 from docs/bugs.md. Value = code; `.breaks` is what goes wrong when it is on."""

    #    code   layer          client_observable  breaks
    M1 = ("M1", "core", True,
          "hw advanced from the leader's leo alone (ignores followers): acked write lost on "
          "failover")
    M2 = ("M2", "core", True,
          "acks=all acknowledged before the hw passes the batch: acked write lost")
    M3 = ("M3", "core", True,
          "min.insync.replicas not enforced (acks=all and hw with a small ISR): acked write lost")
    M4 = ("M4", "core", True,
          "consumer fetch served above the hw: read of a later-truncated record")
    M5 = ("M5", "replication", False,
          "follower truncates to its hw instead of by leader epoch: B1 on a real broker")
    M6 = ("M6", "storage", True,
          "offset index lookup one entry too far: wrong records, skipped offsets")
    M7 = ("M7", "storage", True,
          "CRC not validated on append: corrupt batch accepted")
    M8 = ("M8", "storage", True,
          "recovery keeps a torn tail: unreadable or corrupt log after a crash")
    M9 = ("M9", "server", True,
          "connections not muted: responses of one connection reordered")
    M10 = ("M10", "core", True,
           "produce purgatory never expires: acks=all requests hang instead of timing out")
    M11 = ("M11", "core", True,
           "fetch purgatory ignores min_bytes: fetches answered at once (busy polling)")
    M12 = ("M12", "core", True,
           "offsets assigned outside the partition lock: duplicate offsets (cannot exist here)")
    M13 = ("M13", "storage", True,
           "segment roll drops the batch that triggered it: lost write, offset gap")
    M14 = ("M14", "controller", True,
           "leader epoch not bumped on leader change: divergence (B3/B4 shape)")
    M15 = ("M15", "core", False,
           "ISR expanded with a follower below the hw: B7 on a real broker")

    def __new__(cls, code: str, layer: str, client_observable: bool, breaks: str):
        member = object.__new__(cls)
        member._value_ = code
        member.code, member.layer = code, layer
        member.client_observable, member.breaks = client_observable, breaks
        return member

    @property
    def possible(self) -> bool:
        """False for a catalogue entry this design cannot have (M12: see M12_ABSENT)."""
        return self is not Mutant.M12

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"Mutant.{self.code}"


NONE: frozenset[Mutant] = frozenset()


def parse_mutants(values: Iterable[str | Mutant] | str | None) -> frozenset[Mutant]:
    """The one validation: codes ("M2", "m2") or Mutant members -> a frozenset of Mutants.

    A single string may list several codes separated by commas. Unknown codes and mutants this
    design cannot have (M12) raise ValueError with the reason and the list of known codes."""
    if values is None:
        return NONE
    if isinstance(values, (str, Mutant)):
        values = [values]
    out = set()
    for value in values:
        if isinstance(value, Mutant):
            out.add(value)
            continue
        if not isinstance(value, str):
            raise TypeError(f"a mutant is a code like 'M2' or a Mutant, not {value!r}")
        for code in (c.strip().upper() for c in value.split(",")):
            if not code:
                continue
            try:
                out.add(Mutant(code))
            except ValueError:
                known = ", ".join(m.code for m in Mutant)
                raise ValueError(f"unknown mutant {code!r}; known: {known}") from None
    if Mutant.M12 in out:
        raise ValueError(M12_ABSENT)
    return frozenset(out)


def replacements(faults: dict[Mutant, dict[str, object]], mutants) -> dict[str, object]:
    """{rule name: the faulty function in its place} for the mutants of `mutants` a layer's
    `faults` table knows (impl/core/rules.py, impl/storage/rules.py): what a layer's rules
    table is built with, so a mutant replaces a rule rather than branching inside it."""
    replaced: dict[str, object] = {}
    for mutant in mutants:
        replaced.update(faults.get(mutant, {}))
    return replaced


def of_layer(layer: str) -> tuple[Mutant, ...]:
    if layer not in LAYERS:
        raise ValueError(f"unknown layer {layer!r}; layers: {', '.join(LAYERS)}")
    return tuple(m for m in Mutant if m.layer == layer)


class Switches:
    """One bool per mutant code (`on.M4`), fixed at construction: what hot paths test."""

    __slots__ = tuple(m.code for m in Mutant) + ("any",)

    def __init__(self, mutants: frozenset[Mutant]):
        for mutant in Mutant:
            object.__setattr__(self, mutant.code, mutant in mutants)
        object.__setattr__(self, "any", bool(mutants))

    def __setattr__(self, name, value):
        raise AttributeError("Switches are fixed; build a new config to change mutants")

    def __repr__(self) -> str:
        on = [m.code for m in Mutant if getattr(self, m.code)]
        return f"Switches({', '.join(on) or 'none'})"


@functools.lru_cache(maxsize=64)
def switches(mutants: frozenset[Mutant]) -> Switches:
    return Switches(mutants)


OFF = switches(NONE)


def mutants_field():
    """A config's `mutants` attribute: the deliberate faults it switches on (codes validated by
    parse_mutants; none by default)."""
    return attrs.field(default=NONE, converter=parse_mutants)


def switches_field():
    """A config's `on` attribute, declared after `mutants`: its Switches, computed once at
    construction (what hot paths test), not part of equality or repr."""
    return attrs.field(init=False, eq=False, repr=False,
                       default=attrs.Factory(lambda config: switches(config.mutants),
                                             takes_self=True))
