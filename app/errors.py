"""The one place where errors become the spec's error codes, HTTP statuses and error answers."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, MutableMapping, Sequence
from http import HTTPStatus
from typing import Any

import orjson
from lance_namespace import (
    ErrorCode,
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    ServiceUnavailableError,
    UnsupportedOperationError,
)
from pydantic import ValidationError
from starlette.requests import ClientDisconnect
from starlette.responses import Response

from app.observability import ERROR_CODE_KEY
from app.protocol import JSON
from backends.core.messages import (
    HIDDEN_PATH,
    readable,
    without_paths,
    without_source_location,
)
from backends.tables.errors import is_native_panic as is_native_panic  # for the request path

logger = logging.getLogger("lance_adapter")

HTTP_STATUS_BY_CODE: dict[ErrorCode, int] = {
    ErrorCode.UNSUPPORTED: 406,
    ErrorCode.NAMESPACE_NOT_FOUND: 404,
    ErrorCode.NAMESPACE_ALREADY_EXISTS: 409,
    ErrorCode.NAMESPACE_NOT_EMPTY: 409,
    ErrorCode.TABLE_NOT_FOUND: 404,
    ErrorCode.TABLE_ALREADY_EXISTS: 409,
    ErrorCode.TABLE_INDEX_NOT_FOUND: 404,
    ErrorCode.TABLE_INDEX_ALREADY_EXISTS: 409,
    ErrorCode.TABLE_TAG_NOT_FOUND: 404,
    ErrorCode.TABLE_TAG_ALREADY_EXISTS: 409,
    ErrorCode.TRANSACTION_NOT_FOUND: 404,
    ErrorCode.TABLE_VERSION_NOT_FOUND: 404,
    ErrorCode.TABLE_COLUMN_NOT_FOUND: 404,
    ErrorCode.INVALID_INPUT: 400,
    ErrorCode.CONCURRENT_MODIFICATION: 409,
    ErrorCode.PERMISSION_DENIED: 403,
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.SERVICE_UNAVAILABLE: 503,
    ErrorCode.INTERNAL: 500,
    ErrorCode.INVALID_TABLE_STATE: 409,
    ErrorCode.TABLE_SCHEMA_VALIDATION_ERROR: 400,
    ErrorCode.THROTTLING: 429,
    ErrorCode.TABLE_BRANCH_NOT_FOUND: 404,
    ErrorCode.TABLE_BRANCH_ALREADY_EXISTS: 409,
}

_ERROR_TITLES: dict[ErrorCode, str] = {
    code: "".join(word.capitalize() for word in code.name.split("_")) for code in ErrorCode
}


class BodyTooLargeError(InvalidInputError):
    """The request body is larger than the configured limit (HTTP 413, code 13)."""


class BodyTimeoutError(InvalidInputError):
    """The request body did not arrive within the read deadline (HTTP 408, code 13)."""


class BodiesInFlightError(ServiceUnavailableError):
    """The process holds as many request body bytes as it may (HTTP 503, code 17)."""


class HeadTimeoutError(BodyTimeoutError):
    """The request head did not arrive within its deadline (HTTP 408, code 13)."""


class HeadTooLargeError(InvalidInputError):
    """The request head is larger than the configured limit (HTTP 431, code 13)."""


class MethodNotAllowedError(UnsupportedOperationError):
    """The path is served, but not with the request's method (HTTP 405, code 0)."""

    def __init__(self, message: str, allowed: list[str]) -> None:
        super().__init__(message)
        self.allowed = allowed


RETRY_AFTER_SECONDS = 1


def http_status(error: LanceNamespaceError) -> int:
    if isinstance(error, BodyTooLargeError):
        return 413
    if isinstance(error, HeadTooLargeError):
        return 431
    if isinstance(error, BodyTimeoutError):
        return 408
    if isinstance(error, MethodNotAllowedError):
        return 405
    return HTTP_STATUS_BY_CODE.get(ErrorCode(error.code), 500)


def error_headers(error: LanceNamespaceError) -> dict[str, str]:
    """Headers of the error answer. A body left unread means the connection is closed,
    so a slow or refused client does not keep its connection past the answer."""
    if isinstance(error, BodiesInFlightError):
        return {"retry-after": str(RETRY_AFTER_SECONDS), "connection": "close"}
    if isinstance(error, (BodyTimeoutError, BodyTooLargeError)):
        return {"connection": "close"}
    if isinstance(error, MethodNotAllowedError):
        return {"allow": ", ".join(error.allowed)}
    return {}


def invalid_input_from_validation(error: ValidationError) -> InvalidInputError:
    problems = "; ".join(
        f"{'.'.join(str(part) for part in issue['loc']) or 'body'}: {issue['msg']}"
        for issue in error.errors(include_url=False)
    )
    return InvalidInputError(f"invalid request: {problems}")


def as_namespace_error(error: BaseException) -> LanceNamespaceError:
    """The spec error for any exception; unexpected ones are logged with their trace."""
    if isinstance(error, LanceNamespaceError):
        if error.code == ErrorCode.INTERNAL:
            logger.error("internal error from the backend: %s", error)
        return error
    if isinstance(error, ValidationError):
        return invalid_input_from_validation(error)
    if isinstance(error, ClientDisconnect):  # no one is left to answer; not the server's fault
        return InvalidInputError("the client disconnected before its request was read")
    if isinstance(error, NotImplementedError):
        return UnsupportedOperationError(f"not supported by this backend: {error}")
    if isinstance(error, OverflowError):  # a client's number the native library cannot hold
        logger.info("number out of range", exc_info=error)
        return InvalidInputError("a number in the request is out of range")
    logger.error("unexpected error", exc_info=error)
    return InternalError("internal error; see the server log")


# What an error message may carry of the server's machine: source locations of the native
# libraries, backtraces, the server's storage paths in any spelling, and other local paths.
# The answer drops them; the log keeps them.
_BACKTRACE = re.compile(r",?\s*backtrace:.*", re.IGNORECASE | re.DOTALL)
_LOCAL_PATH = re.compile(
    r"(?<![\w.:/>])(?:file://)?/(?!v1/)(?:[^\s/'\",:;)]+/)+[^\s'\",:;)]*"
    r"|(?<=at path )[^\s'\",:;)]+"
)


def public_message(message: str, server_paths: Sequence[str] = ()) -> str:
    """`message` without backtraces, source locations, debug dumps, the server's own paths
    (`server_paths`, its storage root in any spelling, and what lies below) and local paths:
    the one sanitiser every error answer passes through."""
    cleaned = _BACKTRACE.sub("", readable(without_source_location(message)))
    cleaned = without_paths(cleaned, set(server_paths))
    return _LOCAL_PATH.sub(HIDDEN_PATH, cleaned).strip()


def server_paths_of(scope: Mapping[str, Any]) -> Sequence[str]:
    """The paths the application serving the request keeps data under (`create_app` sets
    them on its state); none outside an application."""
    state = getattr(scope.get("app"), "state", None)
    return getattr(state, "server_paths", ())


def error_body(
    error: LanceNamespaceError, instance: str, server_paths: Sequence[str] = ()
) -> dict[str, object]:
    code = ErrorCode(error.code)
    message = str(error)
    public = public_message(message, server_paths)
    if public != message:
        logger.info("error detail withheld from the answer: %s", message)
    return {
        "error": public or _ERROR_TITLES[code],
        "code": int(code),
        "detail": f"{_ERROR_TITLES[code]} (code {int(code)})",
        "instance": instance,
    }


def render_error(
    error: LanceNamespaceError, scope: MutableMapping[str, Any], instance: str,
    status: int | None = None, headers: dict[str, str] | None = None,
) -> Response:
    """The spec's error answer to the request of `scope` (its code recorded there for the
    metrics and the access log); `instance` is the path the answer names. A client dialect
    may give it another `status` (`app.dialect`) and `headers`."""
    scope[ERROR_CODE_KEY] = int(error.code)
    body = orjson.dumps(error_body(error, instance, server_paths_of(scope)))
    return Response(body, status or http_status(error), {**error_headers(error), **(headers or {})},
                    media_type=JSON)


def raw_error_answer(error: LanceNamespaceError) -> bytes:
    """The whole HTTP/1.1 error answer, for a connection whose request never reached the
    application (its head is incomplete or too large); the connection is closed after it."""
    status = http_status(error)
    body = orjson.dumps(error_body(error, ""))
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ncontent-type: {JSON}\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")
    return head.encode("ascii") + body
