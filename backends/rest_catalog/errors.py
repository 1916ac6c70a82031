"""How a REST catalog's refusal becomes a Lance error: the only place where an HTTP status
becomes a Lance error code; backends only name what a 404 or 409 means for one call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import httpx
from lance_namespace import (
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    PermissionDeniedError,
    ServiceUnavailableError,
    ThrottlingError,
    UnauthenticatedError,
)

MAX_MESSAGE_LENGTH = 1000

# Statuses whose meaning does not depend on the call; anything else unexpected is InternalError.
STATUS_ERRORS: dict[int, type[LanceNamespaceError]] = {
    400: InvalidInputError,
    401: UnauthenticatedError,
    403: PermissionDeniedError,
    429: ThrottlingError,
    503: ServiceUnavailableError,
}

# Per-call meaning of a status (404, 409, ...) or of the server's own error code/type string.
ErrorRules = Mapping[int | str, type[LanceNamespaceError]]


@dataclass(frozen=True)
class ErrorReply:
    """What a catalog said when it refused a request."""

    status: int
    kind: str
    message: str


def parse_error_reply(response: httpx.Response) -> ErrorReply:
    """Read the error of a Unity (`error_code`/`message`), Iceberg (`error.type`/`error.message`)
    or OAuth2 (`error`/`error_description`) reply."""
    kind, message = "", ""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        nested = body.get("error")
        if isinstance(nested, dict):
            kind, message = str(nested.get("type") or ""), str(nested.get("message") or "")
        elif isinstance(nested, str):
            kind, message = nested, str(body.get("error_description") or "")
        else:
            kind = str(body.get("error_code") or "")
            message = str(body.get("message") or body.get("detail") or "")
    if not message:
        message = response.text.strip() or response.reason_phrase
    return ErrorReply(response.status_code, kind, message[:MAX_MESSAGE_LENGTH])


def error_for(reply: ErrorReply, rules: ErrorRules | None = None) -> LanceNamespaceError:
    """The Lance error for a refused request: call rules first, then the common statuses."""
    rules = rules or {}
    error_class = (
        rules.get(reply.kind)
        or rules.get(reply.status)
        or STATUS_ERRORS.get(reply.status)
        or InternalError
    )
    detail = f"{reply.kind}: {reply.message}" if reply.kind else reply.message
    return error_class(f"catalog returned HTTP {reply.status}: {detail}")


