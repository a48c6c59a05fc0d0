"""Readable text renderings of model states, for counterexamples and notes.

    t=1200ms  brokers: b1 up, b2 DOWN, b3 up
    p0  controller: leader b1 epoch 2 (v5) isr {b1,b3} elr {}
      b1* log [0:A0/e0 1:A1/e0 | 2:A2/e2]  leo 3 hw 2 flushed 0  isr {b1,b3} pending {b1,b2,b3}
          followers b2@-1 b3@3
      b2  log [0:A0/e0]  leo 1 hw 0 flushed 1  -> b1 e2
    purgatory: produce #7 at b1 p0 needs hw>=3 until 31200ms
"""

from __future__ import annotations

from kafkaref.model.values import DelayedDeleteRecords, DelayedProduce, ModelState, Replica


def broker_name(broker: int | None) -> str:
    return "none" if broker is None else f"b{broker + 1}"


def set_name(members) -> str:
    return "{" + ",".join(broker_name(b) for b in sorted(members)) + "}"


def render_log(replica: Replica, limit: int = 12) -> str:
    """Records as offset:id/epoch; '|' marks a batch boundary; long logs keep their tail."""
    items = []
    start = max(0, replica.leo - limit)
    for offset in range(start, replica.leo):
        entry = replica.log[offset]
        if offset > start and entry.base == offset:
            items.append("|")
        items.append(f"{offset}:r{entry.id}/e{entry.epoch}")
    prefix = "... " if start else ""
    return "[" + prefix + " ".join(items) + "]"


def render_replica(broker: int, replica: Replica) -> list[str]:
    leading = replica.leader == broker
    mark = "*" if leading else " "
    head = (f"  {broker_name(broker)}{mark} log {render_log(replica)}  leo {replica.leo} "
            f"hw {replica.hw} flushed {replica.flushed}")
    if leading:
        head += f"  isr {set_name(replica.isr)}"
        if replica.pending_isr is not None:
            head += f" pending {set_name(replica.pending_isr)}"
        followers = " ".join(
            f"{broker_name(f)}@{replica.follower_offsets[f]}"
            for f in range(len(replica.follower_offsets)) if f != broker
        )
        return [head + f"  epoch {replica.leader_epoch}", f"      followers {followers}"]
    return [head + f"  -> {broker_name(replica.leader)} e{replica.leader_epoch}"]


def render_state(state: ModelState) -> str:
    brokers = ", ".join(
        f"{broker_name(b)} {'up' if up else 'DOWN'}" for b, up in enumerate(state.alive)
    )
    lines = [f"t={state.now_ms}ms  brokers: {brokers}"]
    for p, part in enumerate(state.partitions):
        c = part.control
        lines.append(
            f"p{p}  controller: leader {broker_name(c.leader)} epoch {c.leader_epoch} "
            f"(v{c.partition_epoch}) isr {set_name(c.isr)} elr {set_name(c.elr)}"
        )
        for broker, replica in enumerate(part.replicas):
            if replica is not None:
                lines.extend(render_replica(broker, replica))
    for op in state.purgatory:
        if isinstance(op, DelayedProduce):
            lines.append(f"purgatory: produce #{op.request_id} at {broker_name(op.broker)} "
                         f"p{op.partition} needs hw>={op.required_offset} until {op.deadline_ms}ms")
        elif isinstance(op, DelayedDeleteRecords):
            lines.append(f"purgatory: delete records #{op.request_id} at "
                         f"{broker_name(op.broker)} p{op.partition} needs low watermark>="
                         f"{op.required_offset} until {op.deadline_ms}ms")
        else:
            lines.append(f"purgatory: fetch #{op.request_id} at {broker_name(op.broker)} "
                         f"p{op.partition} offset {op.offset} min {op.min_bytes}B "
                         f"until {op.deadline_ms}ms")
    return "\n".join(lines)


def diff_states(before: ModelState, after: ModelState) -> list[str]:
    """The lines of the rendering that changed (for step-by-step traces)."""
    old = set(render_state(before).splitlines())
    return [line for line in render_state(after).splitlines() if line not in old]
