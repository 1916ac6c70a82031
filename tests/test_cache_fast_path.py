"""The lean request path: Lance routes past FastAPI's middleware, other paths through it, and
a sampled access log that still records every failure."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx

from app.browser_guard import BrowserGuard
from app.server import LanceFirst
from tests.support.adapter import running_server


def access_lines(stream: io.StringIO) -> list[dict]:
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    return [line for line in lines if line["logger"] == "lance_adapter.access"]


def test_a_sampled_access_log_keeps_every_failure(log_lines: io.StringIO, tmp_path: Path) -> None:
    with running_server("dir", {"root": str(tmp_path)}, access_log_sample=0.0) as url:
        for _ in range(5):
            assert httpx.get(f"{url}/v1/namespace/$/list").status_code == 200
        missing = httpx.post(f"{url}/v1/table/ns$gone/describe", json={})
    assert missing.status_code == 404
    assert [(line["operation"], line["status"]) for line in access_lines(log_lines)] == [
        ("DescribeTable", 404)
    ]


def test_lance_routes_skip_fastapi_and_other_paths_keep_it(tmp_path: Path) -> None:
    with running_server("dir", {"root": str(tmp_path)}) as url:
        listed = httpx.get(f"{url}/v1/namespace/$/list")
        health = httpx.get(f"{url}/healthz")
        unknown = httpx.get(f"{url}/v1/nothing/here")
        wrong_method = httpx.delete(f"{url}/v1/namespace/$/list")
    assert (listed.status_code, health.status_code) == (200, 200)
    # No route is an unsupported operation (code 0, HTTP 406), as FastAPI's handlers answer;
    # a route asked with another method is 405 naming the methods it answers.
    assert (unknown.status_code, unknown.json()["code"]) == (406, 0)
    assert (wrong_method.status_code, wrong_method.json()["code"]) == (405, 0)
    assert wrong_method.headers["allow"] == "GET, HEAD"


def test_the_application_puts_the_route_table_inside_its_own_middleware(tmp_path: Path) -> None:
    from app.config import Settings
    from app.server import create_app
    from backends import load_namespace

    settings = Settings(properties={"root": str(tmp_path)})
    app = create_app(load_namespace("dir", settings.properties), settings)
    stack = app.build_middleware_stack()
    layers = []
    while stack is not None:
        layers.append(type(stack).__name__)
        stack = getattr(stack, "app", None)
    # The application's own middleware (ids/metrics/logs, then, with auth off, the browser
    # guard), then straight to the route table.
    assert layers[:3] == ["ObservabilityMiddleware", BrowserGuard.__name__, LanceFirst.__name__]
    assert "ServerErrorMiddleware" not in layers  # LanceFirst ends the chain of `.app`
