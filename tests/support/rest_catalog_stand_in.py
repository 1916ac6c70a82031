"""Running a catalog stand-in app over loopback HTTP, with auth checks and injected faults: the
fault injectors of the REST catalog tests.

The REST catalog stand-ins (Unity, Iceberg, and the bare one of tests/test_rest_catalog_client.py)
are FastAPI apps served by uvicorn in a thread on 127.0.0.1 with a free port. `StandInControl` is
the knob tests turn: required bearer tokens, OAuth2 tokens it issued (with expiry), failures and
stalls for the next matching requests, and a log of what the backend actually sent. They are kept
for what the real catalog servers cannot be made to do on demand: outages (5xx, 429 with
`Retry-After`), malformed and slow answers, token expiry and revocation, and a record of the
requests sent. Ordinary behaviour is tested on the real servers (for Iceberg: Apache Iceberg's
REST reference server, `tests/support/iceberg_rest_server.py`).
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

ErrorBody = Callable[[int, str, str], dict[str, Any]]


@dataclass(frozen=True)
class Grant:
    """Temporary S3 credentials a catalog stand-in vends for a table's location."""

    access_key_id: str
    secret_access_key: str
    session_token: str
    expires_at_millis: int


# What a stand-in that vends calls: (table location, write access?) -> the credentials.
Grants = Callable[[str, bool], Grant]


@dataclass
class Fault:
    """Answer the next `remaining` requests matching method/path with `status`, or stall them."""

    remaining: int
    status: int = 503
    stall_seconds: float = 0.0
    method: str | None = None
    path_contains: str = ""

    def matches(self, method: str, path: str) -> bool:
        method_ok = self.method is None or self.method == method
        return self.remaining > 0 and method_ok and self.path_contains in path


@dataclass
class LoggedRequest:
    method: str
    path: str
    raw_path: str
    query: dict[str, str]
    authorization: str | None


@dataclass
class StandInControl:
    """Shared, thread-safe state a test uses to steer a stand-in server."""

    required_token: str | None = None
    oauth_enabled: bool = False
    oauth_clients: dict[str, str] = field(default_factory=dict)
    token_lifetime_seconds: int = 3600
    issued_tokens: dict[str, float] = field(default_factory=dict)
    token_requests: int = 0
    faults: list[Fault] = field(default_factory=list)
    log: list[LoggedRequest] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.required_token = None
            self.oauth_enabled = False
            self.oauth_clients.clear()
            self.token_lifetime_seconds = 3600
            self.issued_tokens.clear()
            self.token_requests = 0
            self.faults.clear()
            self.log.clear()
            self.max_in_flight = 0

    def fail_next(self, count: int, status: int, method: str | None = None, path: str = "") -> None:
        with self.lock:
            self.faults.append(Fault(count, status=status, method=method, path_contains=path))

    def stall_next(self, seconds: float, method: str | None = None, path: str = "") -> None:
        with self.lock:
            self.faults.append(Fault(1, stall_seconds=seconds, method=method, path_contains=path))

    def issue_token(self, client_id: str, client_secret: str) -> str | None:
        with self.lock:
            self.token_requests += 1
            if self.oauth_clients.get(client_id) != client_secret:
                return None
            token = secrets.token_hex(16)
            self.issued_tokens[token] = time.monotonic() + self.token_lifetime_seconds
            return token

    def requests_to(self, path_contains: str, method: str | None = None) -> list[LoggedRequest]:
        with self.lock:
            return [
                entry
                for entry in self.log
                if path_contains in entry.raw_path and method in (None, entry.method)
            ]

    def authorized(self, header: str | None) -> bool:
        """Whether a request with this Authorization header passes (call with `lock` held)."""
        if self.required_token is None and not self.oauth_enabled:
            return True
        if not header or not header.startswith("Bearer "):
            return False
        token = header.removeprefix("Bearer ")
        if token == self.required_token:
            return True
        expiry = self.issued_tokens.get(token)
        return expiry is not None and time.monotonic() < expiry

    def take_fault(self, method: str, path: str) -> Fault | None:
        """Consume the first fault matching the request (call with `lock` held)."""
        for fault in self.faults:
            if fault.matches(method, path):
                fault.remaining -= 1
                return fault
        return None


def install_control(
    app: FastAPI, control: StandInControl, error_body: ErrorBody, open_paths: tuple[str, ...]
) -> None:
    """Log every request, then apply injected faults and the auth check before the routes."""

    @app.middleware("http")
    async def steer(request: Request, call_next: Callable[[Request], Any]) -> Response:
        method, path = request.method, request.url.path
        raw_path = request.scope.get("raw_path", b"").decode("latin-1") or path
        authorization = request.headers.get("authorization")
        with control.lock:
            control.log.append(
                LoggedRequest(method, path, raw_path, dict(request.query_params), authorization)
            )
            fault = control.take_fault(method, path)
            authorized = path in open_paths or control.authorized(authorization)
            control.in_flight += 1
            control.max_in_flight = max(control.max_in_flight, control.in_flight)
        try:
            if fault is not None and fault.stall_seconds:
                await asyncio.sleep(fault.stall_seconds)
            elif fault is not None:
                body = error_body(fault.status, "InjectedFault", f"injected HTTP {fault.status}")
                return JSONResponse(body, status_code=fault.status)
            if not authorized:
                body = error_body(401, "NotAuthorizedException", "missing or invalid token")
                return JSONResponse(body, status_code=401)
            return await call_next(request)
        finally:
            with control.lock:
                control.in_flight -= 1


def install_token_route(app: FastAPI, control: StandInControl, path: str) -> None:
    """An OAuth2 token endpoint at `path` (client-credentials grant) issuing `control`'s tokens."""

    @app.post(path)
    async def token(request: Request) -> JSONResponse:
        form = {key: values[0] for key, values in parse_qs((await request.body()).decode()).items()}
        grant_type = form.get("grant_type", "")
        client_id, client_secret = form.get("client_id", ""), form.get("client_secret", "")
        issued = control.issue_token(client_id, client_secret)
        if grant_type != "client_credentials" or issued is None:
            body = {"error": "invalid_client", "error_description": "bad client credentials"}
            return JSONResponse(body, status_code=401)
        return JSONResponse(
            {
                "access_token": issued,
                "token_type": "bearer",
                "expires_in": control.token_lifetime_seconds,
                "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            }
        )


@contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 in a background thread and yield its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not (server.started and server.servers):
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("stand-in server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
