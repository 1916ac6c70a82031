"""Calling the backend: one official request model in, one response model out."""

from __future__ import annotations

from typing import Any

import anyio
from lance_namespace import LanceNamespace, ServiceUnavailableError
from pydantic import BaseModel

from app.spec import BodyKind, Operation

# Operations that change nothing: when one outlasts the backend timeout the caller gets 17 at
# once and may retry safely. A write is always awaited, so its answer is never a guess.
READ_ONLY_PREFIXES = ("Describe", "List", "Count", "Query")
READ_ONLY_SUFFIXES = ("Exists",)


def is_read_only(operation: Operation) -> bool:
    name = operation.operation_id
    return name.startswith(READ_ONLY_PREFIXES) or name.endswith(READ_ONLY_SUFFIXES)


class Dispatcher:
    """Runs blocking backend calls on a bounded thread pool, off the event loop."""

    def __init__(
        self, namespace: LanceNamespace, max_concurrency: int, backend_timeout: float = 0
    ) -> None:
        self.namespace = namespace
        self._limiter = anyio.CapacityLimiter(max_concurrency)
        self._backend_timeout = backend_timeout

    async def call(
        self, operation: Operation, fields: dict[str, Any], data: bytes | None
    ) -> BaseModel:
        request = operation.request_model.model_validate(fields)
        method = getattr(self.namespace, operation.backend_method)
        arguments = (request, data) if operation.body is BodyKind.ARROW else (request,)
        if not (self._backend_timeout > 0 and is_read_only(operation)):
            return await anyio.to_thread.run_sync(method, *arguments, limiter=self._limiter)
        with anyio.move_on_after(self._backend_timeout):
            return await anyio.to_thread.run_sync(
                method, *arguments, limiter=self._limiter, abandon_on_cancel=True
            )
        raise ServiceUnavailableError(
            f"the backend did not answer {operation.operation_id} within "
            f"{self._backend_timeout:g} s"
        )
