"""Turning backend responses into HTTP responses (errors: `app.errors.render_error`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import orjson
from starlette.responses import Response, StreamingResponse

from app.dialect import SPEC, Dialect
from app.protocol import ARROW_FILE, CONTEXT_HEADER_PREFIX, JSON
from app.spec import AnswerKind, Operation
from backends.core.arrow_answers import ArrowFileAnswer

logger = logging.getLogger("lance_adapter")


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
    body = orjson.dumps(payload, option=orjson.OPT_NON_STR_KEYS)
    return Response(body, status_code=status, media_type=JSON, headers=headers)


def _payload(response: Any) -> dict[str, Any]:
    return response.to_dict() if hasattr(response, "to_dict") else response.model_dump()


def render(operation: Operation, response: Any, dialect: Dialect = SPEC) -> Response:
    """The HTTP form of a backend response, as the operation's /v1/ route answers it to a
    client of `dialect`."""
    answer, status = operation.answer, operation.status
    if isinstance(response, ArrowFileAnswer):
        if response.whole is not None:  # one body: no task group, no thread hand-off a chunk
            return Response(response.whole, status, dialect.answer_headers(),
                            media_type=ARROW_FILE)
        return StreamingResponse(_cut_off_on_error(response), status,
                                 dialect.answer_headers(), media_type=ARROW_FILE)
    if answer is AnswerKind.STRING:
        return _json(response, dialect.answer_headers(), status)
    payload = _payload(response)
    headers = {**_split_context(payload), **dialect.answer_headers()}
    if answer is AnswerKind.ARROW_FILE:
        return Response(response.data, status, headers, media_type=ARROW_FILE)
    if answer is AnswerKind.INTEGER:
        return _json(payload["count"], headers, status)
    if answer is AnswerKind.FIELD:
        return _json(payload.get(operation.body_field) or {}, headers, status)
    if answer is AnswerKind.STATUS:
        return Response(status_code=status, headers=headers)
    return _json(dialect.answer(operation.backend_id, payload), headers, status)


def _cut_off_on_error(answer: ArrowFileAnswer) -> Iterator[bytes]:
    """The answer's chunks; a read that fails after the first chunk was sent ends the answer
    there, without the file's footer, so the client's reader fails rather than read a
    shorter answer (its status was sent already)."""
    try:
        yield from answer.chunks()
    except Exception:
        logger.exception("an answer was cut off: reading its rows failed")


def render_model(operation: Operation, response: Any, dialect: Dialect = SPEC) -> Response:
    """The HTTP form of a backend response on a POST /<OperationId> route: the model as JSON
    (Arrow query results and plan strings stay as they are)."""
    if operation.answer in (AnswerKind.ARROW_FILE, AnswerKind.STRING):
        return render(operation, response, dialect)
    payload = _payload(response)
    headers = _split_context(payload)
    return _json(payload, headers)
