"""The audit trail: one JSON line per call that changes anything (whatever its outcome, a
refusal included) and per credential vend, on the logger `lance_adapter.audit`, or in
`audit_log_file` when set (appended, one write a line, so the workers of a server share it).

Each line says who (the identity: the tokens file's name of the token, or an OIDC token's
identity claim; `null` for an unnamed caller), from where (the client address, as a trusted
gateway forwarded it), what (the operation, the table or namespace id, a rename's new id),
when and under which request id, and how it ended (`outcome`, the HTTP status and the Lance
error code). Never a token, a body or a credential.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from lance_namespace import LanceNamespaceError
from starlette.types import Scope

from app.auth import PRINCIPAL_KEY
from app.observability import JsonFormatter
from backends.core.access import renamed_id
from backends.core.names import joined_id

AUDIT_LOGGER_NAME = "lance_adapter.audit"


class AuditLog:
    """Writes audit lines to `path` (a file of its own), else to the `lance_adapter.audit`
    logger and so to the server's log."""

    def __init__(self, path: str = "") -> None:
        if path:
            # A logger of this object's own, outside logging's registry: two applications in
            # one process (the tests) do not share, or stack, its handler.
            self.logger = logging.Logger(AUDIT_LOGGER_NAME, logging.INFO)
            handler = logging.FileHandler(path, encoding="utf-8")
            handler.setFormatter(JsonFormatter())
            self.logger.addHandler(handler)
        else:
            self.logger = logging.getLogger(AUDIT_LOGGER_NAME)

    def call(
        self, scope: Scope, operation: str, fields: Mapping[str, Any], status: int,
        code: int | None,
    ) -> None:
        """A call that changes something (or was meant to), as it ended."""
        entry = {**_who(scope), "event": "call", "operation": operation,
                 "id": _id(fields.get("id")), "outcome": _outcome(status),
                 "status": status, "code": code}
        renamed = _renamed(fields)
        if renamed is not None:
            entry["new_id"] = renamed
        self._write(entry)

    def vend(self, scope: Scope, table_id: Sequence[str], access: str,
             expires_at_millis: int | None) -> None:
        """Credentials handed to a caller for one table."""
        expires = None if expires_at_millis is None else datetime.fromtimestamp(
            expires_at_millis / 1000, UTC).isoformat(timespec="seconds")
        self._write({**_who(scope), "event": "vend", "operation": "VendCredentials",
                     "id": _id(table_id), "access": access, "expires": expires,
                     "outcome": "ok"})

    def _write(self, entry: dict[str, Any]) -> None:
        self.logger.info("audit", extra={"access": entry})


def _who(scope: Scope) -> dict[str, Any]:
    client = scope.get("client")
    return {"identity": scope.get(PRINCIPAL_KEY), "client": client[0] if client else None}


def _id(value: Any) -> str | None:
    if isinstance(value, list | tuple) and all(isinstance(part, str) for part in value):
        return joined_id(list(value))
    return None


def _renamed(fields: Mapping[str, Any]) -> str | None:
    if not isinstance(fields.get("new_table_name"), str):
        return None
    try:  # what access checks names; a rename that named nothing valid has no new id
        return _id(renamed_id(fields, list(fields.get("id") or [])))
    except (LanceNamespaceError, TypeError):
        return None


def _outcome(status: int) -> str:
    if status < 400:
        return "ok"
    return "refused" if status in (401, 403) else "failed"
