"""The health endpoints outside the Lance routes: /healthz, /readyz and /metrics."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import anyio
from lance_namespace import LanceNamespace, LanceNamespaceError, ListNamespacesRequest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.errors import public_message
from app.observability import METRICS_CONTENT_TYPE, Metrics, Redactor, named_route
from app.settings import Settings

logger = logging.getLogger("lance_adapter")
_NO_STORE = {"cache-control": "no-store"}
# The routes `health_routes` serves; they answer without credentials (app.auth).
HEALTH_PATHS = ("/healthz", "/readyz", "/metrics")
_MOST_REASON = 300  # characters of a failed check's reason in the /readyz answer


# A probe raises when the backend cannot serve; it may return what is down meanwhile.
Probe = Callable[[], Mapping[str, str] | None]


def backend_probe(namespace: LanceNamespace) -> Probe:
    """The backend's own `readiness_probe`, else listing one namespace of the root."""
    probe = getattr(namespace, "readiness_probe", None)
    if callable(probe):
        return probe
    return lambda: namespace.list_namespaces(ListNamespacesRequest(id=[], limit=1))


class Readiness:
    """Runs the readiness checks, in order, which must all answer within `timeout` seconds:
    the backend's probe (check `backend`), then the backend's own (e.g. `root_writable`, a
    file written in a local `dir` root)."""

    def __init__(self, probe: Probe, timeout: float,
                 checks: Sequence[tuple[str, Probe]] = (),
                 server_paths: Sequence[str] = (), redactor: Redactor | None = None) -> None:
        self._checks = [("backend", probe), *checks]
        self.timeout = timeout
        self.server_paths = server_paths  # hidden in the reasons it answers, as is
        self.redactor = redactor or Redactor()  # what the logs hide
        self._running = "backend"  # the check under way, named when time runs out
        # One probe at a time: a hung backend cannot pile up probe threads.
        self._limiter = anyio.CapacityLimiter(1)
        # What the backend's probe reported down while the server stays ready (a server of
        # several catalogs: the catalogs that do not answer), from the last probe.
        self.degraded: dict[str, str] = {}

    @classmethod
    def for_backend(cls, namespace: LanceNamespace, settings: Settings,
                    server_paths: Sequence[str] = (),
                    redactor: Redactor | None = None) -> Readiness:
        """The backend's probe, then the checks it asks for (`backends.hooks`)."""
        checks = getattr(namespace, "readiness_checks", list)()
        return cls(backend_probe(namespace), settings.readiness_timeout, checks, server_paths,
                   redactor)

    def _run_checks(self) -> None:
        for name, check in self._checks:
            self._running = name
            report = check()
            if name == "backend":
                self.degraded = dict(report) if isinstance(report, Mapping) else {}

    async def problem(self) -> dict[str, str] | None:
        """None when every check answered in time, else the check that did not and why."""
        try:
            with anyio.fail_after(self.timeout):
                await anyio.to_thread.run_sync(
                    self._run_checks, limiter=self._limiter, abandon_on_cancel=True
                )
        except TimeoutError:
            return {"check": self._running,
                    "reason": f"did not answer within {self.timeout:g}s"}
        except Exception as error:
            logger.warning("readiness check %s failed: %s: %s", self._running,
                           type(error).__name__, error)
            return {"check": self._running, "reason": _why(error, self.server_paths, self.redactor)}
        return None


def _why(error: Exception, server_paths: Sequence[str], redactor: Redactor) -> str:
    """What a failed check says, as an error answer would (no server path, backtrace or
    credential), led by the error's kind."""
    message = redactor(public_message(str(error), server_paths))
    kind = (f"code {int(error.code)}" if isinstance(error, LanceNamespaceError)
            else type(error).__name__)
    return f"{kind}: {message}"[:_MOST_REASON] if message else kind


def health_routes(readiness: Readiness, metrics: Metrics) -> list[Route]:
    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"}, headers=_NO_STORE)

    async def readyz(_: Request) -> Response:
        problem = await readiness.problem()
        if problem is None:
            degraded = {"degraded": readiness.degraded} if readiness.degraded else {}
            return JSONResponse({"status": "ready", **degraded}, headers=_NO_STORE)
        return JSONResponse({"status": "unavailable", **problem}, 503, _NO_STORE)

    async def metrics_endpoint(_: Request) -> Response:
        return Response(metrics.render(), media_type=METRICS_CONTENT_TYPE, headers=_NO_STORE)

    return [
        named_route("/healthz", healthz, "healthz"),
        named_route("/readyz", readyz, "readyz"),
        named_route("/metrics", metrics_endpoint, "metrics"),
    ]
