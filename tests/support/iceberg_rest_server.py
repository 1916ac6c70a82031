"""Apache Iceberg's REST reference server (`org.apache.iceberg.rest.RESTCatalogServer`, the code
of the `apache/iceberg-rest-fixture` image) for the tests.

- `running_iceberg_rest_server`: the real server as a Java process on a port `free_port` keeps
  for it, reached at 127.0.0.1 (its Jetty listens on every interface: the server has no host
  setting), its catalog a `JdbcCatalog` on a SQLite file and its warehouse a local folder,
  configured by the server's `CATALOG_*` environment variables; ready once `/v1/config` answers.
- `iceberg_rest_server`: the session fixture, one server for every module of a test run.
- `prefix_router`: the server behind a warehouse prefix. The reference server serves one
  catalog at `/v1/...` and announces no prefix; lance-namespace-impls always puts the warehouse
  (or `defaults.prefix`) in its paths, so it reaches the real server only through this router,
  which announces the prefix and forwards `/v1/<prefix>/...` to `/v1/...` unchanged.

The jars come from Maven Central by `tests/java/iceberg-rest/pom.xml` (`tests/support/maven.py`).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from tests.support.common import free_port, stop_process
from tests.support.hive import java_executable
from tests.support.maven import maven_classpath
from tests.support.rest_catalog_stand_in import serve

SERVER_MAIN = "org.apache.iceberg.rest.RESTCatalogServer"
JAVA_FLAGS = ["-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
START_TIMEOUT_SECONDS = 120.0
STOP_TIMEOUT_SECONDS = 20.0
POLL_SECONDS = 0.1


@dataclass(frozen=True)
class IcebergRestServer:
    """A running reference server: its URL, where its catalog keeps tables, and its log."""

    url: str
    warehouse: Path  # the catalog's default table locations: <warehouse>/<namespace>/<table>
    database: Path  # the SQLite file of its JdbcCatalog
    log: Path
    started_in_seconds: float


def server_environment(port: int, warehouse: Path, database: Path) -> dict[str, str]:
    """The `CATALOG_*` variables the server reads (`CATALOG_A_B__C` is the property `a.b-c`),
    none but these: the caller's own `CATALOG_*` variables are left out."""
    inherited = {key: value for key, value in os.environ.items() if not key.startswith("CATALOG_")}
    return {
        **inherited,
        # SQLite waits for its lock instead of failing when two requests write together.
        "CATALOG_URI": f"jdbc:sqlite:{database}?busy_timeout=30000",
        "CATALOG_WAREHOUSE": warehouse.as_uri(),
        "CATALOG_REST_PORT": str(port),
    }


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/v1/config", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _wait_until_ready(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not _ready(url):
        if process.poll() is not None:
            raise RuntimeError(f"the Iceberg REST server exited; see {log}:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Iceberg REST server did not answer in time; see {log}")
        time.sleep(POLL_SECONDS)  # polling the port: the server signals readiness no other way


def _tail(log: Path, size: int = 4000) -> str:
    return log.read_text(errors="replace")[-size:] if log.exists() else ""


@contextmanager
def running_iceberg_rest_server(workdir: Path) -> Iterator[IcebergRestServer]:
    """Start the reference server with its state and log under `workdir`; stop it on exit."""
    classpath = maven_classpath("iceberg-rest")
    warehouse, database, log = workdir / "warehouse", workdir / "catalog.db", workdir / "server.log"
    warehouse.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [java_executable(), *JAVA_FLAGS, "-cp", classpath, SERVER_MAIN]
    started = time.monotonic()
    with open(log, "wb") as output:
        process = subprocess.Popen(
            command, cwd=workdir, env=server_environment(port, warehouse, database),
            stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    try:
        _wait_until_ready(process, url, log)
        elapsed = time.monotonic() - started
        yield IcebergRestServer(url, warehouse, database, log, elapsed)
    finally:
        stop_process(process, STOP_TIMEOUT_SECONDS)


class _SharedServer:
    """The one server of a test process, started by its first user and stopped when the last
    one leaves: the session fixture and the contract suite's session-long `iceberg` backend."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.stack: ExitStack | None = None
        self.server: IcebergRestServer | None = None

    @contextmanager
    def use(self, workdir: Path) -> Iterator[IcebergRestServer]:
        with self.lock:
            if self.server is None:
                stack = ExitStack()
                self.server = stack.enter_context(running_iceberg_rest_server(workdir))
                self.stack = stack
            self.users += 1
            server = self.server
        try:
            yield server
        finally:
            self._leave()

    def _leave(self) -> None:
        with self.lock:
            self.users -= 1
            if self.users == 0 and self.stack is not None:
                self.stack.close()
                self.stack, self.server = None, None


_SHARED = _SharedServer()


def shared_iceberg_rest_server(workdir: Path) -> AbstractContextManager[IcebergRestServer]:
    """The test process's one reference server (started with its state under `workdir` when
    none runs yet) for the duration of the `with`."""
    return _SHARED.use(workdir)


@pytest.fixture(scope="session")
def iceberg_rest_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IcebergRestServer]:
    """The reference server, started once for the whole test run and shared by every module
    (and the contract suite); tests keep apart by fresh namespace names."""
    with shared_iceberg_rest_server(tmp_path_factory.mktemp("iceberg-rest-server")) as server:
        yield server


# -- the server behind a warehouse prefix ----------------------------------------------------

HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "content-encoding"}


@dataclass
class PrefixRouter:
    """The reference server under `/v1/<prefix>/...`. `prefix_style` says where `/v1/config`
    announces the prefix: `defaults` (where lance-namespace-impls reads it) or `overrides`
    (where the spec lets it win)."""

    url: str
    prefix: str
    prefix_style: str = "defaults"

    @property
    def state(self) -> PrefixRouter:
        """The knob by the name the stand-in gives it (`stand_in.state.prefix_style`)."""
        return self


def _announced(router: PrefixRouter, config: dict[str, Any]) -> dict[str, Any]:
    kept = "overrides" if router.prefix_style == "defaults" else "defaults"
    return {**config, router.prefix_style: {**config.get(router.prefix_style, {}),
                                            "prefix": router.prefix},
            kept: config.get(kept, {})}


def _router_app(target: str, router: PrefixRouter) -> FastAPI:
    app = FastAPI()

    @app.api_route("/v1/{path:path}", methods=["GET", "HEAD", "POST", "DELETE"])
    async def forward(path: str, request: Request) -> Response:
        async with httpx.AsyncClient(base_url=target, timeout=60) as client:
            return await _forwarded(client, router, path, request)

    return app


async def _forwarded(
    client: httpx.AsyncClient, router: PrefixRouter, path: str, request: Request
) -> Response:
    """The server's answer to `request`; `/v1/config`'s with the prefix announced."""
    if path == "config":
        answer = await client.get("/v1/config", params=request.query_params)
        return JSONResponse(_announced(router, answer.json()), answer.status_code)
    # The path as sent (`%1F` stays encoded), less the prefix.
    raw = request.scope["raw_path"].decode("ascii").removeprefix("/v1/")
    head, _, rest = raw.partition("/")
    if head != router.prefix:  # as a catalog of several warehouses answers for an unknown one
        message = f"no warehouse for prefix {head}"
        error = {"message": message, "type": "NoSuchWarehouseException", "code": 404}
        return JSONResponse({"error": error}, 404)
    upstream = f"/v1/{rest}" + (f"?{request.url.query}" if request.url.query else "")
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
    answer = await client.request(request.method, upstream, content=await request.body(),
                                  headers=headers)
    kept = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_HEADERS}
    return Response(answer.content, answer.status_code, kept)


@contextmanager
def prefix_router(server: IcebergRestServer, prefix: str) -> Iterator[PrefixRouter]:
    """`server` under `/v1/<prefix>/...` on 127.0.0.1, every answer but `/v1/config`'s its own;
    any other prefix is an unknown warehouse (404)."""
    router = PrefixRouter("", prefix)
    with serve(_router_app(server.url, router)) as url:
        router.url = url
        yield router
