"""Turning backend responses and errors into HTTP responses."""

from __future__ import annotations

import json
from typing import Any

from lance_namespace import LanceNamespaceError
from pydantic import BaseModel
from starlette.responses import Response

from app.errors import error_body, http_status
from app.spec import ARROW_FILE, AnswerKind

JSON = "application/json"
CONTEXT_HEADER_PREFIX = "header."


def _split_context(payload: dict[str, Any]) -> dict[str, str]:
    """Move `header.`-prefixed context entries out of the payload; they become headers."""
    context = payload.get("context")
    if not context:
        return {}
    headers = {
        key[len(CONTEXT_HEADER_PREFIX):]: value
        for key, value in context.items()
        if key.startswith(CONTEXT_HEADER_PREFIX)
    }
    rest = {k: v for k, v in context.items() if not k.startswith(CONTEXT_HEADER_PREFIX)}
    if rest:
        payload["context"] = rest
    else:
        payload.pop("context")
    return headers


def _json(payload: Any, headers: dict[str, str] | None = None, status: int = 200) -> Response:
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    return Response(body, status_code=status, media_type=JSON, headers=headers)


def render(answer: AnswerKind, response: BaseModel) -> Response:
    """The HTTP form of a backend response, as the operation's /v1/ route answers."""
    payload = response.to_dict() if hasattr(response, "to_dict") else response.model_dump()
    headers = _split_context(payload)
    if answer is AnswerKind.ARROW_FILE:
        return Response(response.data, media_type=ARROW_FILE, headers=headers)
    if answer is AnswerKind.INTEGER:
        return _json(payload["count"], headers)
    if answer is AnswerKind.STATUS:
        return Response(status_code=200, headers=headers)
    return _json(payload, headers)


def render_model(answer: AnswerKind, response: BaseModel) -> Response:
    """The HTTP form of a backend response on a POST /<OperationId> route: the model as JSON."""
    if answer is AnswerKind.ARROW_FILE:
        return render(answer, response)
    return render(AnswerKind.JSON, response)


def render_error(error: LanceNamespaceError, instance: str) -> Response:
    return _json(error_body(error, instance), status=http_status(error))
