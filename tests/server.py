"""A real adapter (uvicorn on 127.0.0.1, a free port) for the tests."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import uvicorn

from app.config import Settings
from app.server import create_app
from backends import load_namespace


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def running_server(
    impl: str = "dir", properties: dict[str, str] | None = None, **settings: object
) -> Iterator[str]:
    """Serve backend `impl` with `properties`; yields the base URL, stops on exit."""
    server_settings = Settings(impl=impl, properties=dict(properties or {}), **settings)
    app = create_app(load_namespace(impl, server_settings.properties), server_settings)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
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
