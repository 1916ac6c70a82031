"""Turning HTTP requests into the fields of the official request models.

The identifier is parsed here, once: a route's `a$b` (joined by the `delimiter` query
parameter) becomes ["a", "b"]. Its names are not judged here: the backend validates them before
it does anything with them (`backends.core.names`), for the server and for Python callers alike.

Bodies are read within limits by `app.bodies`. Every field is put in the spec's form by the
client's dialect (`app.dialect`), then refused if the operation does not take it
(`app.fields`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson
from lance_namespace import InvalidInputError
from starlette.datastructures import QueryParams
from starlette.requests import Request

from app.bodies import BodyLimits, declared_length, read_arrow_body, read_json_body, skip_body
from app.dialect import Dialect
from app.fields import refuse_unknown_fields
from app.protocol import (
    API_KEY_HEADER,
    ARROW_STREAM,
    AUTHORIZATION_HEADER,
    CONTEXT_HEADER_PREFIX,
    media_type,
)
from app.spec import BodyKind, Operation, QueryParameter
from app.streamed_bodies import streamed_arrow_body
from backends.core.modes import parse_mode
from backends.core.names import ID_DELIMITER
from backends.core.operations import IDEMPOTENCY_KEY, traits_of
from backends.core.properties import refused_client_storage_options

IDENTITY_HEADERS = frozenset({AUTHORIZATION_HEADER, API_KEY_HEADER})
IDEMPOTENCY_HEADER_CONTEXT = f"{CONTEXT_HEADER_PREFIX}idempotency-key"
MAX_IDEMPOTENCY_KEY = 255
# Transport headers every request has; they are not caller context.
TRANSPORT_HEADERS = frozenset(
    {"host", "content-length", "content-type", "accept", "accept-encoding", "connection",
     "user-agent", "transfer-encoding", "expect"}
)



def parse_path_identifier(raw: str, delimiter: str) -> list[str]:
    """`a$b` -> ["a", "b"]; an id equal to the delimiter is the root namespace."""
    if not delimiter:
        raise InvalidInputError("delimiter must not be empty")
    if raw == delimiter:
        return []
    return raw.split(delimiter)


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


# Most requests have no query string: theirs is parsed once, here.
_NO_QUERY = QueryParams()


def query_of(request: Request) -> QueryParams:
    """The request's query parameters."""
    return request.query_params if request.scope.get("query_string") else _NO_QUERY


def query_fields(
    operation: Operation, query: QueryParams, addressing: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The fields the query string holds; a parameter the operation does not take (nor one
    of `addressing`, which name the object) is refused, not ignored."""
    if not query:
        return {}
    taken = {parameter.name for parameter in operation.query_parameters}
    unknown = sorted(set(query.keys()) - taken - addressing - {"delimiter"})
    if unknown:
        raise InvalidInputError(
            f"{operation.operation_id} does not take the query parameter(s) "
            f"{', '.join(unknown[:5])}: the server does not act on them"
        )
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
    for name, kind in traits_of(operation.backend_id).choices.items():
        if fields.get(name) is not None:
            fields[name] = parse_mode(fields[name], kind, next(iter(kind)), name).value


def _require_object_id(operation: Operation, fields: dict[str, Any]) -> None:
    """An operation on one object needs a non-empty id; an absent one is the root's."""
    if not operation.has_id:
        return
    identifier = fields.get("id")
    addresses_one_object = operation.path is None or "{id}" in operation.path
    root_allowed = traits_of(operation.backend_id).root_allowed
    if not identifier and addresses_one_object and not root_allowed:
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
    operation: Operation, fields: dict[str, Any], headers: Mapping[str, str], dialect: Dialect
) -> dict[str, Any]:
    """Put the fields in the spec's form (the client's `dialect`), refuse any the operation
    does not take, check the id's shape, numbers and choices, and add identity and context
    from the headers (the backend validates the id's names)."""
    dialect.request_fields(operation.backend_id, fields)
    refuse_unknown_fields(operation.operation_id, operation.request_model, fields)
    _require_object_id(operation, fields)
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
    _idempotency_key(fields)
    return fields


def _idempotency_key(fields: dict[str, Any]) -> None:
    """The `Idempotency-Key` header (or the context's `idempotency_key`) becomes the
    context's `IDEMPOTENCY_KEY` (`refuse_idempotency_key` refuses it where not honoured)."""
    context = fields.get("context") or {}
    key = context.pop(IDEMPOTENCY_HEADER_CONTEXT, None) or context.get(IDEMPOTENCY_KEY)
    if key is None:
        return
    if not isinstance(key, str) or not 0 < len(key) <= MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise InvalidInputError(
            f"an idempotency key must be 1 to {MAX_IDEMPOTENCY_KEY} printable characters")
    fields["context"] = {**context, IDEMPOTENCY_KEY: key}


def refuse_idempotency_key(operation: Operation, fields: dict[str, Any], honoured: bool) -> None:
    """Code 13 for an idempotency key on an operation the backend does not honour one on."""
    if not honoured and IDEMPOTENCY_KEY in (fields.get("context") or {}):
        raise InvalidInputError(
            f"{operation.operation_id} does not take an idempotency key (Idempotency-Key) "
            "here: only InsertIntoTable acts on one, where the backend writes the rows")


def _sends_arrow(request: Request) -> bool:
    return media_type(request.headers.get("content-type", "")) == ARROW_STREAM


def _fields_from_arrow(operation: Operation, dialect: Dialect, body: bytes) -> dict[str, Any]:
    """The fields an Arrow body stands for on a JSON route, where the client's dialect says."""
    fields = dialect.fields_from_arrow(operation.backend_id, body)
    if fields is None:
        raise InvalidInputError(
            f"{operation.operation_id} takes a JSON body, not an Arrow IPC stream"
        )
    return fields


async def _arrow_data(request: Request, limits: BodyLimits, streamed: bool) -> Any:
    """The Arrow body: read whole and checked, or (`streamed`, unless it declares a length
    of at most `WHOLE_ARROW_BYTES`) as a file the backend reads as it arrives
    (`app.streamed_bodies`)."""
    declared = declared_length(request)
    if streamed and (declared is None or declared > WHOLE_ARROW_BYTES):
        return streamed_arrow_body(request, limits)
    return await read_arrow_body(request, limits)


# A streamed body is handed to the backend's thread piece by piece, each piece a wait on
# the event loop; one small enough to hold is read whole first, in one wait (a 1,000-row
# insert of 0.7 MB: 5.4 to 6.0 ms against 8.4 to 8.6, docs/operations.md).
WHOLE_ARROW_BYTES = 4 << 20


# Told the id a request names (in the spec's form) as soon as it is known: the caller's grant
# there is checked before the rest of the request is read or judged, so that a refusal tells
# nothing of the body's shape or the table's state.
Authorize = Callable[[dict[str, Any]], None]


def _no_check(_: dict[str, Any]) -> None:
    return None


def _authorize(operation: Operation, dialect: Dialect, identifier: Any,
               authorize: Authorize) -> None:
    target = {"id": identifier}
    dialect.request_fields(operation.backend_id, target)  # a LanceDB database's prefix
    authorize({"id": target["id"]})


async def read_route_request(
    operation: Operation, request: Request, limits: BodyLimits, dialect: Dialect,
    streamed: bool = False, authorize: Authorize = _no_check,
) -> tuple[dict[str, Any], Any]:
    """Fields and Arrow data of a request to the operation's /v1/ route."""
    path_params = dict(request.path_params)
    data = None
    fields: dict[str, Any] = {}
    query = query_of(request)
    raw_id = path_params.pop("id", None)
    route_id = None
    if raw_id is not None:
        route_id = parse_path_identifier(raw_id, query.get("delimiter") or ID_DELIMITER)
        _authorize(operation, dialect, route_id, authorize)
    from_query = query_fields(operation, query)  # before a body is read
    if operation.body is BodyKind.JSON and _sends_arrow(request):
        fields = _fields_from_arrow(
            operation, dialect, await read_arrow_body(request, limits))
    elif operation.body is BodyKind.JSON:
        fields = await read_json_body(request, limits)
    elif operation.body is BodyKind.FIELD:
        fields = {operation.body_field: await read_json_body(request, limits)}
    elif operation.body is BodyKind.ARROW:
        data = await _arrow_data(request, limits, streamed)
    else:
        await skip_body(request, limits)
    fields.update(from_query)
    fields.update(path_params)
    if route_id is not None:
        if fields.get("id") is not None and fields["id"] != route_id:
            message = f"request body names {fields['id']!r}, the route names {route_id!r}"
            raise InvalidInputError(message)
        fields["id"] = route_id
    else:
        _authorize(operation, dialect, fields.get("id"), authorize)
    return finish_fields(operation, fields, request.headers, dialect), data


async def read_operation_request(
    operation: Operation, request: Request, limits: BodyLimits, dialect: Dialect,
    streamed: bool = False, authorize: Authorize = _no_check,
) -> tuple[dict[str, Any], Any]:
    """Fields and Arrow data of a request to the operation's POST /<OperationId> route.

    The request model is the JSON body, except for operations that carry Arrow data:
    their fields come from the query (`id` joined with `delimiter`) and the body is the data.
    """
    query = query_of(request)
    if not operation.takes_data:
        if query:  # the body is the whole request
            raise InvalidInputError(
                f"POST /{operation.operation_id} takes its request in the body, not the query "
                f"string ({', '.join(sorted(query.keys())[:5])})"
            )
        fields = await read_json_body(request, limits)
        _authorize(operation, dialect, fields.get("id"), authorize)
        return finish_fields(operation, fields, request.headers, dialect), None
    fields = query_fields(operation, query, frozenset({"id"}))  # before the body is read
    raw_id = query.get("id")
    delimiter = query.get("delimiter") or ID_DELIMITER
    fields["id"] = [] if raw_id is None else parse_path_identifier(raw_id, delimiter)
    _authorize(operation, dialect, fields["id"], authorize)
    data = await _arrow_data(request, limits, streamed)
    return finish_fields(operation, fields, request.headers, dialect), data
