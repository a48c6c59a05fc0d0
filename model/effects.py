"""Effects: what step() asks the world to see. Pure data; the caller delivers them.

`via` says how a response left the broker: "immediate" (answered while handling the request),
"completed" (out of purgatory because its condition became true or the leadership was lost) or
"expired" (out of purgatory because its deadline passed).
"""

from __future__ import annotations

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.model.values import Entry

IMMEDIATE, COMPLETED, EXPIRED = "immediate", "completed", "expired"


@attrs.frozen(slots=True)
class ProduceResponse:
    request_id: int
    error: ErrorCode
    base_offset: int = -1
    record_ids: tuple[int, ...] = ()  # ids the records got (what a history checker tracks)
    via: str = IMMEDIATE


@attrs.frozen(slots=True)
class FetchResponse:
    """Records from first_offset on (the start of the batch holding the fetch offset, so it
    may start below the requested offset, as in Kafka); offsets are first_offset + index."""

    request_id: int
    error: ErrorCode
    high_watermark: int = -1
    first_offset: int = -1
    records: tuple[Entry, ...] = ()
    via: str = IMMEDIATE
    log_start_offset: int = -1  # the replica's log start in every answer that reached the log


@attrs.frozen(slots=True)
class ListOffsetsResponse:
    """timestamp: the found record's for a lookup by time; -1 (Kafka's NO_TIMESTAMP) for
    EARLIEST and LATEST, which name a position, not a record, and when none is found."""

    request_id: int
    error: ErrorCode
    offset: int = -1
    timestamp: int = -1


@attrs.frozen(slots=True)
class DeleteRecordsResponse:
    request_id: int
    error: ErrorCode
    low_watermark: int = -1
    via: str = IMMEDIATE


@attrs.frozen(slots=True)
class Disconnected:
    """The broker holding the request died or was down: the client sees a network error."""

    request_id: int


@attrs.frozen(slots=True)
class ReplicaFetchResult:
    """What a replica fetch did (for tests and traces; followers are not clients)."""

    leader: int
    follower: int
    partition: int
    error: ErrorCode
    appended: int = 0
    diverging: tuple[int, int] | None = None  # (epoch, end offset) from the leader
    truncated_to: int | None = None
    applied: bool = True  # False when the follower dropped a stale response


@attrs.frozen(slots=True)
class ElectionResult:
    partition: int
    leader: int
    error: ErrorCode
    leader_epoch: int = -1


@attrs.frozen(slots=True)
class IsrChangeResult:
    partition: int
    error: ErrorCode
    isr: frozenset[int] = frozenset()


Response = (ProduceResponse | FetchResponse | ListOffsetsResponse | DeleteRecordsResponse
            | Disconnected)
Effect = Response | ReplicaFetchResult | ElectionResult | IsrChangeResult
