"""The FastAPI application: every operation of rest.yaml at its /v1/ route and at POST /<Id>."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI
from lance_namespace import InvalidInputError, LanceNamespace, UnsupportedOperationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from app.audit import AuditLog
from app.auth import (
    GROUPS_KEY,
    IDENTITY_KEY,
    PRINCIPAL_KEY,
    RULES_KEY,
    AuthMiddleware,
    check_forwarding,
)
from app.bodies import BodyLimits, release_body
from app.browser_guard import BrowserGuard
from app.cache import GENERATION_FILE, Generations, MetadataCache
from app.config import backend_properties, served_vendor
from app.credentials import Credentials
from app.deadlines import Deadlines
from app.dialect import Dialect
from app.dispatch import Dispatcher
from app.docs import docs_routes
from app.errors import (
    MethodNotAllowedError,
    as_namespace_error,
    is_native_panic,
    render_error,
)
from app.health import Readiness, health_routes
from app.lancedb import dialect_of
from app.lancedb.unserved import unserved_reason
from app.maintenance import MaintenanceWorker, maintains
from app.malloc_arenas import MemoryTrimmer
from app.observability import (
    ERROR_CODE_KEY,
    Metrics,
    ObservabilityMiddleware,
    Redactor,
    named_endpoint,
    use_redactor,
)
from app.oidc import TokenVerifier
from app.requests import (
    Authorize,
    parse_path_identifier,
    read_operation_request,
    read_route_request,
    refuse_idempotency_key,
)
from app.responses import render, render_model
from app.routing import LanceRoutes, RouteTable, route_path
from app.session_renewal import SessionRenewer
from app.settings import Settings
from app.spec import Operation, load_operations
from backends import IMPLS
from backends.core.access import Grants, check_access
from backends.core.names import ID_DELIMITER
from backends.core.operations import Level, Subject, traits_of
from backends.core.secrets import credential_values, without_credentials
from backends.vending import CredentialVendor, with_vended
from backends.vending.catalogs import CatalogVendors

RequestReader = Callable[
    [Operation, Request, BodyLimits, Dialect, bool, Authorize],
    Awaitable[tuple[dict[str, Any], Any]],
]
Renderer = Callable[[Operation, Any, Dialect], Response]


@dataclass(frozen=True)
class _Service:
    dispatcher: Dispatcher
    metrics: Metrics
    max_body: BodyLimits
    auth_on: bool
    vendor: CredentialVendor | CatalogVendors | None = None
    # One line per call that changes anything and per vend, when on (`app.audit`).
    audit: AuditLog | None = None
    # The LanceDB database whose tables are the root's (`app.lancedb`).
    lancedb_root_database: str = ""
    # Told of every write of rows, when maintenance is on: it compacts busy tables.
    maintenance: MaintenanceWorker | None = None


class OperationEndpoint:
    """One operation at one of its routes: read the request, call the backend, answer."""

    def __init__(
        self, operation: Operation, service: _Service, read: RequestReader, answer: Renderer,
        name: str,
    ) -> None:
        self.operation = operation
        self.service = service
        self.read = read
        self.answer = answer
        # Whether the backend reads this operation's Arrow body as it arrives, and acts on an
        # idempotency key.
        honours = getattr(service.dispatcher.namespace, "honours", None)
        method = operation.backend_method
        self.streams_body = bool(honours and honours(method, "streamed_body"))
        self.keyed = bool(honours and honours(method, "keyed"))
        traits = traits_of(operation.backend_id)
        self.audited = service.audit is not None and not traits.read_only
        self.maintained = service.maintenance if traits.writes_rows else None
        named_endpoint(self, name)

    def refused_before_reading(self, scope: Scope, status: int, code: int) -> None:
        """A call refused before its request was read (no valid credential): the audit line
        of a changing one, naming the id its route's path or query string gives (none by
        POST /<Operation> with a JSON body, which is not read for a caller not known)."""
        if not self.audited:
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        raw = scope.get("path_params", {}).get("id") or next(iter(query.get("id", [])), None)
        delimiter = next(iter(query.get("delimiter", [])), None) or ID_DELIMITER
        fields = {}
        with contextlib.suppress(InvalidInputError):
            fields = {"id": parse_path_identifier(raw, delimiter)} if raw else {}
        self.service.audit.call(scope, self.operation.operation_id, fields, status, code)

    async def asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = await self.respond(request)
        await response(scope, receive, send)

    async def respond(self, request: Request) -> Response:
        """The one error path: whatever fails becomes the spec's error answer. The client's
        dialect (`app.dialect`) is picked here, once, for reading, calling and answering."""
        dialect = dialect_of(request.headers, self.service.lancedb_root_database)
        fields: dict[str, Any] = {}

        def authorize(target: dict[str, Any]) -> None:
            """The grant at the id the request names, before the rest is read or judged."""
            fields.update(target)  # for the audit line of a refusal
            self._check_access(target, request.scope, target_only=True)

        try:
            fields, data = await self.read(
                self.operation, request, self.service.max_body, dialect, self.streams_body,
                authorize)
            refuse_idempotency_key(self.operation, fields, self.keyed)
            await self.service.dispatcher.resolve_source(
                self.operation, fields,
                request.scope.get(IDENTITY_KEY) if self.service.auth_on else None)
            grants = self._check_access(fields, request.scope)
            if self.service.auth_on:
                fields["identity"] = request.scope.get(IDENTITY_KEY)
            response = without_credentials(await self.service.dispatcher.call(
                self.operation, fields, data, dialect, grants))
            response = await self._with_vended(fields, request.scope, response, grants)
            answer = self.answer(self.operation, response, dialect)
            if self.maintained is not None:
                self.maintained.written(fields.get("id") or [])
        except BaseException as error:
            if not (isinstance(error, Exception) or is_native_panic(error)):
                raise
            refused, status = dialect.refusal(
                as_namespace_error(error), self.operation.operation_id, fields)
            answer = render_error(refused, request.scope, request.url.path, status,
                                  dialect.answer_headers())
        finally:
            release_body(request)
        if self.audited:
            self.service.audit.call(request.scope, self.operation.operation_id, fields,
                                    answer.status_code, request.scope.get(ERROR_CODE_KEY))
        return answer

    def _check_access(self, fields: dict[str, Any], scope: Scope,
                      target_only: bool = False) -> Grants | None:
        """The caller's grants (by the rules in force when the request arrived), once they
        cover what the operation needs (else code 15; with `target_only`, at its id alone);
        in front of the metadata cache and the backend. None when the server does not
        judge."""
        rules = scope.get(RULES_KEY)
        policy = rules.policy if rules is not None else None
        if policy is None:
            return None
        principal = scope.get(PRINCIPAL_KEY)
        grants = policy.grants_of(principal, scope.get(GROUPS_KEY, ()))
        check_access(grants, self.operation.backend_method, fields, principal, target_only)
        return grants

    async def _with_vended(
        self, fields: dict[str, Any], scope: Scope, response: Any, grants: Grants | None
    ) -> Any:
        """The answer with credentials for the caller's access, when vending is on and the
        request asks for them (or leaves it unset, with `vending.unasked`); keys that write
        only for a caller who may write the table."""
        table_id = fields.get("id") or []
        vendor = None if self.service.vendor is None else self.service.vendor.for_table(table_id)
        location = getattr(response, "location", None)
        if (vendor is None or not traits_of(self.operation.backend_id).vends
                or not location or not vendor.asked(fields.get("vend_credentials"))):
            return response
        caller_token = (fields.get("identity") or {}).get("auth_token")
        may_write = grants is None or grants.allows(Level.WRITE, table_id, Subject.TABLE)
        vended = await self.service.dispatcher.run("VendCredentials", functools.partial(
            vendor.vend, location, scope.get(PRINCIPAL_KEY), table_id, caller_token, may_write))
        if vended is not None and self.service.audit is not None:
            self.service.audit.vend(scope, table_id, vended.access, vended.expires_at_millis)
        return with_vended(response, vended)


def operation_routes(
    operations: list[Operation],
    dispatcher: Dispatcher,
    settings: Settings,
    metrics: Metrics | None = None,
    vendor: CredentialVendor | None = None,
    maintenance: MaintenanceWorker | None = None,
    deadlines: Deadlines | None = None,
) -> LanceRoutes:
    """Every operation at its /v1/ route and at POST /<OperationId>, as one route table."""
    service = _Service(
        dispatcher, metrics or Metrics(), BodyLimits.from_settings(settings, deadlines),
        settings.auth_mode != "off", vendor,
        AuditLog(settings.audit_log_file) if settings.audit_log else None,
        settings.lancedb_root_database, maintenance,
    )
    endpoints: dict[tuple[str, bool], Any] = {}
    for operation in operations:
        name = operation.operation_id
        endpoints[(name, False)] = OperationEndpoint(
            operation, service, read_route_request, render, name
        )
        endpoints[(name, True)] = OperationEndpoint(
            operation, service, read_operation_request, render_model, f"{name}-by-id"
        )
    return LanceRoutes(RouteTable.build(operations), endpoints)


async def _no_such_route(request: Request, error: Exception) -> Response:
    """No route at the path (code 0, 406), or not with this method (code 0, 405)."""
    path = request.url.path
    if isinstance(error, HTTPException) and error.status_code == 405:
        allowed = sorted((error.headers or {}).get("Allow", "").split(", "))
        message = f"{request.method} is not served at this path; it answers {', '.join(allowed)}"
        refused = MethodNotAllowedError(message, allowed)
        return render_error(refused, request.scope, path)
    message = unserved_reason(route_path(request.scope)) or (
        f"no operation is served at this path (method {request.method})")
    return render_error(UnsupportedOperationError(message), request.scope, path)


def _audit_refused(scope: Scope, status: int, code: int) -> None:
    """A request the auth middleware refused: the operation's endpoint records it."""
    endpoint = scope.get("endpoint")
    if isinstance(endpoint, OperationEndpoint):
        endpoint.refused_before_reading(scope, status, code)


def _add_middleware(
    app: FastAPI, settings: Settings, metrics: Metrics, redactor: Redactor
) -> None:
    """Innermost first: auth (or, with auth off, the browser guard), then ids/metrics/logs
    (incl. root_path), then proxy headers."""
    if settings.auth_mode != "off":
        verifier = TokenVerifier(settings) if settings.auth_mode == "oidc" else None
        app.add_middleware(AuthMiddleware, mode=settings.auth_mode,
                           credentials=Credentials(settings, redactor=redactor).current,
                           routes=app.router.routes,
                           verifier=verifier, on_refused=_audit_refused)
    else:
        app.add_middleware(BrowserGuard, settings=settings, routes=app.router.routes)
    app.add_middleware(ObservabilityMiddleware, metrics=metrics,
                       access_log=settings.access_log, root_path=settings.root_path,
                       access_log_sample=settings.access_log_sample)
    trusted = [host.strip() for host in settings.trusted_proxies.split(",") if host.strip()]
    if trusted:
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=trusted)


def metadata_cache(
    settings: Settings, metrics: Metrics, namespace: LanceNamespace,
    runtime_dir: Path | None = None,
) -> MetadataCache | None:
    """The backend's cache; its write counters are shared with the other workers through
    `runtime_dir` when there is one (several workers), else they live in this process.

    Only the built-in backends are cached: what a plug-in's answers depend on is unknown.
    """
    if not settings.metadata_cache or settings.impl not in IMPLS:
        return None
    generations = Generations(runtime_dir / GENERATION_FILE if runtime_dir else None)
    return MetadataCache(
        generations, settings.metadata_cache_ttl, settings.metadata_cache_validated_ttl,
        settings.metadata_cache_entries, getattr(namespace, "cache_stamper", lambda: None)(),
        metrics,
    )


class AdapterApp(FastAPI):
    """FastAPI, except that Lance operations skip its middleware and router.

    They go straight from the application's own middleware (ids, metrics, logs, auth) to
    the route table; every other path (ops, docs, 404s) takes FastAPI's full stack.
    """

    lance_routes: LanceRoutes | None = None

    def build_middleware_stack(self) -> ASGIApp:
        own_middleware, self.user_middleware = self.user_middleware, []
        try:
            fallback = super().build_middleware_stack()
        finally:
            self.user_middleware = own_middleware
        if self.lance_routes is None:
            return fallback
        app: ASGIApp = LanceFirst(self.lance_routes, fallback)
        for cls, args, kwargs in reversed(own_middleware):
            app = cls(app, *args, **kwargs)
        return app


class LanceFirst:
    """Serves a Lance operation from the route table, anything else from `fallback`."""

    def __init__(self, routes: LanceRoutes, fallback: ASGIApp) -> None:
        self.routes = routes
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match, child_scope = self.routes.matches(scope)
        if match is not Match.NONE:
            scope.update(child_scope)
            await self.routes.handle(scope, receive, send)
        else:
            await self.fallback(scope, receive, send)


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The application's background work (the maintenance worker, when on, the memory
    trimmer and the Lance session's renewer) runs while it serves."""
    worker: MaintenanceWorker | None = getattr(app.state, "maintenance", None)
    trimmer: MemoryTrimmer = app.state.trimmer
    renewer: SessionRenewer = app.state.renewer
    trimmer.start()
    renewer.start()
    if worker is not None:
        worker.start()
    try:
        yield
    finally:
        if worker is not None:
            await asyncio.to_thread(worker.stop)
        await asyncio.to_thread(trimmer.stop)
        await asyncio.to_thread(renewer.stop)


def create_app(
    namespace: LanceNamespace,
    settings: Settings | None = None,
    runtime_dir: Path | None = None,
    metrics_dir: str | None = None,
) -> AdapterApp:
    """The application serving `namespace`; `runtime_dir` and `metrics_dir` are the
    directories the workers of one server share (`app.workers`), when there are several."""
    settings = settings or Settings()
    check_forwarding(namespace, settings)
    app = AdapterApp(
        title="lance-namespace-adapter",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        exception_handlers={404: _no_such_route, 405: _no_such_route},
        lifespan=_lifespan,
        # The server's own metrics and logs (`app.observability`); FastAPI's OpenTelemetry
        # hooks would look for configured providers on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    operations = load_operations()
    aliases = {op.operation_id: op.target_id for op in operations if op.target_id}
    metrics = Metrics(settings.metrics_identities, metrics_dir)
    # The one keeper of the server's deadlines: its protocol's (request heads), its bodies'
    # and its backend calls'.
    app.state.deadlines = deadlines = Deadlines()
    dispatcher = Dispatcher(
        namespace, settings.max_concurrency, settings.backend_timeout, aliases,
        metadata_cache(settings, metrics, namespace, runtime_dir), metrics.observe_backend,
        metrics.observe_catalog_request, deadlines,
    )
    redactor = Redactor()  # what no log line or readiness reason shows
    for properties in backend_properties(settings):
        redactor.add(credential_values(properties))
    use_redactor(redactor)
    vendor = served_vendor(settings, namespace)
    if vendor is not None:
        vendor.add_listener(lambda vend: metrics.observe_vend(vend.identity, vend.access,
                                                              vend.source))
    if settings.maintenance and maintains(namespace):
        app.state.maintenance = MaintenanceWorker(namespace, settings, metrics, runtime_dir)
    app.lance_routes = operation_routes(operations, dispatcher, settings, metrics, vendor,
                                        getattr(app.state, "maintenance", None), deadlines)
    app.router.routes.append(app.lance_routes)
    app.router.routes.extend(docs_routes())
    app.state.server_paths = tuple(storage_paths(namespace))  # hidden in every error answer
    readiness = Readiness.for_backend(namespace, settings, app.state.server_paths, redactor)
    app.router.routes.extend(health_routes(readiness, metrics))
    _add_middleware(app, settings, metrics, redactor)
    app.state.trimmer = MemoryTrimmer(settings.malloc_trim_interval)
    app.state.renewer = SessionRenewer(namespace, settings, app.state.trimmer.trim)
    app.state.namespace = namespace
    app.state.settings = settings
    app.state.metrics = metrics
    return app


def storage_paths(namespace: LanceNamespace) -> list[str]:
    """Where the backend keeps data, when it says (`MetadataNamespace.storage_root`; several
    catalogs' `storage_paths`)."""
    several = getattr(namespace, "storage_paths", None)
    if callable(several):
        return list(several())
    root = getattr(namespace, "storage_root", None)
    found = root() if callable(root) else None
    return [found] if isinstance(found, str) else []
