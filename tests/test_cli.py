"""`lance-adapter serve`: settings from flags, a config file and the environment; clear failures."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.config import Settings, SettingsError, load_settings
from tests.server import free_port

CLI = str(Path(sys.executable).parent / "lance-adapter")


def run_cli(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CLI, *arguments], capture_output=True, text=True, timeout=60, env=env or dict(os.environ)
    )



def wait_until_serving(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        try:
            httpx.get(f"{url}/v1/namespace/$/list", timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("the server did not start")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "tables"
    port = free_port()
    process = subprocess.Popen(
        [CLI, "serve", "--impl", "dir", "--prop", f"root={root}", "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process)
        yield url, root
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_serve_answers_on_the_given_port_and_root(served: tuple[str, Path]) -> None:
    url, root = served
    assert httpx.post(f"{url}/v1/namespace/made/create", json={}).status_code == 200
    assert httpx.get(f"{url}/v1/namespace/$/list").json()["namespaces"] == ["made"]
    assert root.is_dir() and any(root.iterdir())


def test_an_unknown_impl_is_one_line_and_a_nonzero_exit() -> None:
    result = run_cli("serve", "--impl", "nosuchcatalog", "--port", str(free_port()))
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "nosuchcatalog" in lines[0], result.stderr


def test_a_missing_required_property_is_one_line() -> None:
    result = run_cli("serve", "--impl", "lance.namespace.DirectoryNamespace",
                     "--port", str(free_port()))
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "root" in lines[0], result.stderr


def test_a_busy_port_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = run_cli("serve", "--prop", f"root={tmp_path}", "--port", str(port))
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(port) in lines[0] and "in use" in lines[0], result.stderr


def test_a_bad_property_flag_is_rejected() -> None:
    result = run_cli("serve", "--prop", "no-equals-sign")
    assert result.returncode != 0
    assert "KEY=VALUE" in result.stderr


def test_settings_come_from_file_then_environment_then_flags(tmp_path: Path) -> None:
    config = tmp_path / "adapter.yaml"
    config.write_text(
        "impl: dir\nport: 3000\nworkers: 2\nproperties:\n  root: /from/file\n  keep: yes-file\n"
    )
    environment = {
        "LANCE_ADAPTER_PORT": "4000",
        "LANCE_ADAPTER_PROP_ROOT": "/from/env",
        "LANCE_ADAPTER_PROP_STORAGE__REGION": "eu-west-1",
        "LANCE_ADAPTER_PROPERTIES": '{"client.pool-size": "5"}',
    }
    settings = load_settings(config, environ=environment, overrides={"port": 5000, "host": None})
    assert settings.port == 5000
    assert settings.workers == 2
    assert settings.host == Settings().host
    assert settings.properties == {
        "root": "/from/env",
        "keep": "yes-file",
        "storage.region": "eu-west-1",
        "client.pool-size": "5",
    }
    assert load_settings(config, environ=environment).port == 4000
    assert load_settings(config, environ={}).port == 3000


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("port: many\n", "number|integer"),
        ("colour: blue\n", "unknown setting"),
        ("- a\n", "mapping"),
    ],
)
def test_bad_config_files_are_refused(tmp_path: Path, content: str, message: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(content)
    with pytest.raises(SettingsError, match=message):
        load_settings(config, environ={})


def test_the_server_is_configured_by_environment_alone(tmp_path: Path) -> None:
    port = free_port()
    environment = {
        **os.environ,
        "LANCE_ADAPTER_PORT": str(port),
        "LANCE_ADAPTER_PROP_ROOT": str(tmp_path / "env-root"),
    }
    process = subprocess.Popen([CLI, "serve"], env=environment, stderr=subprocess.PIPE, text=True)
    try:
        wait_until_serving(f"http://127.0.0.1:{port}", process)
        httpx.post(f"http://127.0.0.1:{port}/v1/namespace/e/create", json={}).raise_for_status()
        assert (tmp_path / "env-root").is_dir()
    finally:
        process.terminate()
        process.wait(timeout=30)
