"""Behind a gateway, through the real `lance-adapter serve` CLI in a subprocess: path prefix,
trusted X-Forwarded-*, body limit, JSON logs, several workers and graceful shutdown."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.adapter import metric
from tests.support.cli import CLI, Adapter, start_adapter
from tests.support.common import free_port
from tests.support.plugin_stand_ins import SLOW_SECONDS

TOKEN = "gateway-token-91d2"
AUTH = {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Adapter]:
    tmp = tmp_path_factory.mktemp("gateway")
    tokens = tmp / "tokens"
    tokens.write_text(f"{TOKEN}\n")
    adapter = start_adapter(
        tmp, "--root-path", "/lance", "--auth-mode", "token", "--auth-tokens-file", str(tokens),
        LANCE_ADAPTER_TRUSTED_PROXIES="127.0.0.1",
        LANCE_ADAPTER_MAX_BODY_BYTES="2048",
        LANCE_ADAPTER_PROP_NAME="gateway",
    )
    yield adapter
    assert adapter.stopped_cleanly()


def test_the_service_answers_under_its_path_prefix(gateway: Adapter) -> None:
    listed = httpx.get(f"{gateway.url}/lance/v1/namespace/$/table/list", headers=AUTH)
    described = httpx.post(f"{gateway.url}/lance/DescribeTable", json={"id": ["a", "t"]},
                           headers=AUTH)
    health = httpx.get(f"{gateway.url}/lance/healthz")
    refused = httpx.get(f"{gateway.url}/lance/v1/namespace/$/table/list")
    assert (listed.status_code, listed.json()["tables"]) == (200, ["t"])
    assert (described.status_code, described.json()["location"]) == (200, "memory://a/t")
    assert health.status_code == 200
    assert refused.status_code == 401
    assert refused.json()["instance"] == "/lance/v1/namespace/$/table/list"


def test_a_body_over_the_limit_is_refused_with_413_and_code_13(gateway: Adapter) -> None:
    big = {"id": ["a", "t"], "context": {"pad": "x" * 4096}}
    declared = httpx.post(f"{gateway.url}/lance/v1/table/a$t/describe", json=big, headers=AUTH)

    def chunks() -> Iterator[bytes]:
        yield b'{"context": {"pad": "'
        for _ in range(8):
            yield b"x" * 512
        yield b'"}}'

    streamed = httpx.post(f"{gateway.url}/lance/v1/table/a$t/describe", content=chunks(),
                          headers=AUTH)
    small = httpx.post(f"{gateway.url}/lance/v1/table/a$t/describe", json={}, headers=AUTH)
    for answer in (declared, streamed):
        assert answer.status_code == 413
        assert answer.json()["code"] == 13
    assert small.status_code == 200


def test_forwarded_headers_count_only_from_a_trusted_proxy(gateway: Adapter) -> None:
    forwarded = {**AUTH, "x-forwarded-for": "203.0.113.7", "x-request-id": "via-proxy"}
    httpx.get(f"{gateway.url}/lance/v1/namespace/$/list", headers=forwarded)
    spoofing = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"))
    with spoofing:
        spoofing.get(f"{gateway.url}/lance/v1/namespace/$/list",
                     headers={**forwarded, "x-request-id": "spoofed"})
    clients = {line.get("request_id"): line.get("client") for line in wait_for_access_lines(
        gateway, {"via-proxy", "spoofed"})}
    assert clients == {"via-proxy": "203.0.113.7", "spoofed": "127.0.0.2"}


def wait_for_access_lines(adapter: Adapter, request_ids: set[str]) -> list[dict]:
    deadline = time.monotonic() + 10
    while True:
        lines = [line for line in adapter.log_lines()
                 if line["logger"] == "lance_adapter.access"
                 and line.get("request_id") in request_ids]
        if {line["request_id"] for line in lines} == request_ids or time.monotonic() > deadline:
            # each line is written when its answer has gone, so two requests may log out of order
            return sorted(lines, key=lambda line: line["request_id"])
        time.sleep(0.05)


def test_every_log_line_is_json_and_none_holds_the_token(gateway: Adapter) -> None:
    headers = {"x-api-key": TOKEN, "x-request-id": "logged-1"}
    httpx.get(f"{gateway.url}/lance/v1/namespace/$/list?page_token={TOKEN}", headers=headers)
    httpx.get(f"{gateway.url}/lance/v1/namespace/$/list", headers={"x-request-id": "logged-2"})
    lines = wait_for_access_lines(gateway, {"logged-1", "logged-2"})
    assert [(line["status"], line["code"], line["operation"]) for line in lines] == [
        (200, None, "ListNamespaces"), (401, 16, "ListNamespaces")
    ]
    assert lines[0]["path"] == "/lance/v1/namespace/$/list"
    text = gateway.log.read_text()
    assert TOKEN not in text
    assert any(line["message"].startswith("Uvicorn running") for line in gateway.log_lines())


def test_graceful_shutdown_lets_an_in_flight_request_finish(tmp_path: Path) -> None:
    adapter = start_adapter(tmp_path, "--prop", "name=graceful")
    answers: list[httpx.Response] = []
    slow = threading.Thread(target=lambda: answers.append(
        httpx.post(f"{adapter.url}/v1/table/slow/describe", timeout=30)))
    started = time.monotonic()
    slow.start()
    deadline = time.monotonic() + 30
    while metric(httpx.get(f"{adapter.url}/metrics").text,
                 "lance_adapter_requests_in_flight") < 2:  # the slow request, and this one
        assert time.monotonic() < deadline, "the slow request never reached the backend"
        time.sleep(0.05)
    adapter.process.send_signal(signal.SIGTERM)
    slow.join(timeout=30)
    assert adapter.stopped_cleanly()
    assert [answer.status_code for answer in answers] == [200]
    assert answers[0].json()["location"] == "memory://slow"
    assert time.monotonic() - started >= SLOW_SECONDS
    with pytest.raises(httpx.ConnectError, match="Connection refused"):
        httpx.get(f"{adapter.url}/healthz", timeout=2)


def test_several_workers_serve_and_share_their_metrics(tmp_path: Path) -> None:
    adapter = start_adapter(tmp_path, "--workers", "2", "--prop", "name=workers")
    try:
        deadline = time.monotonic() + 60
        while adapter.log.read_text().count("Application startup complete") < 2:
            assert time.monotonic() < deadline, "the second worker did not start"
            time.sleep(0.1)
        sent = 0
        while len(serving_pids(adapter)) < 2 and sent < 200:
            with httpx.Client() as client:  # a new connection each time
                assert client.get(f"{adapter.url}/v1/namespace/$/list").status_code == 200
            sent += 1
        text = httpx.get(f"{adapter.url}/metrics").text
    finally:
        assert adapter.stopped_cleanly()
    assert len(serving_pids(adapter)) == 2
    assert metric(text, "lance_adapter_requests_total", operation="ListNamespaces",
                  status="200", code="none") == sent


def serving_pids(adapter: Adapter) -> set[int]:
    return {line["pid"] for line in adapter.log_lines()
            if line["logger"] == "lance_adapter.access" and line["operation"] == "ListNamespaces"}


def test_the_cli_refuses_token_auth_without_tokens_before_listening(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANCE_ADAPTER_")}
    result = subprocess.run(
        [CLI, "serve", "--auth-mode", "token", "--port", str(free_port())],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "lance-adapter: auth_mode 'token' needs auth_tokens or auth_tokens_file"
    )
