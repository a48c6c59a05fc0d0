"""Human-readable renderings of spec states, for counterexample traces."""

from __future__ import annotations

from kafkaref.spec.state import (
    NIL_EPOCH,
    Log,
    QuorumState,
    ReplicaState,
    State,
    isr_name,
    replica_name,
)


def format_log(log: Log) -> str:
    """Records as id@epoch, e.g. [0@0 1@2]."""
    return "[" + " ".join(f"{record.id}@{record.epoch}" for record in log) + "]"


def _epoch(epoch: int) -> str:
    return "-" if epoch == NIL_EPOCH else str(epoch)


def format_replica(replica: int, replica_state: ReplicaState, log: Log) -> str:
    role = "leader" if replica_state.leader == replica else f"follows {replica_name(replica_state.leader)}"
    return (
        f"{replica_name(replica)}: log {format_log(log)} hw {replica_state.hw} "
        f"epoch {_epoch(replica_state.leader_epoch)} {role} isr {isr_name(replica_state.isr)}"
    )


def format_quorum(quorum: QuorumState) -> str:
    return (
        f"quorum: leader {replica_name(quorum.leader)} epoch {_epoch(quorum.leader_epoch)} "
        f"isr {isr_name(quorum.isr)}"
    )


def describe(state: State) -> str:
    lines = [format_quorum(state.quorum)]
    lines += [format_replica(r, rs, log) for r, (rs, log) in enumerate(zip(state.replicas, state.logs, strict=True))]
    return "\n".join(lines)


def diff(before: State, after: State) -> list[str]:
    """Only the lines that changed: the quorum, the replicas touched, a new request."""
    changes = []
    if after.quorum != before.quorum:
        changes.append(format_quorum(after.quorum))
    for request in sorted(after.requests - before.requests, key=lambda q: q.leader_epoch):
        changes.append(
            f"sent LeaderAndIsr(leader {replica_name(request.leader)}, epoch {request.leader_epoch}, "
            f"isr {isr_name(request.isr)})"
        )
    for replica in range(len(after.replicas)):
        if after.replicas[replica] != before.replicas[replica] or after.logs[replica] != before.logs[replica]:
            changes.append(format_replica(replica, after.replicas[replica], after.logs[replica]))
    return changes or ["(no visible change)"]
