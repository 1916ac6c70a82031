"""Request ids, JSON logs without secrets, and Prometheus metrics, as pure ASGI middleware."""

from __future__ import annotations

import contextvars
import itertools
import logging
import os
import random
import re
import time
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar

import orjson
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.batched_log import direct_sink
from backends.core.secrets import CREDENTIAL_WORDS

ACCESS_LOGGER = logging.getLogger("lance_adapter.access")
REQUEST_ID_HEADER = b"x-request-id"
# Keys the endpoints and the auth middleware set in the ASGI scope for the access log.
ERROR_CODE_KEY = "lance_adapter.code"
# The attribute of an endpoint that names its requests (set by `named_endpoint` only).
_OPERATION_ATTRIBUTE = "operation_name"
_Endpoint = TypeVar("_Endpoint")
UNMATCHED = "unmatched"
NO_CODE = "none"
# The `identity` label of a named caller when /metrics may not name identities.
HIDDEN_IDENTITY = "hidden"
METRICS_CONTENT_TYPE = CONTENT_TYPE_LATEST

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "lance_adapter_request_id", default=None
)
_VALID_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,128}")
# Generated ids: a random per-process prefix and a counter (unique, cheaper than uuid4).
_ID_PREFIX = uuid.uuid4().hex[:16]
_id_counter = itertools.count(1)
LATENCY_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)


# ---------------------------------------------------------------- secrets never reach a log

# A key in log text hides its value when its name holds a word of `is_credential` (the rule
# that keeps credentials out of answers), or one that names a secret only in text: the
# Authorization header and Unix's `passwd`.
_TEXT_ONLY_WORDS = ("authorization", "passwd")
_KEY_WORDS = "|".join(re.escape(word) for word in (*CREDENTIAL_WORDS, *_TEXT_ONLY_WORDS))
_SECRET_PATTERNS = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=:-]+"), r"\1 [REDACTED]"),
    (
        re.compile(
            rf"(?i)((?<![\w.-])[\w.-]*?(?:{_KEY_WORDS})[\w.-]*[\"']?\s*[:=]\s*[\"']?)"
            r"(?!\[REDACTED\])[^\s\"',;&}\]]+"
        ),
        r"\1[REDACTED]",
    ),
)
# Cheap first test: the patterns only run on a line holding one of these words.
_TRIGGERS = ("bearer", "basic", *CREDENTIAL_WORDS, *_TEXT_ONLY_WORDS)


class Redactor:
    """What a log line or a readiness reason hides: any value after a key that names a
    credential, and the values the application registered (its tokens, its backend's
    credentials). One per application, built by `create_app` and given to the log
    formatters (`use_redactor`)."""

    def __init__(self) -> None:
        self._values: frozenset[str] = frozenset()

    def add(self, values: Iterable[str]) -> None:
        """Values (tokens, passwords) replaced wherever they appear from now on."""
        self._values = self._values | {value for value in values if len(value) >= 4}

    def __call__(self, text: str) -> str:
        # Patterns first: a known value that is also a word of a key name ("secret") must
        # not break the `key=value` pattern that hides the value.
        lowered = text.lower()
        if any(word in lowered for word in _TRIGGERS):
            for pattern, replacement in _SECRET_PATTERNS:
                text = pattern.sub(replacement, text)
        for value in self._values:
            if value in text:
                text = text.replace(value, "[REDACTED]")
        return text


def use_redactor(redactor: Redactor) -> None:
    """Make every JSON log formatter of the process's logging configuration use `redactor`
    (the configuration is the process's: uvicorn applies it before the application exists)."""
    loggers = [logging.getLogger(), *(logger for logger in logging.root.manager.loggerDict.values()
                                      if isinstance(logger, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if isinstance(handler.formatter, JsonFormatter):
                handler.formatter.redactor = redactor


class JsonFormatter(logging.Formatter):
    """One JSON object per line; the whole line, traceback included, is redacted (by the
    patterns alone until `use_redactor` gives it the application's)."""

    def __init__(self, *arguments: Any, **keywords: Any) -> None:
        super().__init__(*arguments, **keywords)
        self.redactor = Redactor()

    def format(self, record: logging.LogRecord) -> str:
        entry = _entry(record.created, record.levelname.lower(), record.name, record.process,
                       record.getMessage())
        access = getattr(record, "access", None)
        if access:
            entry.update(access)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return self.redactor(orjson.dumps(entry, default=str).decode())

    def access_line(self, access: dict[str, Any]) -> str:
        """The line `format` gives an access record, built without one."""
        entry = _entry(time.time(), "info", ACCESS_LOGGER.name, os.getpid(), "request")
        entry.update(access)
        return self.redactor(orjson.dumps(entry, default=str).decode())


def _entry(created: float, level: str, logger: str, pid: int | None,
           message: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "ts": datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds"),
        "level": level, "logger": logger, "pid": pid, "message": message,
    }
    request_id = REQUEST_ID.get()
    if request_id is not None:
        entry["request_id"] = request_id
    return entry


def log_config(level: str) -> dict[str, Any]:
    """The logging configuration of `lance-adapter serve` (uvicorn applies it in every worker)."""
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "app.observability.JsonFormatter"}},
        "handlers": {
            "stdout": {
                "class": "app.batched_log.BatchedStreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stdout",
            }
        },
        "loggers": {
            "uvicorn": {"handlers": ["stdout"], "level": level, "propagate": False},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            "lance_adapter": {"handlers": ["stdout"], "level": level, "propagate": False},
        },
        "root": {"handlers": ["stdout"], "level": "WARNING"},
    }


# ---------------------------------------------------------------- metrics


class Metrics:
    """The adapter's Prometheus metrics; one registry per application.

    Identity labels name the caller only with `name_identities`: a scrape is unauthenticated.
    With `multiprocess_dir`, the directory the workers of one server share their metrics in
    (`app.workers`), /metrics answers for all of them.
    """

    def __init__(
        self, name_identities: bool = False, multiprocess_dir: str | None = None
    ) -> None:
        self.name_identities = name_identities
        self.multiprocess_dir = multiprocess_dir
        self.multiprocess = multiprocess_dir is not None
        self.registry = CollectorRegistry(auto_describe=True)
        if not self.multiprocess:
            ProcessCollector(registry=self.registry)
            PlatformCollector(registry=self.registry)
        self.requests = Counter(
            "lance_adapter_requests", "HTTP requests by operation, HTTP status and Lance "
            "error code ('none' on success)", ["operation", "status", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "lance_adapter_request_duration_seconds", "Time from request to response, by "
            "operation", ["operation"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.backend = Histogram(
            "lance_adapter_backend_call_duration_seconds", "Time of backend calls (including "
            "the wait for a worker thread; cache hits are not backend calls), by operation and "
            "outcome (ok, error)",
            ["operation", "outcome"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.catalog_requests = Counter(
            "lance_adapter_catalog_requests", "Operations on a server of several catalogs, by "
            "catalog (the id's first part), operation and outcome (ok, error)",
            ["catalog", "operation", "outcome"], registry=self.registry,
        )
        self.in_flight = Gauge(
            "lance_adapter_requests_in_flight", "Requests being served right now",
            registry=self.registry, multiprocess_mode="livesum",
        )
        self.vends = Counter(
            "lance_adapter_credentials_vended", "Credentials handed out by credential vending, "
            "by identity ('none': unnamed; 'hidden': named, unless metrics_identities is on), "
            "access and source (minted by STS, relayed from the catalog, or cached)",
            ["identity", "access", "source"], registry=self.registry,
        )
        self.cache_lookups = Counter(
            "lance_adapter_metadata_cache_lookups", "Metadata cache lookups by operation and "
            "result (hit: answered without the backend; miss)", ["operation", "result"],
            registry=self.registry,
        )
        self.cache_validations = Counter(
            "lance_adapter_metadata_cache_validations", "Cached answers checked against their "
            "source on a hit, by operation and result (fresh, changed)",
            ["operation", "result"], registry=self.registry,
        )
        self.cache_evictions = Counter(
            "lance_adapter_metadata_cache_evictions", "Cached answers dropped, by reason "
            "(changed at the source, expired, capacity, write through this server)",
            ["reason"], registry=self.registry,
        )
        self.maintained_tables = Counter(
            "lance_adapter_maintained_tables", "Tables a maintenance pass looked at, by what it "
            "did (compacted, indexed, cleaned, unchanged, failed)", ["action"],
            registry=self.registry,
        )
        self.maintenance_passes = Counter(
            "lance_adapter_maintenance_passes", "Maintenance passes over every table",
            registry=self.registry,
        )
        self._request_children: dict[tuple[str, int, str], tuple[Any, Any]] = {}
        self._backend_children: dict[tuple[str, bool], Any] = {}
        self._children: dict[tuple[Any, ...], Any] = {}

    def observe_request(self, operation: str, status: int, code: str, seconds: float) -> None:
        key = (operation, status, code)
        children = self._request_children.get(key)
        if children is None:
            children = (
                self.requests.labels(operation, str(status), code),
                self.latency.labels(operation),
            )
            self._request_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def observe_backend(self, operation: str, ok: bool, seconds: float) -> None:
        child = self._backend_children.get((operation, ok))
        if child is None:
            child = self.backend.labels(operation, "ok" if ok else "error")
            self._backend_children[(operation, ok)] = child
        child.observe(seconds)

    def observe_catalog_request(self, catalog: str, operation: str, ok: bool) -> None:
        self.catalog_requests.labels(catalog, operation, "ok" if ok else "error").inc()

    def observe_vend(self, identity: str | None, access: str, source: str) -> None:
        if identity is None:
            identity = NO_CODE
        elif not self.name_identities:
            identity = HIDDEN_IDENTITY
        self.vends.labels(identity, access, source).inc()

    def observe_maintained(self, actions: list[str], failed: bool) -> None:
        """One table of a maintenance pass: what was done to it."""
        for action in ["failed"] if failed else actions or ["unchanged"]:
            self.maintained_tables.labels(action).inc()

    # The metadata cache's events (app.cache.CacheEvents).
    def cache_lookup(self, operation_id: str, hit: bool) -> None:
        self._child(self.cache_lookups, operation_id, "hit" if hit else "miss").inc()

    def cache_validation(self, operation_id: str, fresh: bool) -> None:
        self._child(self.cache_validations, operation_id, "fresh" if fresh else "changed").inc()

    def cache_eviction(self, reason: str, entries: int) -> None:
        self.cache_evictions.labels(reason).inc(entries)

    def _child(self, family: Any, *labels: str) -> Any:
        """`family.labels(*labels)`, remembered: a cache hit must stay cheap."""
        child = self._children.get((family, *labels))
        if child is None:
            child = self._children[(family, *labels)] = family.labels(*labels)
        return child

    def render(self) -> bytes:
        if not self.multiprocess:
            return generate_latest(self.registry)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self.multiprocess_dir)
        return generate_latest(registry)


# ---------------------------------------------------------------- the middleware


def _request_id(headers: Iterable[tuple[bytes, bytes]]) -> str:
    for name, value in headers:
        if name == REQUEST_ID_HEADER:
            if _VALID_REQUEST_ID.fullmatch(value):
                return value.decode("ascii")
            break
    return f"{_ID_PREFIX}{next(_id_counter) & 0xFFFFFFFFFFFFFFFF:016x}"


def operation_of(scope: Scope) -> str:
    return getattr(scope.get("endpoint"), _OPERATION_ATTRIBUTE, None) or UNMATCHED


def named_endpoint(endpoint: _Endpoint, name: str) -> _Endpoint:
    """`endpoint`, whose requests the metrics and the access log name `name`: the one way
    a route (a Lance operation's or a GET route's) gets its name."""
    setattr(endpoint, _OPERATION_ATTRIBUTE, name)
    return endpoint


def named_route(path: str, endpoint: Callable[..., Any], name: str) -> Route:
    """A GET route whose requests the metrics and the access log name `name`."""
    return Route(path, named_endpoint(endpoint, name), methods=["GET"], name=name)


class ObservabilityMiddleware:
    """Serves under `root_path`, tags every request with an id, measures it and logs it.

    With `access_log_sample` below 1, that share of successful requests is logged; a request
    that fails is always logged.
    """

    def __init__(
        self, app: ASGIApp, metrics: Metrics, access_log: bool = True, root_path: str = "",
        access_log_sample: float = 1.0,
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.access_log = access_log
        self.root_path = root_path
        self.access_log_sample = access_log_sample
        # The access line queued for the log's writer directly, where the logging
        # configuration lets it (`direct_sink`): a LogRecord a request costs a worker about
        # a fifth of a cached DescribeTable's CPU.
        sink = direct_sink(ACCESS_LOGGER)
        self._sink = sink if sink is not None and isinstance(sink.formatter, JsonFormatter) \
            else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.root_path:
            scope["root_path"] = scope.get("root_path", "") + self.root_path
        request_id = _request_id(scope["headers"])
        id_header = (REQUEST_ID_HEADER, request_id.encode("ascii"))
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), id_header]
            await send(message)

        token = REQUEST_ID.set(request_id)
        start = time.perf_counter()
        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - start
            self.metrics.in_flight.dec()
            self._finish(scope, status, seconds)
            REQUEST_ID.reset(token)

    def _finish(self, scope: Scope, status: int, seconds: float) -> None:
        operation = operation_of(scope)
        code = scope.get(ERROR_CODE_KEY)
        self.metrics.observe_request(operation, status, NO_CODE if code is None else str(code),
                                     seconds)
        if self._logs(status) and ACCESS_LOGGER.isEnabledFor(logging.INFO):
            client = scope.get("client")
            access = {
                "method": scope["method"],
                "path": scope["path"],
                "operation": operation,
                "status": status,
                "code": code,
                "duration_ms": round(seconds * 1000, 3),
                "client": client[0] if client else None,
            }
            if self._sink is not None:
                self._sink.queue_line(self._sink.formatter.access_line(access))  # type: ignore[union-attr]
            else:
                ACCESS_LOGGER.info("request", extra={"access": access})

    def _logs(self, status: int) -> bool:
        if not self.access_log:
            return False
        return status >= 400 or self.access_log_sample >= 1 or (
            random.random() < self.access_log_sample
        )
