"""Client dialects: how one client's requests and answers differ from the Lance REST spec.

The endpoint picks one dialect per request from its headers (`app.lancedb.dialect_of`) and
hands it to the three steps of the request: reading (`request_fields`: the client's fields
put in the spec's form, before they are checked; `fields_from_arrow`: the fields an Arrow
body stands for), the backend call (`backend_call`: the call the client means where it
differs from the spec's operation) and the answer (`answer`, `answer_headers`,
`refusal`). This base class is the spec's own dialect, which changes nothing; LanceDB's
remote client has `app.lancedb.LanceDBDialect`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lance_namespace import LanceNamespace, LanceNamespaceError

from app.errors import http_status


class Dialect:
    """The Lance REST spec as it is written."""

    def request_fields(self, operation_id: str, fields: dict[str, Any]) -> None:
        """Put the request `fields` of `operation_id` in the spec's form, in place."""

    def fields_from_arrow(self, operation_id: str, body: bytes) -> dict[str, Any] | None:
        """The request fields an Arrow IPC stream body stands for, on an operation whose body
        is JSON; None when the client may not send one."""
        return None

    def backend_call(
        self, namespace: LanceNamespace, operation_id: str
    ) -> Callable[[Any], Any] | None:
        """The backend call the client means by `operation_id`, when it is not the spec's."""
        return None

    def answer(self, operation_id: str, payload: dict[str, Any]) -> Any:
        """The JSON answer of `operation_id` in the form the client parses."""
        return payload

    def answer_headers(self) -> dict[str, str]:
        """Headers every answer to the client carries, errors included."""
        return {}

    def refusal(
        self, error: LanceNamespaceError, operation_id: str, fields: dict[str, Any]
    ) -> tuple[LanceNamespaceError, int]:
        """The error answer to `operation_id` whose request `fields` (as read: none when
        reading failed) failed with `error`: what the client is told, and its HTTP status."""
        return error, http_status(error)


SPEC = Dialect()
