"""Operations endpoints outside the Lance routes: /healthz, /readyz and /metrics."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
from lance_namespace import LanceNamespace, ListNamespacesRequest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.observability import METRICS_CONTENT_TYPE, OPERATION_ATTRIBUTE, Metrics

logger = logging.getLogger("lance_adapter")
_NO_STORE = {"cache-control": "no-store"}


class Readiness:
    """Asks the backend for one namespace of the root, within `timeout` seconds."""

    def __init__(self, namespace: LanceNamespace, timeout: float) -> None:
        self.namespace = namespace
        self.timeout = timeout
        # One probe at a time: a hung backend cannot pile up probe threads.
        self._limiter = anyio.CapacityLimiter(1)

    def _probe(self) -> None:
        self.namespace.list_namespaces(ListNamespacesRequest(id=[], limit=1))

    async def problem(self) -> str | None:
        """None when the backend answered in time, else why it is not ready."""
        try:
            with anyio.fail_after(self.timeout):
                await anyio.to_thread.run_sync(
                    self._probe, limiter=self._limiter, abandon_on_cancel=True
                )
        except TimeoutError:
            return f"backend did not answer within {self.timeout:g}s"
        except Exception as error:
            logger.warning("readiness probe failed: %s: %s", type(error).__name__, error)
            return f"backend call failed ({type(error).__name__})"
        return None


def _named(name: str, endpoint: Callable[[Request], Awaitable[Response]]) -> Route:
    setattr(endpoint, OPERATION_ATTRIBUTE, name)
    return Route(f"/{name}", endpoint, methods=["GET"], name=name)


def operations_routes(readiness: Readiness, metrics: Metrics) -> list[Route]:
    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"}, headers=_NO_STORE)

    async def readyz(_: Request) -> Response:
        problem = await readiness.problem()
        if problem is None:
            return JSONResponse({"status": "ready"}, headers=_NO_STORE)
        return JSONResponse({"status": "unavailable", "reason": problem}, 503, _NO_STORE)

    async def metrics_endpoint(_: Request) -> Response:
        return Response(metrics.render(), media_type=METRICS_CONTENT_TYPE, headers=_NO_STORE)

    return [
        _named("healthz", healthz),
        _named("readyz", readyz),
        _named("metrics", metrics_endpoint),
    ]
