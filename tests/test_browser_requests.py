"""With auth off, requests a web page makes a browser send are refused (app.browser_guard):
foreign origins, DNS-rebound host names, and form bodies; the official clients and curl pass."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from app.config import load_settings
from backends.core.settings import ConfigurationError
from tests.support.adapter import metric, running_server
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.plugin_stand_ins import RecordingNamespace

IMPL = "tests.support.plugin_stand_ins.RecordingNamespace"
DESCRIBE = "/v1/table/sales$orders/describe"
BODY = b'{"with_table_uri":true}'
JSON_TYPE = {"content-type": "application/json"}


def post(url: str, path: str = DESCRIBE, body: bytes = BODY, **headers: str) -> httpx.Response:
    return httpx.post(f"{url}{path}", content=body, headers=headers)


def port_of(url: str) -> str:
    return url.rpartition(":")[2]


def received(name: str) -> int:
    return len(RecordingNamespace.instances[name].received)


def assert_refused(answer: httpx.Response, status: int, code: int, path: str = DESCRIBE) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert set(body) == {"error", "code", "detail", "instance"}
    assert (body["code"], body["instance"]) == (code, path)


def test_a_foreign_origin_is_refused_before_the_backend_sees_the_request() -> None:
    with running_server(IMPL, {"name": "guard-origin"}) as url:
        answers = [
            post(url, **{"origin": "https://evil.example", "content-type": "text/plain"}),
            post(url, **{"origin": "https://evil.example", **JSON_TYPE}),
            post(url, **{"origin": "null", **JSON_TYPE}),  # sandboxed frames, file:// pages
            # Another service on this machine is another origin.
            post(url, **{"origin": "http://127.0.0.1:1", **JSON_TYPE}),
            httpx.get(f"{url}/v1/namespace/$/list", headers={"origin": "https://evil.example"}),
        ]
        metrics = httpx.get(f"{url}/metrics").text
    for answer in answers[:-1]:
        assert_refused(answer, 403, 15)
    assert_refused(answers[-1], 403, 15, "/v1/namespace/$/list")
    assert answers[0].json()["detail"] == "PermissionDenied (code 15)"
    assert received("guard-origin") == 0
    assert metric(metrics, "lance_adapter_requests_total", operation="DescribeTable",
                  status="403", code="15") == 4


def test_the_servers_own_origin_and_the_allowed_origins_pass() -> None:
    allowed = "https://app.example.com, http://tools.example:8080/"
    with running_server(IMPL, {"name": "guard-own"}, allowed_origins=allowed) as url:
        port = port_of(url)
        own = post(url, **{"origin": f"http://127.0.0.1:{port}", **JSON_TYPE})
        by_name = post(url, **{"origin": f"http://localhost:{port}", "host": f"localhost:{port}",
                               **JSON_TYPE})
        app = post(url, **{"origin": "https://app.example.com", **JSON_TYPE})
        tools = post(url, **{"origin": "http://TOOLS.example:8080", **JSON_TYPE})
        other_port = post(url, **{"origin": "https://app.example.com:8443", **JSON_TYPE})
        other_scheme = post(url, **{"origin": "http://app.example.com", **JSON_TYPE})
    assert [a.status_code for a in (own, by_name, app, tools)] == [200] * 4
    assert_refused(other_port, 403, 15)
    assert_refused(other_scheme, 403, 15)
    assert received("guard-own") == 4


def test_host_names_other_than_loopback_are_refused_on_a_loopback_server() -> None:
    """DNS rebinding: the page's own name now points here, so the browser sends the page's
    origin as `Origin` and its name as `Host`, a same-origin request in its eyes."""
    with running_server(IMPL, {"name": "guard-host"}) as url:
        port = port_of(url)
        rebound_name = f"evil.example:{port}"
        rebound = post(url, **{"host": rebound_name, "origin": f"http://{rebound_name}",
                               **JSON_TYPE})
        read = httpx.get(f"{url}/v1/namespace/$/list", headers={"host": rebound_name})
        scraped = httpx.get(f"{url}/metrics", headers={"host": rebound_name})
        suffixed = post(url, **{"host": f"127.0.0.1.evil.example:{port}", **JSON_TYPE})
        # LanceDB's remote client names its cloud whatever its `host_override` says.
        loopback = [httpx.get(f"{url}/v1/namespace/$/list", headers={"host": host})
                    for host in (f"localhost:{port}", "LOCALHOST", f"127.0.0.2:{port}",
                                 f"[::1]:{port}", "lance.local.api.lancedb.com")]
        lookalike = httpx.get(f"{url}/v1/namespace/$/list",
                              headers={"host": "lance.api.lancedb.com.evil.example"})
    assert_refused(rebound, 403, 15)
    assert_refused(read, 403, 15, "/v1/namespace/$/list")
    assert_refused(scraped, 403, 15, "/metrics")
    assert_refused(suffixed, 403, 15)
    assert_refused(lookalike, 403, 15, "/v1/namespace/$/list")
    assert [answer.status_code for answer in loopback] == [200] * 5
    assert received("guard-host") == 5


def test_a_server_bound_to_localhost_accepts_the_hosts_of_allowed_origins_only() -> None:
    """A gateway on this machine that keeps the public `Host` needs its origin allowed."""
    with running_server(IMPL, {"name": "guard-names"}, host="localhost",
                        allowed_origins="https://lance.internal") as url:
        port = port_of(url)
        gateway = httpx.get(f"{url}/v1/namespace/$/list",
                            headers={"host": "lance.internal", "origin": "https://lance.internal"})
        other = httpx.get(f"{url}/v1/namespace/$/list", headers={"host": f"other:{port}"})
    assert gateway.status_code == 200, gateway.text
    assert_refused(other, 403, 15, "/v1/namespace/$/list")


def test_a_server_bound_beyond_loopback_does_not_judge_host_names() -> None:
    """Its names are not known (pod addresses, service names): `Origin` still counts."""
    with running_server(IMPL, {"name": "guard-wide"}, host="0.0.0.0") as url:
        named = httpx.get(f"{url}/v1/namespace/$/list", headers={"host": "adapter.svc:2333"})
        foreign = post(url, **{"origin": "https://evil.example", **JSON_TYPE})
    assert named.status_code == 200
    assert_refused(foreign, 403, 15)


def test_form_bodies_are_refused_but_curl_style_form_encoding_passes() -> None:
    """`text/plain` and `multipart/form-data` are what forms send without a preflight: never
    JSON. `curl -d` and `urllib` send `application/x-www-form-urlencoded` without `Origin`."""
    arrow_path = "/v1/table/sales$orders/create"
    with running_server(IMPL, {"name": "guard-types"}) as url:
        own_origin = f"http://127.0.0.1:{port_of(url)}"
        refused = [
            post(url, **{"content-type": "text/plain"}),
            post(url, **{"content-type": "Text/Plain; charset=utf-8"}),
            post(url, **{"content-type": "multipart/form-data; boundary=x"}),
            post(url, **{"content-type": "application/x-www-form-urlencoded",
                         "origin": own_origin}),
        ]
        arrow_as_text = post(url, arrow_path, arrow_stream(sample_table(2)),
                             **{"content-type": "text/plain"})
        refused_count = received("guard-types")
        curl = post(url, **{"content-type": "application/x-www-form-urlencoded"})
        untyped = post(url)
        empty = post(url, body=b"")
        charset = post(url, **{"content-type": "application/json; charset=utf-8"})
    for answer in refused:
        assert_refused(answer, 415, 13)
    assert_refused(arrow_as_text, 415, 13, arrow_path)
    assert "application/json" in refused[0].json()["error"]
    assert refused_count == 0
    assert [a.status_code for a in (curl, untyped, empty, charset)] == [200] * 4


def test_the_official_clients_pass_the_guard(tmp_path: Path) -> None:
    """Their JSON (application/json), table data (application/vnd.apache.arrow.stream) and
    body-less calls (DropTable sends no content type) all pass."""
    from lance.namespace import RestNamespace
    from lance_namespace import (
        CreateNamespaceRequest,
        CreateTableRequest,
        DropTableRequest,
        ListTablesRequest,
    )
    from lance_namespace_urllib3_client import ApiClient, Configuration, TableApi

    data = arrow_stream(sample_table(3))
    with running_server("dir", {"root": str(tmp_path)}) as url:
        pylance = RestNamespace(uri=url)
        pylance.create_namespace(CreateNamespaceRequest(id=["shop"]))
        pylance.create_table(CreateTableRequest(id=["shop", "items"]), data)
        TableApi(ApiClient(Configuration(host=url))).create_table("shop$more", data)
        listed = sorted(pylance.list_tables(ListTablesRequest(id=["shop"])).tables)
        pylance.drop_table(DropTableRequest(id=["shop", "items"]))
        after_drop = pylance.list_tables(ListTablesRequest(id=["shop"])).tables
    assert listed == ["items", "more"]
    assert after_drop == ["more"]


def test_with_auth_on_the_credential_is_the_guard() -> None:
    """A browser attaches no bearer token to a cross-site request by itself."""
    with running_server(IMPL, {"name": "guard-auth"}, auth_mode="token",
                        auth_tokens="guard-token") as url:
        with_token = post(url, **{"origin": "https://app.example", "authorization":
                                  "Bearer guard-token", **JSON_TYPE})
        without = post(url, **{"origin": "https://evil.example", "content-type": "text/plain"})
    assert with_token.status_code == 200
    assert_refused(without, 401, 16)


def test_allowed_origins_are_read_from_the_environment_and_checked_at_start() -> None:
    settings = load_settings(environ={"LANCE_ADAPTER_ALLOWED_ORIGINS": "https://a.example/"})
    assert settings.allowed_origins == "https://a.example/"
    for entry in ("a.example", "https://a.example/app", "null", "ftp://a.example",
                  "https://user@a.example"):
        with pytest.raises(ConfigurationError, match=r"allowed_origins entry .* is not an origin"):
            load_settings(environ={"LANCE_ADAPTER_ALLOWED_ORIGINS": f"https://ok.example,{entry}"})
