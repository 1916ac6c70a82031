"""The health endpoints outside the Lance routes: /healthz, /readyz and /metrics."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from pathlib import Path

import anyio
from lance_namespace import LanceNamespace, ListNamespacesRequest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.config import Settings
from app.observability import METRICS_CONTENT_TYPE, Metrics, named_route
from backends.directory.settings import DirectorySettings

logger = logging.getLogger("lance_adapter")
_NO_STORE = {"cache-control": "no-store"}
# The routes `health_routes` serves; they answer without credentials (app.auth).
HEALTH_PATHS = ("/healthz", "/readyz", "/metrics")


Probe = Callable[[], None]


def local_root(settings: Settings) -> Path | None:
    """The directory backend's root when it is on the local filesystem, as the backend reads
    its settings."""
    if settings.impl != "dir":
        return None
    return DirectorySettings.from_properties(settings.properties).local_root()


def check_writable(root: Path) -> None:
    """Creates and removes a file in `root`, or in its nearest existing ancestor if the
    backend has not created it yet: a root the server cannot write to is not ready."""
    existing = root.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise NotADirectoryError(f"{existing} is not a directory")
    with tempfile.NamedTemporaryFile(dir=existing, prefix=".lance-adapter-ready-"):
        pass


def backend_probe(namespace: LanceNamespace) -> Probe:
    """The backend's own `readiness_probe`, else listing one namespace of the root."""
    probe = getattr(namespace, "readiness_probe", None)
    if callable(probe):
        return probe
    return lambda: namespace.list_namespaces(ListNamespacesRequest(id=[], limit=1))


class Readiness:
    """Runs the readiness probe, which must answer within `timeout` seconds."""

    def __init__(self, probe: Probe, timeout: float) -> None:
        self._probe = probe
        self.timeout = timeout
        # One probe at a time: a hung backend cannot pile up probe threads.
        self._limiter = anyio.CapacityLimiter(1)

    @classmethod
    def for_backend(cls, namespace: LanceNamespace, settings: Settings) -> Readiness:
        probe, root = backend_probe(namespace), local_root(settings)
        if root is None:
            return cls(probe, settings.readiness_timeout)

        def probe_and_write() -> None:
            probe()
            check_writable(root)

        return cls(probe_and_write, settings.readiness_timeout)

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


def health_routes(readiness: Readiness, metrics: Metrics) -> list[Route]:
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
        named_route("/healthz", healthz, "healthz"),
        named_route("/readyz", readyz, "readyz"),
        named_route("/metrics", metrics_endpoint, "metrics"),
    ]
