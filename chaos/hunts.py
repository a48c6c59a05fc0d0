"""Hunts: per broker mutant, the fault schedule under which a chaos run makes it observable.

A Jepsen tester picks faults for the bug it hunts. Each client-observable mutant
(impl/mutants.py) gets a cycle of (kind, target, seconds) steps for nemesis.hunting_schedule and
the anomaly it shows up as (docs/bugs.md, "chaos column"). Every hunt must leave the correct
broker valid: the cycles only use faults acks=all, min ISR 2, unclean election off survives
(and corrupt, which a correct broker's recovery survives on a follower), and the probes judge
timing only against bounds a correct broker keeps (history/format.py, observations).

    kafkaref chaos run --mutant M10 --allow-deliberate-bugs --hunt   # its hunting schedule
"""

from __future__ import annotations

import attrs

from kafkaref.chaos.nemesis import HUNTING_CYCLE, LAGGING_LEADER, hunting_schedule


@attrs.frozen
class Hunt:
    cycle: tuple = HUNTING_CYCLE
    gap_s: float = 2.0
    expect: str = ""  # the anomaly that catches it
    segment_bytes: int | None = None  # the brokers' segment size, if the hunt needs rolls
    workload: tuple = ()  # (WorkloadConfig field, value) overrides
    min_seconds: float = 0.0  # a hunt whose story needs more steps runs at least this long

    def options(self, mutant: str | None, time_limit_s: float, **kw):
        """RunOptions of a chaos run hunting mutant with this hunt."""
        from kafkaref.chaos.run import RunOptions
        from kafkaref.chaos.workload import WorkloadConfig

        # at least one whole cycle, whatever the budget (M10's 12 s isolation in a 10 s run
        # would leave no fault at all)
        cycle_s = 2.0 + sum(duration + self.gap_s for *_, duration in self.cycle) - self.gap_s
        time_limit_s = max(time_limit_s, self.min_seconds, cycle_s)
        return RunOptions(time_limit_s=time_limit_s, mutants=(mutant,) if mutant else (),
                          schedule=tuple(hunting_schedule(time_limit_s, cycle=self.cycle,
                                                          gap_s=self.gap_s)),
                          segment_bytes=self.segment_bytes,
                          workload=WorkloadConfig(**dict(self.workload)), **kw)


HUNTS: dict[str, Hunt] = {
    "M1": Hunt(expect="lost_write (a deposed leader's acknowledged tail truncated)"),
    "M2": Hunt(expect="lost_write"),
    "M4": Hunt(expect="dirty_read"),
    "M6": Hunt(expect="poll_skip / inconsistent_offsets (reads from the wrong index entry)"),
    # Produce requests corrupted on the wire: the CRC check is all that refuses them.
    "M7": Hunt(cycle=(("corrupt-net", "produce", 4.0),), expect="garbage_read"),
    # A follower's segment torn at rest, then leaders killed so that it may lead.
    # (measured: missed in 30 s of faults with seed 1, caught in 40 s: the torn replica must be
    # restarted, catch up and then lead, which takes a few rounds of the cycle)
    "M8": Hunt(cycle=(("corrupt", "truncate", 2.0), ("kill", "leader", 3.5)), min_seconds=45,
               expect="corrupt_read / lost_write (a torn batch kept and served)"),
    # The probes pipeline a parked fetch and ApiVersions on one connection: no fault needed.
    "M9": Hunt(expect="response_reorder"),
    # A leader cut from its followers and the controller long enough for a produce to outlive
    # its timeout plus the producer's grace: the correct broker answers REQUEST_TIMED_OUT.
    "M10": Hunt(cycle=(("partition", "isolate-all", 12.0),), expect="hung_request"),
    # The probes' fetch of an empty partition must wait max_wait: no fault needed.
    "M11": Hunt(expect="early_empty_fetch"),
    # Segments of a few batches, so every partition rolls every few seconds, and one replica:
    # with followers the gap the dropped batch leaves stops replication (a follower appends
    # only at its log end: impl/replication/apply.py), so acks=all writes only time out from
    # the first roll on (unavailability); a lone leader's hw passes the gap, and the send
    # acknowledged at the dropped offset is missing from a log that extends past it.
    "M13": Hunt(segment_bytes=2048, workload=(("replication_factor", 1),
                                              ("min_insync_replicas", 1)),
                expect="lost_write, poll_skip"),
    # Leaders killed one after another, each long enough (> the controller's 1.5 s session
    # timeout) for a new leader to be elected, and each killed holding a tail its followers lack
    # (the links between brokers slowed first): a new leader keeping its predecessor's epoch
    # lets that tail survive the killed leader's return where the new leader wrote other
    # records, and the next kill may hand it the partition.
    "M14": Hunt(cycle=(("kill", LAGGING_LEADER, 3.5),), gap_s=2.5,
                expect="inconsistent_offsets / lost_write"),
}

# Client-observable mutants no hunt can show soundly, and why.
UNHUNTABLE = {
    "M3": "acks=all accepted with an ISR of one loses nothing a broker acknowledged until that "
          "lone leader loses its disk (power loss): under lose-unfsynced the correct broker "
          "loses acknowledged writes too (no KIP-966 unclean-shutdown fencing here), so no "
          "history tells the mutant from the design; a client sees only an ok where "
          "NOT_ENOUGH_REPLICAS was due, which needs the ISR the history does not hold",
}


def hunt_for(mutant: str | None) -> Hunt:
    """mutant's hunt (the default cycle for None or a mutant with no hunt of its own)."""
    return HUNTS.get(mutant or "", Hunt())


def baseline_options(time_limit_s: float, **kw):
    """One run holding every hunt's faults in turn, each at least once (and the smallest
    segments any hunt asks for): what a correct broker must come out of valid. M13's one-replica
    shape is a workload, not a fault: its own run without the mutant is valid too (measured,
    docs/bugs.md)."""
    from kafkaref.chaos.run import RunOptions

    cycle = tuple(dict.fromkeys(step for hunt in HUNTS.values() for step in hunt.cycle))
    sizes = [h.segment_bytes for h in HUNTS.values() if h.segment_bytes is not None]
    # long enough for every step once, whatever the budget
    time_limit_s = max(time_limit_s, 2.0 + sum(duration + 2.0 for *_, duration in cycle))
    return RunOptions(time_limit_s=time_limit_s, schedule=tuple(hunting_schedule(
        time_limit_s, cycle=cycle)), segment_bytes=min(sizes, default=None), **kw)
