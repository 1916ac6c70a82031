"""Caller authentication: off by default, static tokens, and forwarding to the backend."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from app.auth import load_identities
from app.config import load_settings
from app.health import HEALTH_PATHS, Readiness, health_routes
from app.observability import Metrics
from app.protocol import JSON
from app.server import create_app
from app.settings import Settings
from backends.core.settings import ConfigurationError
from tests.support.adapter import metric, running_server
from tests.support.cli import CLI, cli_environment
from tests.support.common import free_port
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


def tokens_file(tmp_path: Path, content: bytes) -> Settings:
    path = tmp_path / "tokens"
    path.write_bytes(content)
    return Settings(auth_mode="token", auth_tokens_file=str(path))


def test_an_indented_comment_is_a_comment_and_its_token_is_refused(tmp_path: Path) -> None:
    """A revoked token commented out with indentation is not accepted (as identity `#`)."""
    settings = tokens_file(tmp_path, f"{GOOD}\n    # revoked-token-1\n\t# etl revoked-2\n"
                           .encode())
    assert load_identities(settings) == {GOOD.encode(): None}
    with running_server(IMPL, {"name": "auth-revoked"}, auth_mode="token",
                        auth_tokens_file=settings.auth_tokens_file) as url:
        revoked = call(url, "GET", "/v1/namespace/$/list", None,
                       authorization=bearer("revoked-token-1"))
        good = call(url, "GET", "/v1/namespace/$/list", None, authorization=bearer(GOOD))
    assert (revoked.status_code, good.status_code) == (401, 200)


def test_trailing_spaces_crlf_line_ends_and_a_bom_are_not_part_of_a_token(
    tmp_path: Path,
) -> None:
    content = f"\ufeff# tokens\r\netl {GOOD}  \r\n  \r\n{OTHER}\t\r\n".encode()
    assert load_identities(tokens_file(tmp_path, content)) == {
        GOOD.encode(): "etl", OTHER.encode(): None}
    # Line numbers count CRLF line ends as an editor does.
    with pytest.raises(ConfigurationError, match=r" line 3 has 3 words;"):
        load_identities(tokens_file(tmp_path, f"{GOOD}\r\n\r\na b c\r\n".encode()))


@pytest.mark.parametrize(("line", "problem"), [
    ("etl extra token-x", "has 3 words; an auth token entry is `<token>` or "
                          "`<identity> <token>`"),
    ("etl tök-x", "holds a token with characters other than visible ASCII"),
    ("e/tl token-x", "names an identity that is not 1-128 letters, digits"),
    ("-etl token-x", "names an identity that is not 1-128 letters, digits"),
])
def test_a_malformed_line_is_refused_with_its_line_number(
    tmp_path: Path, line: str, problem: str,
) -> None:
    settings = tokens_file(tmp_path, f"# tokens\n{GOOD}\n\n{line}\n".encode())
    with pytest.raises(
        ConfigurationError, match=re.escape(f"{settings.auth_tokens_file} line 4 {problem}")
    ) as refused:
        load_identities(settings)
    message = str(refused.value)
    assert message.startswith(f"auth_tokens_file {settings.auth_tokens_file} line 4 {problem}")
    assert "token-x" not in message and message.count(". ") == 0


def test_a_token_may_appear_once_and_an_identity_may_have_several(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"etl {GOOD}\n# rotation: the old and the new token of etl\netl {OTHER}\n"
                    f"bi token-bi\n  {GOOD}\n")
    with pytest.raises(ConfigurationError, match=rf"^auth_tokens_file {path} line 5 repeats the "
                                            r"token of line 1; each token may appear once$"):
        load_identities(Settings(auth_mode="token", auth_tokens_file=str(path)))
    path.write_text(f"etl {GOOD}\netl {OTHER}\nbi token-bi\n")
    assert load_identities(Settings(auth_mode="token", auth_tokens_file=str(path))) == {
        GOOD.encode(): "etl", OTHER.encode(): "etl", b"token-bi": "bi"}
    with pytest.raises(ConfigurationError, match=rf"auth_tokens_file {path} line 3 repeats the "
                                            r"token of auth_tokens entry 2;"):
        load_identities(Settings(auth_mode="token", auth_tokens="x-token, bi token-bi",
                                 auth_tokens_file=str(path)))


def test_the_cli_refuses_a_malformed_tokens_file_before_listening(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"{GOOD}\n{GOOD}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANCE_ADAPTER_")}
    result = subprocess.run(
        [CLI, "serve", "--auth-mode", "token", "--auth-tokens-file", str(path),
         "--port", str(free_port())],
        cwd=tmp_path, env=cli_environment(env), capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (f"lance-adapter: auth_tokens_file {path} line 2 repeats "
                                     "the token of line 1; each token may appear once")


def test_metrics_name_identities_only_when_configured() -> None:
    """/metrics answers without credentials, so by default a named caller is `hidden`."""
    assert load_settings(environ={}).metrics_identities is False
    assert load_settings(environ={"LANCE_ADAPTER_METRICS_IDENTITIES": "true"}).metrics_identities
    quiet, named = Metrics(), Metrics(name_identities=True)
    for metrics in (quiet, named):
        metrics.observe_vend("etl", "read-write", "minted")
        metrics.observe_vend(None, "read", "minted")
    vended = "lance_adapter_credentials_vended_total"
    quiet_text, named_text = quiet.render().decode(), named.render().decode()
    assert 'identity="etl"' not in quiet_text
    assert metric(quiet_text, vended, identity="hidden", access="read-write") == 1
    assert metric(quiet_text, vended, identity="none", access="read") == 1
    assert metric(named_text, vended, identity="etl", access="read-write") == 1
    app = create_app(RecordingNamespace("auth-metrics"), Settings(metrics_identities=True))
    assert app.state.metrics.name_identities is True


def test_tokens_come_from_the_environment_and_token_mode_needs_some(tmp_path: Path) -> None:
    settings = load_settings(environ={"LANCE_ADAPTER_AUTH_MODE": "token",
                                      "LANCE_ADAPTER_AUTH_TOKENS": f"{GOOD},{OTHER}"})
    assert tuple(load_identities(settings)) == (GOOD.encode(), OTHER.encode())
    with pytest.raises(ConfigurationError, match="needs auth_tokens"):
        load_identities(Settings(auth_mode="token"))
    with pytest.raises(ConfigurationError, match="cannot read auth_tokens_file"):
        load_identities(Settings(auth_mode="token", auth_tokens_file=str(tmp_path / "none")))
    with pytest.raises(ConfigurationError,
                       match="setting 'auth_mode' must be one of 'off', 'token', 'forward'"):
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
    from lance_namespace import ListTablesRequest, UnauthenticatedError

    with running_server(IMPL, {"name": "auth-client"}, auth_mode="forward",
                        auth_tokens=GOOD) as url:
        client = RestNamespace(uri=url, **{"header.Authorization": bearer(GOOD)})
        tables = client.list_tables(ListTablesRequest(id=["a"])).tables
        anonymous = RestNamespace(uri=url)
        with pytest.raises(UnauthenticatedError, match="missing credential"):
            anonymous.list_tables(ListTablesRequest(id=["a"]))
    assert tables == ["t"]
    assert RecordingNamespace.instances["auth-client"].identities == [{"auth_token": GOOD}]
