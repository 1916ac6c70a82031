"""Health, readiness, metrics, request ids and JSON logs on a real adapter."""

from __future__ import annotations

import io
import json
import logging
import re
import threading
import time
from pathlib import Path

import httpx
import pytest

from app.observability import Redactor
from backends.core.secrets import CREDENTIAL_WORDS, credential_values
from tests.support.adapter import metric, running_server
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.plugin_stand_ins import LEAKY_SECRET, SLOW_SECONDS, RecordingNamespace

IMPL = "tests.support.plugin_stand_ins.RecordingNamespace"
TOKEN = "caller-token-5b1e9c"


def test_healthz_and_readyz_answer_on_a_working_directory_backend(tmp_path: Path) -> None:
    with running_server("dir", {"root": str(tmp_path)}) as url:
        health = httpx.get(f"{url}/healthz")
        ready = httpx.get(f"{url}/readyz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
    assert health.headers["cache-control"] == "no-store"


def test_readyz_is_503_while_the_backend_fails_and_recovers_with_it() -> None:
    with running_server(IMPL, {"name": "ready-down"}) as url:
        backend = RecordingNamespace.instances["ready-down"]
        assert httpx.get(f"{url}/readyz").status_code == 200
        backend.mode = "down"
        down = httpx.get(f"{url}/readyz")
        alive = httpx.get(f"{url}/healthz")
        backend.mode = "ok"
        again = httpx.get(f"{url}/readyz")
    assert down.status_code == 503
    assert down.json()["status"] == "unavailable"
    assert down.json()["check"] == "backend"
    assert down.json()["reason"].startswith("code 17: ")
    assert alive.status_code == 200
    assert again.status_code == 200


def test_readyz_gives_up_on_a_hanging_backend_within_the_readiness_timeout() -> None:
    with running_server(IMPL, {"name": "ready-hang"}, readiness_timeout=0.5) as url:
        RecordingNamespace.instances["ready-hang"].mode = "hang"
        start = time.monotonic()
        answer = httpx.get(f"{url}/readyz", timeout=10)
        elapsed = time.monotonic() - start
        RecordingNamespace.instances["ready-hang"].mode = "ok"
    assert answer.status_code == 503
    assert answer.json() == {"status": "unavailable", "check": "backend",
                             "reason": "did not answer within 0.5s"}
    assert elapsed < 4.0  # gave up long before the backend's 5 s hang ends


def test_metrics_count_requests_by_operation_and_code_and_time_them(tmp_path: Path) -> None:
    with running_server("dir", {"root": str(tmp_path)}) as url:
        for _ in range(3):
            assert httpx.get(f"{url}/v1/namespace/$/list").status_code == 200
        assert httpx.post(f"{url}/v1/table/missing/describe").status_code == 404
        assert httpx.post(f"{url}/DescribeTable", json={"id": ["missing"]}).status_code == 404
        assert httpx.get(f"{url}/no/such/route").status_code == 406
        answer = httpx.get(f"{url}/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    text = answer.text
    assert metric(text, "lance_adapter_requests_total", operation="ListNamespaces",
                  status="200", code="none") == 3
    assert metric(text, "lance_adapter_requests_total", operation="DescribeTable",
                  status="404", code="4") == 1
    assert metric(text, "lance_adapter_requests_total", operation="DescribeTable-by-id",
                  status="404", code="4") == 1
    assert metric(text, "lance_adapter_requests_total", operation="unmatched",
                  status="406", code="0") == 1
    assert metric(text, "lance_adapter_request_duration_seconds_count",
                  operation="ListNamespaces") == 3
    assert metric(text, "lance_adapter_request_duration_seconds_bucket",
                  operation="ListNamespaces", le="+Inf") == 3
    assert metric(text, "lance_adapter_backend_call_duration_seconds_count",
                  operation="DescribeTable", outcome="error") == 2
    # Each request is a backend call or a cache hit, never both.
    backend_calls = metric(text, "lance_adapter_backend_call_duration_seconds_count",
                           operation="ListNamespaces", outcome="ok")
    hits = metric(text, "lance_adapter_metadata_cache_lookups_total",
                  operation="ListNamespaces", result="hit")
    assert backend_calls >= 1 and backend_calls + hits == 3
    # The scrape itself is in flight while the metrics are rendered.
    assert metric(text, "lance_adapter_requests_in_flight") == 1
    assert "process_cpu_seconds_total" in text


def test_in_flight_requests_are_counted_while_they_run() -> None:
    with running_server(IMPL, {"name": "in-flight"}) as url:
        slow = threading.Thread(target=httpx.post, args=(f"{url}/v1/table/slow/describe",),
                                kwargs={"timeout": 10})
        slow.start()
        backend = RecordingNamespace.instances["in-flight"]
        assert backend.slow_started.wait(SLOW_SECONDS * 5)
        during = metric(httpx.get(f"{url}/metrics").text, "lance_adapter_requests_in_flight")
        backend.release_slow.set()
        slow.join()
        after = metric(httpx.get(f"{url}/metrics").text, "lance_adapter_requests_in_flight")
    assert (during, after) == (2, 1)


def test_the_request_id_is_taken_from_the_caller_or_generated_and_echoed(tmp_path: Path) -> None:
    with running_server("dir", {"root": str(tmp_path)}) as url:
        given = httpx.get(f"{url}/v1/namespace/$/list", headers={"x-request-id": "req-42.a"})
        made = httpx.get(f"{url}/v1/namespace/$/list")
        bad = httpx.get(f"{url}/healthz", headers={"x-request-id": "no spaces <allowed>"})
        error = httpx.post(f"{url}/v1/table/missing/describe", headers={"x-request-id": "e-1"})
    assert given.headers["x-request-id"] == "req-42.a"
    assert re.fullmatch(r"[0-9a-f]{32}", made.headers["x-request-id"])
    assert re.fullmatch(r"[0-9a-f]{32}", bad.headers["x-request-id"])
    assert error.status_code == 404
    assert error.headers["x-request-id"] == "e-1"


def test_one_json_log_line_per_request_and_no_credential_in_any_line(
    log_lines: io.StringIO,
) -> None:
    headers = {"authorization": f"Bearer {TOKEN}", "x-api-key": TOKEN, "x-request-id": "log-1"}
    with running_server(IMPL, {"name": "logs", "auth_token": "static-secret-for-backend"}) as url:
        backend = RecordingNamespace.instances["logs"]
        ok = httpx.post(f"{url}/v1/table/a$b/describe", headers=headers)
        # A credential in the query string: refused (no operation takes it), and not logged.
        refused = httpx.post(f"{url}/v1/table/a$b/describe?token={TOKEN}", headers=headers)
        backend.mode = "broken"
        failed = httpx.get(f"{url}/v1/namespace/$/table/list", headers=headers)
        backend.mode = "ok"
    assert (ok.status_code, refused.status_code, failed.status_code) == (200, 400, 500)
    text = log_lines.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    access = [line for line in lines if line["logger"] == "lance_adapter.access"]
    assert [(a["operation"], a["status"], a["code"]) for a in access] == [
        ("DescribeTable", 200, None), ("DescribeTable", 400, 13), ("ListTables", 500, 18)
    ]
    assert access[0]["request_id"] == "log-1"
    assert access[0]["path"] == "/v1/table/a$b/describe"
    assert access[0]["method"] == "POST" and access[0]["duration_ms"] > 0
    assert access[0]["client"] == "127.0.0.1"
    unexpected = [line for line in lines if line["message"] == "unexpected error"]
    assert len(unexpected) == 1 and "RuntimeError" in unexpected[0]["exception"]
    assert unexpected[0]["request_id"] == "log-1"
    for secret in (TOKEN, LEAKY_SECRET, "static-secret-for-backend"):
        assert secret not in text
    # The identity still reached the backend: only the logs are kept clean.
    assert backend.identities[0] == {"auth_token": TOKEN, "api_key": TOKEN}


def test_redaction_covers_the_usual_spellings_of_credentials() -> None:
    line = ('Authorization: Bearer abc.def-ghi x-api-key=k1 {"auth_token": "t2"} '
            "password='p3' secret_access_key=s4 ?token=t5&x=1")
    cleaned = Redactor()(line)
    for secret in ("abc.def-ghi", "k1", "t2", "p3", "s4", "t5"):
        assert secret not in cleaned
    assert "x=1" in cleaned


def test_a_registered_secret_that_is_also_part_of_a_key_name_hides_nothing_less() -> None:
    redact = Redactor()
    redact.add(["secret"])  # e.g. a backend configured with secret_access_key=secret
    cleaned = redact("secret_access_key=s4-value token=t6")
    assert "s4-value" not in cleaned and "t6" not in cleaned


def test_every_credential_property_is_kept_out_of_the_logs() -> None:
    """The rule that keeps a credential out of answers keeps it out of logs: a service
    account key (which the log rule once missed) as much as a secret key."""
    properties = {"storage.google_service_account_key": "gsa-value-1",
                  "storage.aws_secret_access_key": "aws-value-2",
                  "storage.azure_storage_sas_key": "sas-value-3",
                  "storage.allow_http": "true", "root": "/data", "client.max-retries": "3"}
    values = credential_values(properties)
    assert sorted(values) == ["aws-value-2", "gsa-value-1", "sas-value-3"]
    redact = Redactor()
    redact.add(values)
    cleaned = redact("opened with gsa-value-1 and sas-value-3 at /data, allow_http true")
    assert "gsa-value-1" not in cleaned and "sas-value-3" not in cleaned
    assert "/data" in cleaned and "true" in cleaned


@pytest.mark.parametrize("word", CREDENTIAL_WORDS)
def test_log_text_hides_the_value_of_any_key_that_is_a_credential(word: str) -> None:
    """The log rule's key words are `is_credential`'s: a value the server never registered
    is hidden after any key that names a credential, in JSON and in `key=value` text."""
    key = f"storage.example_{word}_x"
    cleaned = Redactor()(f'{{"{key}": "unregistered-1"}} {key.upper()}=unregistered-2 {word}: u-3 '
                     "region=eu-1")
    assert "unregistered" not in cleaned and "u-3" not in cleaned
    assert "region=eu-1" in cleaned


def test_credential_properties_of_the_server_are_in_no_answer_and_no_log_line(
    tmp_path: Path, log_lines: io.StringIO
) -> None:
    properties = {"root": str(tmp_path), "storage.google_service_account_key": "gsa-value-9"}
    properties |= {f"storage.example_{word}": f"{word}-value-9" for word in CREDENTIAL_WORDS}
    values = [value for key, value in properties.items() if key != "root"]
    with running_server("dir", properties) as url:
        created = httpx.post(f"{url}/v1/table/t/create", content=arrow_stream(sample_table(2)),
                             headers={"content-type": "application/vnd.apache.arrow.stream"})
        described = httpx.post(f"{url}/v1/table/t/describe", json={})
        logging.getLogger("lance_adapter").warning("opened the root with %s", properties)
    assert (created.status_code, described.status_code) == (200, 200), described.text
    for value in values:
        assert value not in created.text and value not in described.text
        assert value not in log_lines.getvalue()
    assert "opened the root with" in log_lines.getvalue()
