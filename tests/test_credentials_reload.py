"""Tokens and grants change without a restart (app/credentials.py): a changed `auth_tokens_file`
or `access_file` replaces them whole at the next look (every `auth_reload_interval`, by an
injected clock here), a file with a mistake keeps the previous ones and logs one line, and on a
real server with two workers a removed grant and a revoked token stop working within 5 s.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import httpx
import pytest

from app.credentials import Credentials
from app.settings import Settings
from backends.core.access import Level
from tests.support.cli import start_adapter

TOKENS = "etl etl-token\nbi bi-token\n"
GRANTS = "access:\n  etl: read, write@sales\n  bi: read\naccess_default: none\n"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def files(tmp_path: Path) -> tuple[Path, Path]:
    tokens, grants = tmp_path / "tokens", tmp_path / "access.yaml"
    tokens.write_text(TOKENS)
    grants.write_text(GRANTS)
    return tokens, grants


def test_a_changed_file_replaces_the_rules_at_the_next_look(tmp_path: Path) -> None:
    tokens, grants = files(tmp_path)
    clock = Clock()
    credentials = Credentials(Settings(auth_mode="token", auth_tokens_file=str(tokens),
                                       access_file=str(grants), auth_reload_interval=2),
                              clock=clock)
    before = credentials.current()
    assert before.policy.grants_of("etl").allows(Level.WRITE, ["sales", "t"])
    grants.write_text("access:\n  etl: read\naccess_default: none\n")
    tokens.write_text("etl etl-token\n")
    clock.now = 1.9
    assert credentials.current() is before  # not looked at yet
    clock.now = 2.0
    after = credentials.current()
    assert not after.policy.grants_of("etl").allows(Level.WRITE, ["sales", "t"])
    assert set(after.tokens) == {b"etl-token"}


def test_a_file_with_a_mistake_keeps_the_previous_rules_and_logs_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    tokens, grants = files(tmp_path)
    clock = Clock()
    credentials = Credentials(Settings(auth_mode="token", auth_tokens_file=str(tokens),
                                       access_file=str(grants)), clock=clock)
    before = credentials.current()
    for content in ("access:\n  etl: writ\n", "access: [\n", "acess:\n  etl: read\n"):
        grants.write_text(content)
        clock.now += 2
        with caplog.at_level(logging.WARNING, logger="lance_adapter"):
            caplog.clear()
            assert credentials.current() is before
            clock.now += 2
            assert credentials.current() is before  # the same bad file: no second line
        assert len(caplog.records) == 1, caplog.text
        assert "the previous tokens and grants stay in force" in caplog.records[0].message
    tokens.write_text("etl etl-token\netl etl-token\n")  # a repeated token
    clock.now += 2
    assert credentials.current() is before
    grants.write_text(GRANTS)
    tokens.write_text("etl etl-token-2\n")
    clock.now += 2
    assert set(credentials.current().tokens) == {b"etl-token-2"}


def test_grants_in_both_places_are_refused() -> None:
    from app.config import load_settings
    from backends.core.settings import ConfigurationError

    with pytest.raises(ConfigurationError, match="'access' and access_file both give grants"):
        load_settings(environ={}, overrides={"auth_mode": "token", "auth_tokens": "t",
                                             "access": {"a": "read"}, "access_file": "/x"})


def test_a_removed_grant_and_a_revoked_token_stop_working_within_5_s_on_every_worker(
    tmp_path: Path,
) -> None:
    tokens, grants = files(tmp_path)
    grants.write_text("access:\n  etl: admin@sales, read\n  bi: read\naccess_default: none\n")
    adapter = start_adapter(tmp_path, "--impl", "dir", "--prop", f"root={tmp_path / 'root'}",
                            "--workers", "2", "--auth-mode", "token",
                            "--auth-tokens-file", str(tokens),
                            LANCE_ADAPTER_ACCESS_FILE=str(grants),
                            LANCE_ADAPTER_AUTH_RELOAD_INTERVAL="1")
    try:
        def status(token: str, method: str, path: str) -> int:
            with httpx.Client() as client:  # a new connection: any worker may answer
                return client.request(method, adapter.url + path, timeout=30, json={},
                                      headers={"authorization": f"Bearer {token}"}).status_code

        assert status("etl-token", "POST", "/v1/namespace/sales/create") == 200
        assert status("bi-token", "GET", "/v1/namespace/sales/table/list") == 200

        grants.write_text("access:\n  etl: read\naccess_default: none\n")
        started = time.monotonic()
        assert until(lambda: all(status("etl-token", "POST", "/v1/namespace/sales$eu/create")
                                 == 403 for _ in range(8)))
        removed_after = time.monotonic() - started
        tokens.write_text("etl etl-token\n")
        started = time.monotonic()
        assert until(lambda: all(status("bi-token", "GET", "/v1/namespace/sales/table/list")
                                 == 401 for _ in range(8)))
        revoked_after = time.monotonic() - started
        assert removed_after < 5 and revoked_after < 5, (removed_after, revoked_after)
    finally:
        adapter.stop()


def until(condition, seconds: float = 5.0) -> bool:
    """Whether `condition` holds within `seconds` (polled: the change is another process's)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_documented_access_file_is_what_the_server_reads(tmp_path: Path) -> None:
    from app.credentials import load_rules
    from backends.core.settings import ConfigurationError
    from tests.support.doc_blocks import blocks_run_by

    [block] = blocks_run_by("tests/test_credentials_reload.py",
                            "test_the_documented_access_file_is_what_the_server_reads")
    access_file = tmp_path / "access.yaml"
    access_file.write_text(block.code)
    tokens = tmp_path / "tokens"
    tokens.write_text("etl etl-token\nbi bi-token\n")
    policy = load_rules(Settings(auth_mode="token", auth_tokens_file=str(tokens),
                                 access_file=str(access_file))).policy  # the mode it names
    assert str(policy.grants_of("etl")) == "read, write@sales"
    assert str(policy.grants_of("bi")) == "read"
    assert str(policy.grants_of("dave")) == "none"
    # Under oidc the same file may add the grants of groups.
    access_file.write_text(block.code + "access_groups:\n  lance-admins: admin\n")
    policy = load_rules(Settings(auth_mode="oidc", oidc_issuer="https://sso.example.com",
                                 oidc_audience="lance", access_file=str(access_file))).policy
    assert str(policy.grants_of("dave", ["lance-admins"])) == "admin"
    assert str(policy.grants_of("dave", ["others"])) == "none"
    with pytest.raises(ConfigurationError, match="names groups of OIDC tokens"):
        load_rules(Settings(auth_mode="token", auth_tokens_file=str(tokens),
                            access_file=str(access_file)))
