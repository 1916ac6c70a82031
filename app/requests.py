"""Turning HTTP requests into the fields of the official request models.

The identifier is parsed here, once: a route's `a$b` (joined by the `delimiter` query
parameter) becomes ["a", "b"]. Its names are not judged here: the backend validates them before
it does anything with them (`backends.core.names`), for the server and for Python callers alike.

Bodies are read within limits (`BodyLimits`): their size, as sent and, before they are decoded,
what they decode to (`app.arrow_limits` for Arrow streams); the time they take; and the bytes
one process holds for all of them, reserved as bytes arrive, never from a declared length.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import io
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson
from lance_namespace import InvalidInputError
from starlette.datastructures import QueryParams
from starlette.requests import Request

from app.arrow_limits import ArrowLimits, check_arrow_body
from app.config import Settings, usable_cpus
from app.errors import BodiesInFlightError, BodyTimeoutError, BodyTooLargeError
from app.lancedb_remote import adapt_lancedb_request, is_lancedb_remote
from app.protocol import API_KEY_HEADER, AUTHORIZATION_HEADER, CONTEXT_HEADER_PREFIX
from app.spec import BodyKind, Operation, QueryParameter
from backends.core.modes import (
    CreateMode,
    DropBehavior,
    DropMode,
    RegisterMode,
    WriteMode,
    parse_mode,
)
from backends.core.names import ID_DELIMITER
from backends.core.properties import refused_client_storage_options

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


# What decoded JSON costs at most: per byte of the body (measured: 20 for a list of floats, 24
# for a list of two-letter strings), and per object or array (an object with a key: 184).
JSON_BYTE_COST = 24
JSON_CONTAINER_COST = 256
# JSON bodies from this size on are decoded on a worker thread.
JSON_THREAD_FROM = 64 * 1024


class Reservation:
    """The body bytes one request holds: added as they arrive (and before they are decoded),
    given back all at once when the request ends."""

    def __init__(self, limits: BodyLimits) -> None:
        self.limits = limits
        self.held = 0
        self.released = False

    def add(self, size: int) -> None:
        limits = self.limits
        with limits.lock:
            if self.released:
                raise InvalidInputError("the request ended before its body was read")
            if limits.in_flight + size > limits.max_in_flight:
                raise BodiesInFlightError(
                    f"the server is holding {limits.max_in_flight} bytes of request bodies; "
                    "retry later"
                )
            limits.in_flight += size
            self.held += size

    def release(self) -> None:
        with self.limits.lock:
            if not self.released:
                self.limits.in_flight -= self.held
                self.held = 0
                self.released = True


@dataclass
class BodyLimits:
    """How large, deep, slow and many request bodies one server process accepts.

    `in_flight` counts the bytes every request holds: its body as it arrives, what its JSON
    may decode to, and what its Arrow stream decodes to; `release_body` gives them back.
    """

    max_bytes: int
    max_json_bytes: int
    max_json_containers: int
    max_depth: int
    read_timeout: float
    max_in_flight: int
    arrow: ArrowLimits
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Decoding runs here, off the event loop: CPU-bound, so one thread per usable CPU.
    checks: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(usable_cpus(), "body-check"), repr=False
    )

    @classmethod
    def from_settings(cls, settings: Settings) -> BodyLimits:
        arrow = ArrowLimits(settings.max_body_bytes, settings.max_arrow_rows,
                            settings.max_arrow_columns, settings.max_nesting_depth)
        return cls(settings.max_body_bytes,
                   min(settings.max_json_body_bytes, settings.max_body_bytes),
                   settings.max_json_containers, settings.max_nesting_depth,
                   settings.body_read_timeout, settings.max_in_flight_body_bytes, arrow)

    def reservation(self, request: Request) -> Reservation:
        """The request's reservation, made on first use."""
        reservation = request.scope.get(RESERVATION_KEY)
        if reservation is None:
            reservation = request.scope[RESERVATION_KEY] = Reservation(self)
        return reservation


RESERVATION_KEY = "lance_adapter.body_reservation"


def release_body(request: Request) -> None:
    """Give back the bytes `request` reserved; safe to call more than once."""
    reservation: Reservation | None = request.scope.pop(RESERVATION_KEY, None)
    if reservation is not None:
        reservation.release()


def _refuse_declared_over(request: Request, max_bytes: int, setting: str) -> None:
    """A declared length over the limit is refused at once; a smaller one reserves nothing."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise BodyTooLargeError(
            f"request body is larger than {max_bytes} bytes; the limit is {setting}"
        )


async def read_body(
    request: Request, limits: BodyLimits, max_bytes: int, setting: str = "max_body_bytes"
) -> bytes:
    """The whole body, within `max_bytes`, the deadline and the in-flight limit.

    Bytes are reserved as they arrive, and stay reserved until `release_body(request)`.
    """
    _refuse_declared_over(request, max_bytes, setting)
    reservation = limits.reservation(request)
    # BytesIO hands over its buffer as the body: no copy of the whole, which would hold the
    # GIL (and so the event loop) for as long as it takes.
    buffer = io.BytesIO()
    size = 0
    try:
        async with asyncio.timeout(limits.read_timeout or None):
            async for chunk in request.stream():
                if size + len(chunk) > max_bytes:
                    raise BodyTooLargeError(
                        f"request body is larger than {max_bytes} bytes; the limit is {setting}"
                    )
                reservation.add(len(chunk))
                buffer.write(chunk)
                size += len(chunk)
    except TimeoutError:
        raise BodyTimeoutError(
            f"request body did not arrive within {limits.read_timeout:g} seconds"
        ) from None
    return buffer.getvalue()


def json_containers(body: bytes, max_containers: int) -> int:
    """How many objects and arrays `body` holds at most (its opening brackets, strings' too).

    Each is a garbage-collected object: a body of a million small ones would hold the GIL, and
    so the event loop, for a second while it is decoded (a million floats take 10 ms).
    """
    containers = body.count(b"{") + body.count(b"[")
    if containers > max_containers:
        raise InvalidInputError(
            f"request body has more than {max_containers} JSON objects and arrays; the limit "
            "is max_json_containers"
        )
    return containers


def _nests_deeper(value: Any, max_depth: int) -> bool:
    values, depths = [value], [1]
    while values:
        item, depth = values.pop(), depths.pop()
        if depth > max_depth:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list)):
                values.append(child)
                depths.append(depth + 1)
    return False


def parse_json_object(body: bytes, max_depth: int, brackets: int) -> dict[str, Any]:
    """The JSON object `body`; `brackets` is its count of `{` and `[` (`json_containers`)."""
    if not body or body.isspace():
        return {}
    try:
        value = orjson.loads(body)  # refuses nesting deeper than 1024 levels
    except orjson.JSONDecodeError as error:
        raise InvalidInputError(f"request body is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise InvalidInputError("request body must be a JSON object")
    # Fewer brackets than the limit cannot nest deeper: most bodies are not walked.
    if brackets > max_depth and _nests_deeper(value, max_depth):
        raise InvalidInputError(
            f"request body nests deeper than {max_depth} levels; the limit is max_nesting_depth"
        )
    return value


async def _off_the_loop(limits: BodyLimits, function: Any, *arguments: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(
        limits.checks, functools.partial(function, *arguments)
    )


async def read_json_body(request: Request, limits: BodyLimits) -> dict[str, Any]:
    """The JSON object of the body, its decoded size reserved before it is decoded."""
    body = await read_body(request, limits, limits.max_json_bytes, "max_json_body_bytes")
    containers = json_containers(body, limits.max_json_containers)
    limits.reservation(request).add(JSON_BYTE_COST * len(body) + JSON_CONTAINER_COST * containers)
    if len(body) < JSON_THREAD_FROM:
        return parse_json_object(body, limits.max_depth, containers)
    return await _off_the_loop(limits, parse_json_object, body, limits.max_depth, containers)


async def read_arrow_body(request: Request, limits: BodyLimits) -> bytes:
    """The Arrow IPC stream of the body, checked (see `app.arrow_limits`) on a worker thread."""
    body = await read_body(request, limits, limits.max_bytes)
    reserve = limits.reservation(request).add
    return await _off_the_loop(limits, check_arrow_body, body, limits.arrow, reserve)


async def _skip_body(request: Request, limits: BodyLimits) -> None:
    """Read (and drop) the body of an operation that takes none, within the JSON limit."""
    await read_body(request, limits, limits.max_json_bytes, "max_json_body_bytes")


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
    if is_lancedb_remote(headers):
        adapt_lancedb_request(operation.backend_id, fields)
    _validate_integers(fields)
    _validate_storage_options(fields)
    _normalise_choices(operation, fields)
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
    data = None
    fields: dict[str, Any] = {}
    if operation.body is BodyKind.JSON:
        fields = await read_json_body(request, limits)
    elif operation.body is BodyKind.FIELD:
        fields = {operation.body_field: await read_json_body(request, limits)}
    elif operation.body is BodyKind.ARROW:
        data = await read_arrow_body(request, limits)
    else:
        await _skip_body(request, limits)
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
    if not operation.takes_data:
        fields = await read_json_body(request, limits)
        return finish_fields(operation, fields, request.headers), None
    data = await read_arrow_body(request, limits)
    query = request.query_params
    fields = query_fields(operation, query)
    raw_id = query.get("id")
    delimiter = query.get("delimiter") or ID_DELIMITER
    fields["id"] = [] if raw_id is None else parse_path_identifier(raw_id, delimiter)
    return finish_fields(operation, fields, request.headers), data
