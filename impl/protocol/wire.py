"""Kafka request/response framing over kio (pinned 0.6.5): headers, bodies, supported versions.

Why kio: it is generated from Kafka's own JSON message schemas (every API, every version,
flexible encodings and tagged fields included) with a native decoder; writing a codec by hand
from the schemas would be a second, less tested copy of the same thing. kio does not touch
record batches; impl/protocol/records/ does.

Three hot paths are coded by hand, each property-tested to give kio's bytes or fields, so kio
stays the reference: Produce request bodies (produce_request.py: records left in the frame
instead of copied), Fetch responses (fetch_response.py: ~20 us per partition through kio, idle
partitions included; the core answers a Fetch with a FetchAnswer of values, every other API
with a kio object, and encode_response_parts encodes both) and the replica fetcher's Fetch v12
(replica_fetch.py).

A frame on the wire is int32 size + payload. A request payload is a request header (v1, or v2
for flexible versions) then the body; a response is a response header (v0, or v1 for flexible
versions -- except ApiVersions, always v0) then the body.
"""

from __future__ import annotations

import functools
import io
import struct

import attrs
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from kafkaref.impl.protocol import flexible, tagged_fields
from kafkaref.impl.protocol.fetch_response import FetchAnswer, encode_fetch_response
from kafkaref.impl.protocol.null_arrays import forbidden_null
from kafkaref.impl.protocol.produce_request import PRODUCE_API, decode_produce_body
from kafkaref.impl.protocol.produce_request import VERSIONS as PRODUCE_VERSIONS

SIZE = struct.Struct(">i")
API_VERSIONS = 18
FLEXIBLE_API_VERSIONS = 3  # ApiVersions' first flexible version: request header v2 from here
# Bytes after a request's body are ignored, as Kafka's parser ignores them
# (AbstractRequest.parseRequest reads the body and never looks at what is left; Apache Kafka
# 4.3.1 answers a ListOffsets v5 followed by 3 extra bytes, seen by the differential walk).
# librdkafka relies on it (2.12 to 2.16 at least, confluentinc/librdkafka#5049): it writes the
# null topic array of an all-topics Metadata v9+ as four zero bytes instead of one.

# kio resolves a schema class by module path on every call (pkgutil.resolve_name): a fifth of a
# broker's CPU per request under replication, profiled. The classes never change: remember them.
request_class = functools.cache(load_request_schema)
response_class = functools.cache(load_response_schema)

# api_key -> (name, min advertised, max advertised): for every API kafkaref serves, exactly the
# range Apache Kafka 4.3.1 (the pinned peer, docs/peers.md) advertises, each version with its
# semantics (docs/semantics.md "Protocol versions"); properties/tests/peers/
# test_peers_api_versions.py compares this table with a real node's ApiVersions answer.
SUPPORTED: dict[int, tuple[str, int, int]] = {
    0: ("produce", 0, 13),  # v0-2 advertised, refused: REFUSED
    1: ("fetch", 4, 18),
    2: ("list_offsets", 1, 11),
    3: ("metadata", 0, 13),  # flexible from 9; topic ids from 10 (a recreated topic)
    8: ("offset_commit", 2, 10),
    9: ("offset_fetch", 1, 10),
    10: ("find_coordinator", 0, 6),
    11: ("join_group", 0, 9),
    12: ("heartbeat", 0, 4),
    13: ("leave_group", 0, 5),
    14: ("sync_group", 0, 5),
    15: ("describe_groups", 0, 6),
    16: ("list_groups", 0, 5),
    18: ("api_versions", 0, 4),
    19: ("create_topics", 2, 7),
    20: ("delete_topics", 1, 6),
    21: ("delete_records", 0, 2),
    22: ("init_producer_id", 0, 5),
    23: ("offset_for_leader_epoch", 2, 4),
    32: ("describe_configs", 1, 4),
    33: ("alter_configs", 0, 2),
    35: ("describe_log_dirs", 1, 5),
    37: ("create_partitions", 0, 3),
    42: ("delete_groups", 0, 2),
    44: ("incremental_alter_configs", 0, 1),
    60: ("describe_cluster", 0, 2),
    75: ("describe_topic_partitions", 0, 0),
}
# Advertised but refused, as Kafka 4 refuses them: KIP-896 removed Produce v0-2, yet Kafka 4
# still lists Produce from v0 because librdkafka will not compress unless the broker's range
# starts there (KAFKA-18659); a request at one of them closes the connection (seen on 4.3.1).
REFUSED: dict[int, range] = {0: range(0, 3)}


def is_supported(api_key: int, version: int) -> bool:
    if api_key not in SUPPORTED or version in REFUSED.get(api_key, ()):
        return False
    _, low, high = SUPPORTED[api_key]
    return low <= version <= high


class MalformedRequest(ValueError):
    """The frame cannot be understood; the connection must be closed."""


@attrs.frozen
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: object | None  # kio request object; None when the version is unsupported
    # Where the request came from, as Kafka names it ("/127.0.0.1": InetAddress.toString):
    # the server knows the connection, the core only this value (DescribeGroups' client_host).
    client_host: str = ""

    @property
    def name(self) -> str:
        return SUPPORTED[self.api_key][0]


def peek_header(payload: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): the fields that are the same in every header."""
    if len(payload) < 8:
        raise MalformedRequest("request shorter than a header")
    api_key, api_version, correlation_id = struct.unpack_from(">hhi", payload, 0)
    return api_key, api_version, correlation_id


def decode_request(payload: bytes, client_host: str = "") -> Request:
    """Decode a request payload (without the size prefix); client_host is the connection's
    peer as the server names it (see Request).

    Raises MalformedRequest for garbage. An unsupported ApiVersions version (a negative one
    too: Kafka's RequestContext answers every version it does not support) yields a Request
    with body None (to be answered UNSUPPORTED_VERSION); any other unknown API or version is
    malformed (Kafka closes the connection).
    """
    api_key, api_version, correlation_id = peek_header(payload)
    if not is_supported(api_key, api_version):
        if api_key == API_VERSIONS:
            return Request(api_key, api_version, correlation_id,
                           _future_api_versions_client_id(payload, api_version), None,
                           client_host)
        raise MalformedRequest(f"unsupported api {api_key} v{api_version}")
    cls = request_class(api_key, api_version)
    header, body = _read(payload, cls)  # bytes after the body: ignored (above)
    return Request(api_key, api_version, correlation_id, header.client_id, body, client_host)


def _read(payload, cls, known_tags_only: bool = False):
    """(header, body) of a request payload; what follows the body is not looked at. kio raises
    KeyError on a tagged field it does not know, where Kafka skips it: the payload is then read
    again without such tags (tagged_fields.py). Anything else that does not parse is
    MalformedRequest."""
    try:
        header, offset = entity_reader(cls.__header_schema__)(payload, 0)
        if cls.__api_key__ == PRODUCE_API and cls.__version__ in PRODUCE_VERSIONS:
            body, _ = decode_produce_body(payload, offset, cls.__version__)  # views
        else:
            body, _ = entity_reader(cls)(payload, offset)
            null = forbidden_null(body)  # kio reads any array as nullable
            if null is not None:
                raise MalformedRequest(f"{cls.__name__}: {null} is null, which "
                                       f"v{cls.__version__} does not allow")
        return header, body
    except MalformedRequest:
        raise
    except KeyError as exc:
        if cls.__flexible__ and not known_tags_only:
            try:
                known = tagged_fields.without_unknown_tags(payload, cls)
            except flexible.Truncated as truncated:
                raise MalformedRequest(f"cannot decode {cls.__name__}: {truncated}") from exc
            return _read(known, cls, known_tags_only=True)
        raise MalformedRequest(f"cannot decode {cls.__name__}: {exc!r}") from exc
    except (SerialError, ValueError, UnicodeDecodeError, OverflowError, TypeError,
            IndexError, MemoryError) as exc:
        raise MalformedRequest(f"cannot decode {cls.__name__}: {exc!r}") from exc


def _future_api_versions_client_id(payload: bytes, api_version: int) -> str | None:
    """The client id of an ApiVersions request of a version we do not know. Its body is not
    read (it is answered UNSUPPORTED_VERSION with the v0 layout), but its header is, by the
    header version that version implies (v2, with tagged fields, from v3: ApiVersions is
    flexible from there): a header that does not parse closes the connection, as Apache Kafka's
    RequestHeader.parse does (seen on 4.3.1: a v127 request with a v1 header is closed)."""
    header_cls = RequestHeaderV2 if api_version >= FLEXIBLE_API_VERSIONS else RequestHeaderV1
    try:
        header, _ = entity_reader(header_cls)(payload, 0)
    except (SerialError, ValueError, UnicodeDecodeError, OverflowError, TypeError, KeyError,
            IndexError) as exc:
        raise MalformedRequest(f"cannot decode the header of ApiVersions v{api_version}: "
                               f"{exc!r}") from exc
    return header.client_id


def _header_class(response_cls):
    if response_cls.__api_key__ == API_VERSIONS:
        return ResponseHeaderV0  # ApiVersions answers with header v0 at every version
    return response_cls.__header_schema__


def encode_response_parts(correlation_id: int, response) -> list:
    """The one place a response is encoded (the server's I/O threads call it on every answer
    of the core): its size-prefixed frame as parts. A kio response object is one bytes part;
    a FetchAnswer is encoded by fetch_response.py, each records value its own part as given
    (bytes, or a file range the network thread sends with sendfile)."""
    if isinstance(response, FetchAnswer):
        return encode_fetch_response(response.api_version, correlation_id, response.topics,
                                     response.error_code, response.session_id,
                                     response.node_endpoints)
    return [_encode_kio_response(correlation_id, response)]


def encode_response(correlation_id: int, response) -> bytes:
    """encode_response_parts as one bytes object: a records slice (a file range a network
    thread would send with sendfile) is read and closed here."""
    parts = encode_response_parts(correlation_id, response)
    return bytes(parts[0]) if len(parts) == 1 else b"".join(_in_memory(p) for p in parts)


def _in_memory(part) -> bytes:
    if isinstance(part, (bytes, bytearray, memoryview)):
        return part
    with part:  # a RecordsSlice (impl/storage/partition_log.py)
        return part.read_bytes()


def _encode_kio_response(correlation_id: int, response) -> bytes:
    """Size-prefixed frame holding a response header and the kio response object."""
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    header_cls = _header_class(type(response))
    entity_writer(header_cls)(buffer, header_cls(correlation_id=correlation_id))
    entity_writer(type(response))(buffer, response)
    frame = buffer.getbuffer()
    SIZE.pack_into(frame, 0, len(frame) - 4)
    return bytes(frame)


def encode_request(correlation_id: int, client_id: str | None, request) -> bytes:
    """Size-prefixed frame holding a request header and the kio request object."""
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    header_cls = type(request).__header_schema__
    fields = {
        "request_api_key": type(request).__api_key__,
        "request_api_version": type(request).__version__,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    entity_writer(header_cls)(buffer, header_cls(**fields))
    entity_writer(type(request))(buffer, request)
    frame = buffer.getbuffer()
    SIZE.pack_into(frame, 0, len(frame) - 4)
    return bytes(frame)


def decode_response(api_key: int, api_version: int, payload: bytes):
    """(correlation_id, kio response) from a response payload (without the size prefix)."""
    cls = response_class(api_key, api_version)
    header, offset = entity_reader(_header_class(cls))(payload, 0)
    body, _ = entity_reader(cls)(payload, offset)
    return header.correlation_id, body


def unsupported_api_versions_response() -> bytes:
    """The v0 body Kafka sends for an ApiVersions version it does not know: UNSUPPORTED_VERSION
    and the versions of ApiVersions alone, so the client can ask again at one of them (KIP-511;
    Kafka's ApiVersionsRequest.getErrorResponse lists only ApiKeys.API_VERSIONS)."""
    from kio.schema.api_versions.v0.response import ApiVersion, ApiVersionsResponse

    _, low, high = SUPPORTED[API_VERSIONS]
    return ApiVersionsResponse(
        error_code=ErrorCode.unsupported_version,
        api_keys=(ApiVersion(api_key=API_VERSIONS, min_version=low, max_version=high),),
    )


__all__ = [
    "RequestHeaderV1",
    "RequestHeaderV2",
    "SUPPORTED",
    "MalformedRequest",
    "Request",
    "decode_request",
    "encode_request",
    "encode_response",
    "encode_response_parts",
    "decode_response",
]
