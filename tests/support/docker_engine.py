"""A private Docker engine for the image tests (scripts/docker-engine.sh does the work).

The engine runs with host networking only and no iptables, so it changes nothing in the
host's network; its images and build cache persist in .cache/docker under the repository
so a rerun rebuilds only what changed. One engine at a time per checkout: a file lock
serialises test sessions (and pytest-xdist workers) that want it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ENGINE_SCRIPT = ROOT / "scripts" / "docker-engine.sh"
CACHE = ROOT / ".cache" / "docker"
DATA_ROOT = CACHE / "data"
PID_FILE = CACHE / "engine.pid"
BASE_IMAGE = "local/python:3.11-slim-bookworm"
DOCKER = "/usr/bin/docker"


class EngineUnavailable(RuntimeError):
    """The engine could not be installed or started; the message says why."""


def run(command: list[str | Path], timeout: float, **options: Any) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, **options)


def network_state() -> dict[str, str]:
    """What a misconfigured engine would change: forwarding, interfaces and routes."""
    state = {"ip_forward": Path("/proc/sys/net/ipv4/ip_forward").read_text().strip(),
             "interfaces": " ".join(sorted(os.listdir("/sys/class/net"))),
             "routes": Path("/proc/net/route").read_text()}
    if shutil.which("iptables-save"):
        rules = run(["iptables-save", "-t", "nat"], 30).stdout.splitlines()
        state["nat"] = "\n".join(line for line in rules if not line.startswith("#"))
    return state


@dataclass(frozen=True)
class Engine:
    host: str

    def env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, "DOCKER_HOST": self.host, **extra}

    def docker(self, *arguments: str | Path, timeout: float = 300) -> subprocess.CompletedProcess:
        return run([DOCKER, *arguments], timeout, env=self.env())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop_leftover_engine() -> None:
    """An engine a killed test session left running on DATA_ROOT, stopped by its pid."""
    try:
        pid = int(PID_FILE.read_text())
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return
    if command[0].endswith(b"dockerd") and str(DATA_ROOT).encode() in command:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.5)
    PID_FILE.unlink(missing_ok=True)


def _script(*arguments: str | Path, timeout: float, env: dict[str, str] | None = None) -> str:
    result = run(["bash", ENGINE_SCRIPT, *arguments], timeout, env=env)
    if result.returncode != 0:
        raise EngineUnavailable(f"docker-engine.sh {arguments[0]}: {result.stderr.strip()}")
    return result.stdout.strip()


@contextmanager
def private_engine() -> Iterator[Engine]:
    """Installs and starts the engine with the base image imported; stops it afterwards."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "engine.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _stop_leftover_engine()
        _script("install", timeout=900)
        network_before = network_state()  # after install: it may add iptables-save
        run_dir = Path(tempfile.mkdtemp(prefix="lde-", dir="/tmp"))  # short socket path
        try:
            with _running(run_dir) as engine:
                yield engine
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)
        if network_state() != network_before:
            raise AssertionError("the Docker engine left a change in the host's network")


@contextmanager
def _running(run_dir: Path) -> Iterator[Engine]:
    host = _script("start", run_dir, DATA_ROOT, timeout=180)
    pid = int((run_dir / "dockerd.launched.pid").read_text())
    PID_FILE.write_text(str(pid))
    try:
        engine = Engine(host)
        _script("base-image", CACHE, timeout=1200, env=engine.env())
        engine.docker("container", "prune", "--force")  # what a killed run left stopped
        yield engine
        engine.docker("image", "prune", "--force")  # layers the rebuilds replaced
    finally:
        _script("stop", run_dir, timeout=120)
        PID_FILE.unlink(missing_ok=True)
        if _alive(pid):
            raise EngineUnavailable(f"dockerd {pid} is still running after stop")
        if mounts_below(run_dir):
            raise EngineUnavailable(f"mounts left after stop: {mounts_below(run_dir)}")


def mounts_below(directory: Path) -> list[str]:
    below = f"{directory}/"
    return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[1].startswith(below)]
