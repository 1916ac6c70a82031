"""Small helpers every kind of test uses: a free loopback port, unique names, `run_python`,
the one way a test runs Python code in a fresh interpreter, and `skip_unless_ci`, the one way
a test skips."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

# Appended to every script `run_python` runs: once the script has printed its answer, the
# process leaves without interpreter finalization, where third-party native threads (Daft's,
# Ray's) can crash and turn finished work into a failure. A script that raises never gets here,
# so a crash before the answer still fails.
_LEAVE_WITHOUT_FINALIZING = """
import os as _os, sys as _sys
_sys.stdout.flush()
_sys.stderr.flush()
_os._exit(0)
"""


# Sockets that hold the ports `free_port` gave, for the whole test session.
_RESERVED_PORTS: list[socket.socket] = []


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is kept for the caller for the rest of the session.

    The port stays bound (SO_REUSEADDR, never listening) by this process, so the system gives it
    to no other socket, here or in a concurrent test run, while a server that binds with
    SO_REUSEADDR (uvicorn, the CLI, Java's and Go's server sockets) can still listen on it. Until
    one does, connecting to it is refused, so it also serves as an address where nothing
    listens."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))
    _RESERVED_PORTS.append(holder)
    return holder.getsockname()[1]


def stop_process(process: subprocess.Popen | None, grace_seconds: float = 20) -> None:
    """Stop a server the tests started: SIGTERM, then SIGKILL after `grace_seconds`."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def unique(prefix: str) -> str:
    """`prefix` with a random suffix: a name no other test (or earlier run) has used."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def run_python(
    code: str, *arguments: str, env: dict[str, str] | None = None,
    cwd: str | Path | None = None, timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run `code` (with `arguments` as `sys.argv[1:]`) in a fresh interpreter of this venv and
    return what it printed and its exit status; see `_LEAVE_WITHOUT_FINALIZING`."""
    return subprocess.run(
        [sys.executable, "-c", code + "\n" + _LEAVE_WITHOUT_FINALIZING, *arguments],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
    )


def under_ci() -> bool:
    """Whether the suite runs under CI: CI services (GitHub Actions, GitLab, Buildkite, ...)
    set `CI` in the environment; `.ci/run` itself sets nothing."""
    return os.environ.get("CI", "").lower() not in {"", "0", "false", "no"}


def skip_unless_ci(reason: str) -> NoReturn:
    """Skip the test, but fail it under CI: there, a skip would hide work that was never done
    (the machine lacks what the test needs, which CI's machine must have)."""
    if under_ci():
        pytest.fail(f"not skipped under CI: {reason}", pytrace=False)
    pytest.skip(reason)


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """`values` in the process's environment for the block, the earlier ones after it."""
    earlier = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in earlier.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def scratch_directory(prefix: str) -> Iterator[Path]:
    """A new directory under the system's temporary one, removed after the block."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
