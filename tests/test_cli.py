"""`lance-adapter serve`: settings from flags, a config file and the environment; clear failures."""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest
import yaml

from app.config import load_settings
from app.settings import Settings
from backends.core.settings import ConfigurationError
from tests.support.cli import CLI, ROOT, cli_environment, start_up_line, wait_until_serving
from tests.support.common import free_port


def run_cli(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CLI, *arguments], capture_output=True, text=True, timeout=120, env=cli_environment(env)
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "tables"
    port = free_port()
    process = subprocess.Popen(
        [CLI, "serve", "--impl", "dir", "--prop", f"root={root}", "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_environment(),
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


def test_a_request_sent_when_the_start_line_is_read_is_answered(tmp_path: Path) -> None:
    """The start-up line comes once the port takes connections: a client that connects as
    soon as it reads the line (README's curl) is answered, never refused."""
    process = subprocess.Popen(
        [CLI, "serve", "--impl", "dir", "--prop", f"root={tmp_path}", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_environment())
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        port = int(line.split(" at http://127.0.0.1:")[1].split('"')[0])
        answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=120)  # no retry
        assert answer.status_code == 200
    finally:
        process.terminate()
        process.communicate(timeout=60)


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
    with pytest.raises(ConfigurationError, match=message):
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


def test_a_root_that_is_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    for root in (tmp_path / "file", tmp_path / "file" / "below"):
        result = run_cli("serve", "--prop", f"root={root}", "--port", str(free_port()))
        assert result.returncode == 2
        assert result.stderr.strip().splitlines() == [
            f"lance-adapter: root '{root}': {tmp_path / 'file'} is not a directory"
        ]


def test_forwarding_to_a_backend_that_checks_no_caller_is_refused_at_start(
    tmp_path: Path,
) -> None:
    result = run_cli("serve", "--prop", f"root={tmp_path}", "--auth-mode", "forward",
                     "--port", str(free_port()))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lance-adapter: auth_mode forward without auth_tokens or auth_tokens_file lets any "
        "bearer token do everything on the dir backend, which checks no caller: set tokens, "
        "use auth_mode token, or set auth_forward_unchecked to accept that"
    ]


def test_an_unknown_log_level_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run_cli("serve", "--prop", f"root={tmp_path}", "--log-level", "verbose")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lance-adapter: setting 'log_level' must be one of 'critical', 'error', 'warning', "
        "'info', 'debug', 'trace', got 'verbose'"
    ]


def test_the_start_up_line_names_the_backend_its_root_and_the_address(tmp_path: Path) -> None:
    line = start_up_line("--prop", f"root={tmp_path}")
    assert line["logger"] == "lance_adapter"
    assert line["message"] == (
        f"serving impl 'dir' (DirectoryNamespace {{ root: \"{tmp_path}\" }}) "
        f"at http://127.0.0.1:{line['port']}"
    )


@pytest.mark.parametrize("impl", ["hive2", "hive3"])
def test_the_hive_backends_start_with_the_hive_extra(impl: str) -> None:
    """The metastore need not be up to start: the server is alive, /readyz tells (without the
    extra, tests/test_extras.py)."""
    line = start_up_line("--impl", impl, "--prop", "uri=thrift://127.0.0.1:1")
    assert line["message"].startswith(f"serving impl '{impl}' ({impl.title()}Namespace {{ uri:")


# ---------------------------------------------------------------- ./run


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """`run`, pyproject.toml and the lock beside a stand-in .venv whose python logs each call
    (and, for a pip call, the constraints it was given)."""
    shutil.copy(ROOT / "run", tmp_path / "run")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "lock").mkdir()
    shutil.copy(ROOT / "lock" / "python.txt", tmp_path / "lock" / "python.txt")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "lance-adapter"):
        stand_in = bin_dir / name
        stand_in.write_text(f'#!/bin/sh\necho "{name} $*" >>"$(dirname "$0")/calls"\n'
                            'case "$*" in *pip*) echo "$PIP_CONSTRAINT" '
                            '>>"$(dirname "$0")/constraints"; ! grep -q fail-pip pyproject.toml'
                            ' ;; esac\n')
        stand_in.chmod(0o755)
    return tmp_path


def test_run_test_beside_a_running_serve_adds_the_test_extra_to_its_venv(
        checkout: Path) -> None:
    """One venv: beside a running `./run serve` (a shared lock on .venv), `./run test` adds the
    test extra to .venv at the same locked versions, and says so."""
    served, _ = run_script(checkout, "serve")  # installs [all] into .venv
    assert served.returncode == 0
    with (checkout / ".venv" / ".in-use").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_SH)  # as the running server's inherited descriptor does
        tests, calls = run_script(checkout, "test", "-q")
    assert tests.returncode == 0, tests.stderr
    assert "adding the test extra to .venv beside the running ./run serve" in tests.stderr
    assert pip_installs(calls) == ["python -m pip install --disable-pip-version-check -e .[test]"]
    assert calls[-1] == "python -m pytest -q"
    assert not (checkout / ".venv-test").exists()


def test_run_test_never_changes_versions_under_a_running_serve(checkout: Path) -> None:
    """After pyproject.toml or the lock changed, an install beside a running server would
    change its packages: `./run test` stops with a sentence and installs nothing."""
    assert run_script(checkout, "serve")[0].returncode == 0
    with (checkout / "lock" / "python.txt").open("a") as lock:
        lock.write("# moved\n")
    with (checkout / ".venv" / ".in-use").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_SH)
        tests, calls = run_script(checkout, "test", "-q")
    assert tests.returncode == 2
    assert tests.stderr.strip() == (
        "./run: a running ./run serve uses .venv, installed before pyproject.toml or lock/ "
        "changed; stop it, then run this again")
    assert calls == []
    tests, calls = run_script(checkout, "test", "-q")  # the server stopped: installs
    assert pip_installs(calls) == ["python -m pip install --disable-pip-version-check -e .[test]"]


def test_every_install_takes_the_locked_versions(checkout: Path) -> None:
    run_script(checkout, "serve")
    run_script(checkout, "test")
    constraints = (checkout / ".venv" / "bin" / "constraints").read_text().splitlines()
    assert len(constraints) == 4  # pip itself, then the project, for each of the two
    assert set(constraints) == {str(checkout / "lock" / "python.txt")}


def run_script(checkout: Path, *arguments: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    calls = checkout / ".venv" / "bin" / "calls"
    calls.unlink(missing_ok=True)
    result = subprocess.run(["bash", checkout / "run", *arguments], capture_output=True,
                            text=True, timeout=120)
    return result, calls.read_text().splitlines() if calls.exists() else []


def pip_installs(calls: list[str]) -> list[str]:
    return [call for call in calls if "pip install" in call and "-e" in call]


def test_run_installs_only_when_pyproject_or_the_lock_changes_and_quietly(checkout: Path) -> None:
    first, calls = run_script(checkout, "serve", "--port", "1")
    assert first.returncode == 0
    # `serve` installs every catalog client: the checkout serves any backend.
    assert pip_installs(calls) == [
        "python -m pip install --disable-pip-version-check -e .[all]"
    ]
    assert calls[-1] == "lance-adapter serve --port 1"
    assert first.stdout == ""
    assert first.stderr.count("\n") == 1 and "installing" in first.stderr

    again, calls = run_script(checkout, "serve")
    assert (again.stderr, pip_installs(calls)) == ("", [])

    tests, calls = run_script(checkout, "test", "-q")
    assert tests.returncode == 0
    assert pip_installs(calls) == ["python -m pip install --disable-pip-version-check -e .[test]"]
    assert calls[-1] == "python -m pytest -q"
    assert pip_installs(run_script(checkout, "serve")[1]) == []  # [test] includes [all]

    with (checkout / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n# changed\n")
    assert len(pip_installs(run_script(checkout, "serve")[1])) == 1
    with (checkout / "lock" / "python.txt").open("a") as lock:
        lock.write("# moved\n")
    assert len(pip_installs(run_script(checkout, "serve")[1])) == 1


def test_run_shows_pips_error_and_retries_next_time(checkout: Path) -> None:
    (checkout / "pyproject.toml").write_text("# fail-pip\n")
    result, _ = run_script(checkout, "serve")
    assert result.returncode == 1
    assert "pip install failed" in result.stderr
    assert not (checkout / ".venv" / ".installed").exists()


def test_a_directory_switch_that_is_not_a_boolean_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run_cli("serve", "--prop", f"root={tmp_path}", "--prop", "manifest_enabled=maybe",
                     "--port", str(free_port()))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lance-adapter: property 'manifest_enabled' must be true or false, got 'maybe'"
    ]
    assert not any(tmp_path.iterdir())


def test_a_root_that_cannot_be_created_is_one_line_and_exit_2() -> None:
    # Under /proc nothing can be made, even by root, whom file modes do not stop.
    result = run_cli("serve", "--prop", "root=/proc/lance-data", "--port", str(free_port()))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lance-adapter: root '/proc/lance-data' cannot be created or written: "
        "No such file or directory"
    ]


def test_an_unknown_property_of_a_built_in_backend_is_one_line_and_exit_2(
    tmp_path: Path,
) -> None:
    result = run_cli("serve", "--prop", f"root={tmp_path}", "--prop", "manifest_enable=false",
                     "--port", str(free_port()))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lance-adapter: unknown property 'manifest_enable': did you mean 'manifest_enabled'?"
    ]


@pytest.mark.parametrize("manifest", ["true", "false"])
def test_an_unreachable_object_store_root_is_one_line_and_exit_2(manifest: str) -> None:
    secret = "server-secret-never-printed"
    result = run_cli(
        "serve", "--port", str(free_port()), "--prop", "root=s3://bucket/lance",
        "--prop", f"manifest_enabled={manifest}",
        "--prop", f"storage.aws_endpoint=http://127.0.0.1:{free_port()}",
        "--prop", "storage.allow_http=true", "--prop", "storage.aws_region=us-east-1",
        "--prop", "storage.aws_access_key_id=AKIDEXAMPLE",
        "--prop", f"storage.aws_secret_access_key={secret}",
        "--prop", "storage.client_max_retries=0",
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith((
        "lance-adapter: cannot open the storage of impl 'dir': ",  # the manifest's first read
        "lance-adapter: cannot reach the root 's3://bucket/lance': ",
    ))
    assert ".rs:" not in lines[0] and "Traceback" not in result.stderr
    assert secret not in result.stderr + result.stdout


def test_version_names_the_installed_release() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"lance-adapter {version('lance-namespace-adapter')}"


def test_config_prints_the_effective_settings_with_secrets_masked(tmp_path: Path) -> None:
    secret = "storage-secret-never-printed"
    root = tmp_path / "not-made"
    result = run_cli(
        "config", "--prop", f"root={root}", "--prop", "storage.aws_region=eu-west-1",
        "--prop", f"storage.aws_secret_access_key={secret}", "--port", "2444",
        env={**os.environ, "LANCE_ADAPTER_AUTH_TOKENS": "token-never-printed"},
    )

    assert result.returncode == 0, result.stderr
    printed = yaml.safe_load(result.stdout)
    assert (printed["impl"], printed["port"], printed["auth_tokens"]) == ("dir", 2444, "****")
    assert printed["properties"] == {
        "root": str(root), "storage.aws_region": "eu-west-1",
        "storage.aws_secret_access_key": "****",
    }
    assert secret not in result.stdout and "never-printed" not in result.stdout
    assert not root.exists()  # validated, never opened


def test_config_refuses_what_serve_would_refuse(tmp_path: Path) -> None:
    result = run_cli("config", "--prop", f"root={tmp_path}", "--prop", "roots=x")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lance-adapter: unknown property 'roots': did you mean 'root'?"
    ]


def test_run_serve_runs_in_the_callers_directory(checkout: Path, tmp_path: Path) -> None:
    (checkout / ".venv" / "bin" / "lance-adapter").write_text('#!/bin/sh\npwd >"$0.cwd"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    result = subprocess.run(["bash", checkout / "run", "serve", "--config", "adapter.yaml"],
                            cwd=elsewhere, capture_output=True, text=True, timeout=120)

    assert result.returncode == 0, result.stderr
    # --config adapter.yaml is then the caller's file, not one in the checkout.
    cwd_file = checkout / ".venv" / "bin" / "lance-adapter.cwd"
    assert cwd_file.read_text().strip() == str(elsewhere)
