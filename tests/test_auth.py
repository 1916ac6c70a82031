"""Caller authentication: off by default, static tokens, and forwarding to the backend."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from app.auth import load_credentials
from app.config import Settings, SettingsError, load_settings
from app.health import HEALTH_PATHS, Readiness, health_routes
from app.observability import Metrics
from app.protocol import JSON
from tests.support.adapter import running_server
from tests.support.plugin_stand_ins import RecordingNamespace

IMPL = "tests.support.plugin_stand_ins.RecordingNamespace"
GOOD = "adapter-token-one"
OTHER = "adapter-token-two"
LANCE_ROUTES = (
    ("GET", "/v1/namespace/$/list", None),
    ("GET", "/v1/namespace/$/table/list", None),
    ("POST", "/v1/table/a$t/describe", {}),
    ("POST", "/DescribeTable", {"id": ["a", "t"]}),
    ("POST", "/ListNamespaces", {"id": []}),
)


def call(url: str, method: str, path: str, body: dict | None, **headers: str) -> httpx.Response:
    return httpx.request(method, f"{url}{path}", json=body, headers=headers)


def bearer(token: str) -> str:
    return f"Bearer {token}"


def test_auth_is_off_by_default_and_the_caller_identity_reaches_the_backend() -> None:
    assert Settings().auth_mode == "off"
    with running_server(IMPL, {"name": "auth-off"}) as url:
        plain = call(url, "GET", "/v1/namespace/$/list", None)
        with_token = call(url, "GET", "/v1/namespace/$/list", None, authorization=bearer("x1"))
    assert (plain.status_code, with_token.status_code) == (200, 200)
    assert RecordingNamespace.instances["auth-off"].identities == [None, {"auth_token": "x1"}]


def test_token_mode_refuses_a_missing_or_wrong_credential_on_every_lance_route() -> None:
    with running_server(IMPL, {"name": "auth-token"}, auth_mode="token",
                        auth_tokens=f"{GOOD}, {OTHER}") as url:
        for method, path, body in LANCE_ROUTES:
            missing = call(url, method, path, body)
            wrong = call(url, method, path, body, authorization=bearer("not-a-token"))
            wrong_key = call(url, method, path, body, **{"x-api-key": "nope"})
            for answer in (missing, wrong, wrong_key):
                assert answer.status_code == 401, (path, answer.text)
                assert answer.json()["code"] == 16
                assert answer.json()["instance"] == path
                assert answer.headers["www-authenticate"].startswith("Bearer")
            assert "missing credential" in missing.json()["error"]
            assert "invalid credential" in wrong.json()["error"]
        unknown_route = call(url, "GET", "/v1/nothing", None)
        assert unknown_route.status_code == 401
        backend = RecordingNamespace.instances["auth-token"]
        assert backend.identities == []


def test_token_mode_accepts_each_configured_token_as_bearer_or_api_key_and_strips_it() -> None:
    with running_server(IMPL, {"name": "auth-ok"}, auth_mode="token",
                        auth_tokens=f"{GOOD},{OTHER}") as url:
        for method, path, body in LANCE_ROUTES:
            assert call(url, method, path, body, authorization=bearer(GOOD)).status_code == 200
        assert call(url, "GET", "/v1/namespace/$/list", None,
                    **{"x-api-key": OTHER}).status_code == 200
        # An identity in the body is stripped too: the backend keeps its own credentials.
        smuggled = call(url, "POST", "/ListNamespaces",
                        {"id": [], "identity": {"auth_token": "smuggled"}},
                        authorization=bearer(GOOD))
        assert smuggled.status_code == 200
    identities = RecordingNamespace.instances["auth-ok"].identities
    assert len(identities) == len(LANCE_ROUTES) + 2
    assert identities == [None] * len(identities)


def test_health_and_metrics_stay_open_when_auth_is_on() -> None:
    with running_server(IMPL, {"name": "auth-open"}, auth_mode="token", auth_tokens=GOOD) as url:
        for path in HEALTH_PATHS:
            assert httpx.get(f"{url}{path}").status_code == 200, path
        metrics = httpx.get(f"{url}/metrics").text
    assert GOOD not in metrics
    assert {f"/{route.name}" for route in health_routes(Readiness(lambda: None, 1), Metrics())} \
        == set(HEALTH_PATHS)


def test_a_refused_credential_is_answered_like_every_other_error() -> None:
    """The 401 is the error answer of the Lance routes (body, media type, metrics), plus
    the Bearer challenge."""
    with running_server(IMPL, {"name": "auth-shape"}, auth_mode="token",
                        auth_tokens=GOOD) as url:
        refused = call(url, "POST", "/v1/table/a$t/describe", {})
        unsupported = call(url, "GET", "/v1/nothing", None, authorization=bearer(GOOD))
        metrics = httpx.get(f"{url}/metrics").text
    assert refused.headers["content-type"] == unsupported.headers["content-type"] == JSON
    assert set(refused.json()) == set(unsupported.json()) == {"error", "code", "detail",
                                                               "instance"}
    assert refused.json()["detail"] == "Unauthenticated (code 16)"
    assert re.search(r'code="16",operation="DescribeTable",status="401"', metrics), metrics


def test_tokens_are_read_from_a_file(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# adapter tokens\n{GOOD}\n\n  {OTHER}  \n")
    with running_server(IMPL, {"name": "auth-file"}, auth_mode="token",
                        auth_tokens_file=str(tokens)) as url:
        good = call(url, "GET", "/v1/namespace/$/list", None, authorization=bearer(OTHER))
        comment = call(url, "GET", "/v1/namespace/$/list", None,
                       authorization=bearer("# adapter tokens"))
    assert (good.status_code, comment.status_code) == (200, 401)


def test_tokens_come_from_the_environment_and_token_mode_needs_some(tmp_path: Path) -> None:
    settings = load_settings(environ={"LANCE_ADAPTER_AUTH_MODE": "token",
                                      "LANCE_ADAPTER_AUTH_TOKENS": f"{GOOD},{OTHER}"})
    assert load_credentials(settings) == (GOOD.encode(), OTHER.encode())
    with pytest.raises(SettingsError, match="needs auth_tokens"):
        load_credentials(Settings(auth_mode="token"))
    with pytest.raises(SettingsError, match="cannot read auth_tokens_file"):
        load_credentials(Settings(auth_mode="token", auth_tokens_file=str(tmp_path / "none")))
    with pytest.raises(SettingsError, match="auth_mode must be one of"):
        load_settings(environ={"LANCE_ADAPTER_AUTH_MODE": "maybe"})


def test_forward_mode_passes_the_checked_caller_token_to_the_backend() -> None:
    with running_server(IMPL, {"name": "auth-fwd"}, auth_mode="forward",
                        auth_tokens=f"{GOOD},{OTHER}") as url:
        ok = call(url, "POST", "/v1/table/a$t/describe", {}, authorization=bearer(OTHER))
        by_id = call(url, "POST", "/DescribeTable",
                     {"id": ["a", "t"], "identity": {"auth_token": "smuggled"}},
                     authorization=bearer(GOOD))
        wrong = call(url, "POST", "/v1/table/a$t/describe", {}, authorization=bearer("bad"))
        missing = call(url, "POST", "/v1/table/a$t/describe", {})
    assert (ok.status_code, by_id.status_code) == (200, 200)
    assert (wrong.status_code, missing.status_code) == (401, 401)
    assert wrong.json()["code"] == 16
    assert RecordingNamespace.instances["auth-fwd"].identities == [
        {"auth_token": OTHER}, {"auth_token": GOOD}
    ]


def test_forward_mode_without_a_token_list_leaves_the_check_to_the_backend() -> None:
    with running_server(IMPL, {"name": "auth-fwd-any"}, auth_mode="forward") as url:
        ok = call(url, "GET", "/v1/namespace/$/table/list", None,
                  authorization=bearer("user-token-for-unity"))
        missing = call(url, "GET", "/v1/namespace/$/table/list", None)
    assert (ok.status_code, missing.status_code) == (200, 401)
    assert RecordingNamespace.instances["auth-fwd-any"].identities == [
        {"auth_token": "user-token-for-unity"}
    ]


def test_the_official_client_authenticates_with_its_header_property() -> None:
    from lance.namespace import RestNamespace
    from lance_namespace import ListTablesRequest

    with running_server(IMPL, {"name": "auth-client"}, auth_mode="forward",
                        auth_tokens=GOOD) as url:
        client = RestNamespace(uri=url, **{"header.Authorization": bearer(GOOD)})
        tables = client.list_tables(ListTablesRequest(id=["a"])).tables
        anonymous = RestNamespace(uri=url)
        with pytest.raises(Exception, match=r"(?i)unauthenticated|401|credential"):
            anonymous.list_tables(ListTablesRequest(id=["a"]))
    assert tables == ["t"]
    assert RecordingNamespace.instances["auth-client"].identities == [{"auth_token": GOOD}]
