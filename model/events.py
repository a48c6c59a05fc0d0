"""Events: everything that can happen to the model. Each is a frozen value fed to step().

Client requests carry a request_id chosen by the caller (unique per run); every effect that
answers a request carries the same id. Replica fetches are modelled as one atomic round trip
(request handled by the leader, response applied by the follower).
"""

from __future__ import annotations

import attrs

ACKS_NONE, ACKS_LEADER, ACKS_ALL = 0, 1, -1
EARLIEST, LATEST = -2, -1  # ListOffsets timestamps
HIGH_WATERMARK = -1  # DeleteRecords up to the high watermark


@attrs.frozen(slots=True)
class Produce:
    request_id: int
    broker: int
    partition: int
    values: tuple[bytes, ...]  # one batch
    acks: int = ACKS_ALL
    timeout_ms: int = 30_000
    # Further batches for the same partition in the same request: the wire format allows them,
    # Kafka refuses them (INVALID_RECORD: exactly one batch per partition since produce v3).
    more_batches: tuple[tuple[bytes, ...], ...] = ()


@attrs.frozen(slots=True)
class Fetch:
    """A consumer fetch (read_uncommitted): answered at once when max_wait_ms <= 0, when at
    least min_bytes are readable, or on error; otherwise parked in fetch purgatory.

    from_follower_allowed: the request carries client metadata (KIP-392; on the wire, Fetch
    v11 and later), so a follower serves it too, up to its own hw. Without it only the leader
    serves it (Kafka's FetchParams.fetchOnlyLeader)."""

    request_id: int
    broker: int
    partition: int
    offset: int
    max_bytes: int = 1 << 20
    min_bytes: int = 1
    max_wait_ms: int = 0
    current_leader_epoch: int = -1  # -1: not checked (old clients)
    from_follower_allowed: bool = False


@attrs.frozen(slots=True)
class ListOffsets:
    request_id: int
    broker: int
    partition: int
    timestamp: int = LATEST  # EARLIEST (-2), LATEST (-1), or a lookup by time


@attrs.frozen(slots=True)
class DeleteRecords:
    """Move the partition's log start up to `offset` (HIGH_WATERMARK: the hw), answered once
    every live replica has it or at the timeout (Kafka's DeleteRecords)."""

    request_id: int
    broker: int
    partition: int
    offset: int = HIGH_WATERMARK
    timeout_ms: int = 30_000


@attrs.frozen(slots=True)
class Retention:
    """A run of the broker's retention task on its replica of the partition, leader or
    follower, that moved the log start up to `offset` (Kafka's UnifiedLog.deleteOldSegments:
    whole segments, so a batch boundary, at or below the replica's hw). The model knows no
    segments, sizes or times: which offset the rule picks is the storage's (impl/storage/log.py,
    tested beside Apache Kafka); to the model a run is its log start moving, as DeleteRecords
    moves a leader's, but on any replica and with no request. An offset at or below the log
    start, or above the hw, is a run that deleted nothing."""

    broker: int
    partition: int
    offset: int


@attrs.frozen(slots=True)
class ReplicaFetch:
    """A follower's fetch from the broker it believes leads, and the follower handling the
    response, as one step. Build it from the follower's state with api.replica_fetch_for()."""

    leader: int
    follower: int
    partition: int
    fetch_offset: int
    last_fetched_epoch: int
    current_leader_epoch: int
    # replica.fetch.max.bytes: whole batches within it, at least one (batch_size in helpers)
    max_bytes: int = 1 << 20
    # the leader handled the fetch but the follower never heard the answer
    response_lost: bool = False


@attrs.frozen(slots=True)
class Tick:
    """Logical time passes: purgatory deadlines expire, leaders check follower lag."""

    ms: int


@attrs.frozen(slots=True)
class CrashBroker:
    """Unclean shutdown: the broker loses every unflushed suffix and every request it holds."""

    broker: int


@attrs.frozen(slots=True)
class RestartBroker:
    """The broker recovers its flushed logs and rejoins as follower of the current leaders."""

    broker: int


@attrs.frozen(slots=True)
class Elect:
    """The controller elects `leader` for `partition` (clean from the live ISR, else from the
    ELR; unclean=True asks for an unclean election, allowed only when configured)."""

    partition: int
    leader: int
    unclean: bool = False


@attrs.frozen(slots=True)
class CommitIsrChange:
    """The controller handles the leader's in-flight ISR change (AlterPartition)."""

    partition: int


@attrs.frozen(slots=True)
class Flush:
    """The broker fsyncs all its logs."""

    broker: int


Event = (
    Produce | Fetch | ListOffsets | DeleteRecords | Retention | ReplicaFetch | Tick | CrashBroker
    | RestartBroker | Elect | CommitIsrChange | Flush
)
