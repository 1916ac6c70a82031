"""Turning HTTP requests into the fields of the official request models.

The identifier is parsed here, once: a route's `a$b` (joined by the `delimiter` query
parameter) becomes ["a", "b"]. Its names are not judged here: the backend validates them before
it does anything with them (`backends.names`), for the server and for Python callers alike.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
from lance_namespace import InvalidInputError
from starlette.datastructures import QueryParams
from starlette.requests import Request

from app.config import Settings
from app.errors import BodiesInFlightError, BodyTimeoutError, BodyTooLargeError
from app.lancedb_remote import adapt_lancedb_request, is_lancedb_remote
from app.protocol import API_KEY_HEADER, AUTHORIZATION_HEADER, CONTEXT_HEADER_PREFIX
from app.spec import BodyKind, Operation, QueryParameter
from backends.modes import CreateMode, DropBehavior, DropMode, RegisterMode, WriteMode, parse_mode
from backends.names import ID_DELIMITER
from backends.properties import refused_client_storage_options

IDENTITY_HEADERS = frozenset({AUTHORIZATION_HEADER, API_KEY_HEADER})
# Transport headers every request has; they are not caller context.
TRANSPORT_HEADERS = frozenset(
    {"host", "content-length", "content-type", "accept", "accept-encoding", "connection",
     "user-agent", "transfer-encoding", "expect"}
)

# Operations that may address the root namespace (the empty identifier).
ROOT_OPERATIONS = frozenset(
    {"ListNamespaces", "ListTables", "DescribeNamespace", "NamespaceExists"}
)

# The mode-like request fields and the values they parse to.
CHOICE_FIELDS: dict[tuple[str, str], type[enum.StrEnum]] = {
    ("CreateNamespace", "mode"): CreateMode,
    ("DropNamespace", "mode"): DropMode,
    ("DropNamespace", "behavior"): DropBehavior,
    ("CreateTable", "mode"): CreateMode,
    ("InsertIntoTable", "mode"): WriteMode,
    ("RegisterTable", "mode"): RegisterMode,
}


def parse_path_identifier(raw: str, delimiter: str) -> list[str]:
    """`a$b` -> ["a", "b"]; an id equal to the delimiter is the root namespace."""
    if not delimiter:
        raise InvalidInputError("delimiter must not be empty")
    if raw == delimiter:
        return []
    return raw.split(delimiter)


@dataclass
class BodyLimits:
    """How large, how slow and how many request bodies one server process accepts.

    `in_flight` counts the bytes of every body being read or being served; a request
    reserves its bytes as they arrive and `release_body` gives them back when it ends.
    """

    max_bytes: int
    read_timeout: float
    max_in_flight: int
    in_flight: int = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> BodyLimits:
        return cls(settings.max_body_bytes, settings.body_read_timeout,
                   settings.max_in_flight_body_bytes)

    def reserve(self, request: Request, size: int) -> None:
        if self.in_flight + size > self.max_in_flight:
            raise BodiesInFlightError(
                f"the server is holding {self.max_in_flight} bytes of request bodies; "
                "retry later"
            )
        self.in_flight += size
        request.scope[RESERVED_KEY] = request.scope.get(RESERVED_KEY, 0) + size


RESERVED_KEY = "lance_adapter.body_bytes_reserved"
LIMITS_KEY = "lance_adapter.body_limits"


def release_body(request: Request) -> None:
    """Give back the bytes `request` reserved; safe to call more than once."""
    limits: BodyLimits | None = request.scope.pop(LIMITS_KEY, None)
    reserved = request.scope.pop(RESERVED_KEY, 0)
    if limits is not None:
        limits.in_flight -= reserved


def _declared_length(request: Request, max_bytes: int) -> int | None:
    declared = request.headers.get("content-length")
    if declared is None or not declared.isdigit():
        return None
    if int(declared) > max_bytes:
        raise BodyTooLargeError(f"request body is larger than {max_bytes} bytes")
    return int(declared)


async def _receive_into(
    request: Request, buffer: bytearray, limits: BodyLimits, size: int
) -> int:
    async for chunk in request.stream():
        if size + len(chunk) > limits.max_bytes:
            raise BodyTooLargeError(f"request body is larger than {limits.max_bytes} bytes")
        limits.reserve(request, max(0, size + len(chunk) - len(buffer)))
        buffer[size:size + len(chunk)] = chunk
        size += len(chunk)
    return size


async def read_body(request: Request, limits: BodyLimits) -> bytearray:
    """The whole body in one buffer, within the size, deadline and in-flight limits.

    The bytes stay reserved until `release_body(request)`, including on errors.
    """
    declared = _declared_length(request, limits.max_bytes)
    request.scope[LIMITS_KEY] = limits
    limits.reserve(request, declared or 0)
    buffer = bytearray(declared or 0)
    try:
        async with asyncio.timeout(limits.read_timeout or None):
            size = await _receive_into(request, buffer, limits, 0)
    except TimeoutError:
        raise BodyTimeoutError(
            f"request body did not arrive within {limits.read_timeout:g} seconds"
        ) from None
    del buffer[size:]
    return buffer


def parse_json_object(body: bytes | bytearray) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        value = orjson.loads(body)  # refuses nesting deeper than 1024 levels
    except orjson.JSONDecodeError as error:
        raise InvalidInputError(f"request body is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise InvalidInputError("request body must be a JSON object")
    return value


def check_arrow_stream(body: bytearray | bytes) -> bytes:
    """Reject anything that is not a complete Arrow IPC stream before a backend sees it.

    The stream is read batch by batch straight from the request's buffer; the one copy
    made is the immutable `bytes` the backend is given.
    """
    if not body:
        raise InvalidInputError("request body must be an Arrow IPC stream, got no bytes")
    try:
        with pa.ipc.open_stream(pa.py_buffer(body)) as reader:
            for _ in reader:
                pass
    except (pa.ArrowInvalid, pa.ArrowException, OSError) as error:
        raise InvalidInputError(f"request body is not an Arrow IPC stream: {error}") from None
    return bytes(body)


def _coerce(parameter: QueryParameter, raw: str) -> Any:
    if parameter.type == "boolean":
        lowered = raw.lower()
        if lowered not in ("true", "false"):
            raise InvalidInputError(f"query parameter {parameter.name} must be true or false")
        return lowered == "true"
    if parameter.type == "integer":
        try:
            return int(raw)
        except ValueError:
            message = f"query parameter {parameter.name} must be an integer"
            raise InvalidInputError(message) from None
    if parameter.type == "json":
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            message = f"query parameter {parameter.name} must be JSON"
            raise InvalidInputError(message) from None
    return raw


def query_fields(operation: Operation, query: QueryParams) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for parameter in operation.query_parameters:
        if parameter.name == "delimiter" or parameter.name not in query:
            continue
        if parameter.type == "array":
            fields[parameter.name] = query.getlist(parameter.name)
        else:
            fields[parameter.name] = _coerce(parameter, query[parameter.name])
    return fields


def header_fields(headers: Mapping[str, str]) -> dict[str, Any]:
    """`identity` from the credential headers, `context` from every other header."""
    identity: dict[str, str] = {}
    api_key = headers.get(API_KEY_HEADER)
    if api_key:
        identity["api_key"] = api_key
    scheme, _, token = headers.get(AUTHORIZATION_HEADER, "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        identity["auth_token"] = token.strip()
    context = {
        f"{CONTEXT_HEADER_PREFIX}{name}": value
        for name, value in headers.items()
        if name.lower() not in IDENTITY_HEADERS and name.lower() not in TRANSPORT_HEADERS
    }
    return {"identity": identity or None, "context": context or None}


def _normalise_choices(operation: Operation, fields: dict[str, Any]) -> None:
    """Any official spelling (ExistOk, EXIST_OK, exist_ok) of a choice becomes its value."""
    for (operation_id, name), kind in CHOICE_FIELDS.items():
        if operation_id == operation.backend_id and fields.get(name) is not None:
            fields[name] = parse_mode(fields[name], kind, next(iter(kind)), name).value


def _require_object_id(operation: Operation, fields: dict[str, Any]) -> None:
    """An operation on one object needs a non-empty id; an absent one is the root's."""
    if not operation.has_id:
        return
    identifier = fields.get("id")
    addresses_one_object = operation.path is None or "{id}" in operation.path
    if not identifier and addresses_one_object and operation.backend_id not in ROOT_OPERATIONS:
        raise InvalidInputError(f"{operation.operation_id} needs a non-empty identifier")
    fields["id"] = [] if identifier is None else identifier


# Counts the backends hold in 32-bit integers; every other integer must fit in 64 bits.
INT32_FIELDS = frozenset({"limit", "k", "offset", "nprobes", "refine_factor", "ef"})
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1


def _validate_integers(fields: dict[str, Any]) -> None:
    for name, value in fields.items():
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        highest = INT32_MAX if name in INT32_FIELDS else INT64_MAX
        if name in INT32_FIELDS and value < 0:
            raise InvalidInputError(f"{name} must not be negative, got {value}")
        if not -INT64_MAX - 1 <= value <= highest:
            raise InvalidInputError(f"{name} must be at most {highest}, got {value}")


def _validate_storage_options(fields: dict[str, Any]) -> None:
    """A client's storage_options may not redirect, re-sign or unsecure the server's storage."""
    options = fields.get("storage_options")
    if options is None:
        return
    if not isinstance(options, dict):
        raise InvalidInputError("storage_options must be an object of strings")
    refused = refused_client_storage_options(options)
    if refused:
        raise InvalidInputError(
            f"storage_options may not set {', '.join(refused)}: a client cannot change the "
            "endpoints, credentials or TLS settings of the server's storage"
        )


def finish_fields(
    operation: Operation, fields: dict[str, Any], headers: Mapping[str, str]
) -> dict[str, Any]:
    """Check the id's shape, numbers and choices, and add identity and context from the
    headers (the backend validates the id's names)."""
    _require_object_id(operation, fields)
    _validate_integers(fields)
    _validate_storage_options(fields)
    _normalise_choices(operation, fields)
    if is_lancedb_remote(headers):
        adapt_lancedb_request(operation.backend_id, fields)
    from_headers = header_fields(headers)
    if fields.get("identity") is None:
        fields["identity"] = from_headers["identity"]
    context = fields.get("context")
    if context is not None and not isinstance(context, dict):
        raise InvalidInputError("context must be an object of strings")
    if from_headers["context"]:
        fields["context"] = {**from_headers["context"], **(context or {})}
    return fields


async def read_route_request(
    operation: Operation, request: Request, limits: BodyLimits
) -> tuple[dict[str, Any], bytes | None]:
    """Fields and Arrow data of a request to the operation's /v1/ route."""
    path_params = dict(request.path_params)
    body = await read_body(request, limits)
    data = None
    fields: dict[str, Any] = {}
    if operation.body is BodyKind.JSON:
        fields = parse_json_object(body)
    elif operation.body is BodyKind.FIELD:
        fields = {operation.body_field: parse_json_object(body)}
    elif operation.body is BodyKind.ARROW:
        data = check_arrow_stream(body)
    fields.update(query_fields(operation, request.query_params))
    raw_id = path_params.pop("id", None)
    fields.update(path_params)
    if raw_id is not None:
        delimiter = request.query_params.get("delimiter") or ID_DELIMITER
        route_id = parse_path_identifier(raw_id, delimiter)
        if fields.get("id") is not None and fields["id"] != route_id:
            message = f"request body names {fields['id']!r}, the route names {route_id!r}"
            raise InvalidInputError(message)
        fields["id"] = route_id
    return finish_fields(operation, fields, request.headers), data


async def read_operation_request(
    operation: Operation, request: Request, limits: BodyLimits
) -> tuple[dict[str, Any], bytes | None]:
    """Fields and Arrow data of a request to the operation's POST /<OperationId> route.

    The request model is the JSON body, except for operations that carry Arrow data:
    their fields come from the query (`id` joined with `delimiter`) and the body is the data.
    """
    body = await read_body(request, limits)
    if not operation.takes_data:
        return finish_fields(operation, parse_json_object(body), request.headers), None
    query = request.query_params
    fields = query_fields(operation, query)
    raw_id = query.get("id")
    delimiter = query.get("delimiter") or ID_DELIMITER
    fields["id"] = [] if raw_id is None else parse_path_identifier(raw_id, delimiter)
    return finish_fields(operation, fields, request.headers), check_arrow_stream(body)
