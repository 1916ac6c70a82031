"""A real adapter (uvicorn on 127.0.0.1, a free port) for the tests; the fixtures `dir_server`
(the adapter on a directory backend in the test's `data_root`) and `log_lines` (what the adapter
logs); `metric` reads its Prometheus exposition."""

from __future__ import annotations

import contextlib
import io
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from app.config import lance_session, served_backend
from app.observability import JsonFormatter
from app.server import create_app
from app.settings import Settings


@contextlib.contextmanager
def serving_identities(
    base: Path, tokens: dict[str, str], access: dict[str, str]
) -> Iterator[str]:
    """A `dir` server on `base`/root with token auth: each identity of `tokens` (name ->
    token) has the grants `access` gives it, a bare token none; yields the base URL."""
    tokens_file = base / "tokens"
    tokens_file.write_text("".join(f"{name} {token}\n" for name, token in tokens.items()))
    with running_server("dir", {"root": str(base / "root")}, auth_mode="token",
                        auth_tokens_file=str(tokens_file), access=access,
                        access_default="none") as url:
        yield url


@contextlib.contextmanager
def running_server(
    impl: str = "dir", properties: dict[str, str] | None = None, lifespan: str = "off",
    **settings: object,
) -> Iterator[str]:
    """Serve backend `impl` with `properties`, its tables opened with a Lance session as
    `lance-adapter serve` opens them; yields the base URL, stops on exit. With
    `lifespan="on"` the application's background work (maintenance, trimming) runs too."""
    server_settings = Settings(impl=impl, properties=dict(properties or {}), **settings)
    namespace = served_backend(server_settings, lance_session(server_settings))
    app = create_app(namespace, server_settings)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the adapter did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        listener.close()


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    root = tmp_path / "lance-data"
    root.mkdir()
    return root


@pytest.fixture
def dir_server(data_root: Path) -> Iterator[str]:
    """The adapter on the embedded directory backend; yields its base URL."""
    with running_server("dir", {"root": str(data_root)}) as url:
        yield url


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus exposition `text` (0 when absent)."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        sample, _, value = line.rpartition(" ")
        if sample.partition("{")[0] != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', sample))
        if all(found.get(key) == wanted for key, wanted in labels.items()):
            return float(value)
    return 0.0


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """What the adapter logs, formatted as `lance-adapter serve` formats it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("lance_adapter")
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
