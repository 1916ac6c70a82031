"""Calling the backend: one official request model in, one response model out."""

from __future__ import annotations

from typing import Any

import anyio
from lance_namespace import LanceNamespace
from pydantic import BaseModel

from app.spec import BodyKind, Operation


class Dispatcher:
    """Runs blocking backend calls on a bounded thread pool, off the event loop."""

    def __init__(self, namespace: LanceNamespace, max_concurrency: int) -> None:
        self.namespace = namespace
        self._limiter = anyio.CapacityLimiter(max_concurrency)

    async def call(
        self, operation: Operation, fields: dict[str, Any], data: bytes | None
    ) -> BaseModel:
        request = operation.request_model.model_validate(fields)
        method = getattr(self.namespace, operation.backend_method)
        arguments = (request, data) if operation.body is BodyKind.ARROW else (request,)
        return await anyio.to_thread.run_sync(method, *arguments, limiter=self._limiter)
