"""Dispatch details: identity and context headers, unexpected errors, a free event loop."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.adapter import running_server
from tests.support.plugin_stand_ins import RecordingNamespace

PROBE = "tests.support.plugin_stand_ins.RecordingNamespace"
PROBE_DELAY_SECONDS = 30


@pytest.fixture
def probe_url() -> Iterator[str]:
    # A `slow` call lasts until the test releases it, or PROBE_DELAY_SECONDS at most.
    with running_server(PROBE, {"name": "probe", "delay": str(PROBE_DELAY_SECONDS)}) as url:
        yield url


def test_credentials_become_identity_and_headers_become_context(probe_url: str) -> None:
    response = httpx.post(
        f"{probe_url}/v1/namespace/plain/describe",
        json={},
        headers={"x-api-key": "key-1", "Authorization": "Bearer tok-9", "x-tenant": "blue"},
    )
    assert response.status_code == 200
    request = RecordingNamespace.instances["probe"].received[-1]
    assert (request.identity.api_key, request.identity.auth_token) == ("key-1", "tok-9")
    assert request.context["header.x-tenant"] == "blue"
    assert not any("tok-9" in value for value in request.context.values())


def test_header_context_of_a_response_becomes_response_headers(probe_url: str) -> None:
    response = httpx.post(f"{probe_url}/v1/namespace/ctx/describe", json={})
    assert response.headers["x-backend-trace"] == "t-42"
    assert response.json() == {"properties": {"a": "b"}, "context": {"note": "kept"}}


def test_an_unexpected_error_is_500_code_18_without_a_trace(
    probe_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    response = httpx.post(f"{probe_url}/v1/namespace/boom/describe", json={})
    assert response.status_code == 500
    body = response.json()
    assert body["code"] == 18
    assert "Traceback" not in response.text and "/etc/passwd" not in response.text
    assert any("secret internal detail" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_a_typed_backend_error_keeps_its_code(probe_url: str) -> None:
    response = httpx.post(f"{probe_url}/v1/namespace/missing/describe", json={})
    assert (response.status_code, response.json()["code"]) == (404, 1)


def test_an_unsupported_operation_is_406_code_0(probe_url: str) -> None:
    response = httpx.post(f"{probe_url}/v1/namespace/x/create", json={})
    assert (response.status_code, response.json()["code"]) == (406, 0)
    unknown = httpx.post(f"{probe_url}/v1/nothing/here", json={})
    assert (unknown.status_code, unknown.json()["code"]) == (406, 0)


def test_a_slow_backend_call_does_not_block_other_requests(probe_url: str) -> None:
    slow_done = threading.Event()

    def slow_request() -> None:
        httpx.post(f"{probe_url}/v1/namespace/slow/describe", json={}, timeout=60)
        slow_done.set()

    backend = RecordingNamespace.instances["probe"]
    worker = threading.Thread(target=slow_request)
    worker.start()
    assert backend.slow_started.wait(10)
    started = time.monotonic()
    fast = httpx.get(f"{probe_url}/v1/namespace/$/list")
    assert fast.json()["namespaces"] == ["fast"]
    # The slow call ends only when released (below) or after PROBE_DELAY_SECONDS: a blocked
    # event loop would have answered the fast request after it.
    assert not slow_done.is_set(), "the fast request was answered after the slow one"
    assert time.monotonic() - started < PROBE_DELAY_SECONDS / 2
    backend.release_slow.set()
    worker.join()
    assert slow_done.is_set()


def test_the_spec_is_served(probe_url: str) -> None:
    response = httpx.get(f"{probe_url}/rest.yaml")
    assert response.status_code == 200
    assert "operationId: DescribeTable" in response.text


def test_a_read_whose_backend_times_out_itself_is_17_naming_it(probe_url: str) -> None:
    response = httpx.post(f"{probe_url}/v1/namespace/timeout/describe", json={}, timeout=30)
    assert (response.status_code, response.json()["code"]) == (503, 17)
    assert "timed out answering DescribeNamespace" in response.json()["error"]
    assert "did not answer" not in response.json()["error"]  # not the server's own limit


def test_a_read_that_outlasts_the_backend_timeout_is_17_at_once() -> None:
    delay = 10
    with running_server(PROBE, {"name": "timeout", "delay": str(delay)},
                        backend_timeout=0.5) as url:
        started = time.monotonic()
        response = httpx.post(f"{url}/v1/namespace/slow/describe", json={}, timeout=30)
        elapsed = time.monotonic() - started
        assert (response.status_code, response.json()["code"]) == (503, 17)
        assert elapsed < delay / 2  # answered long before the backend call ends
        assert httpx.get(f"{url}/v1/namespace/$/list").status_code == 200
        RecordingNamespace.instances["timeout"].release_slow.set()
