"""Running several worker processes: what the supervisor prepares for them, and how each
worker builds its app.

The workers share a private runtime directory (the metadata cache's generation counter, and
the settings, which may hold secrets: in a 0600 file, sealed with a one-time pad that only the
processes' environment holds, so that neither the file a crash leaves nor an environment holds
a secret) and a metrics directory. Where they are crosses the
fork in the environment (`Handover`), the one place the server passes settings that way. A
worker ends with its supervisor, also when the supervisor is killed with SIGKILL and cannot
stop it.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import values as prometheus_values
from prometheus_client.multiprocess import mark_process_dead

from app.config import lance_session, served_backend
from app.server import AdapterApp, create_app
from app.settings import Settings

SETTINGS_FILE_ENV = "LANCE_ADAPTER_SETTINGS_FILE"
SETTINGS_KEY_ENV = "LANCE_ADAPTER_SETTINGS_KEY"
RUNTIME_DIR_ENV = "LANCE_ADAPTER_RUNTIME_DIR"
SUPERVISOR_PID_ENV = "LANCE_ADAPTER_SUPERVISOR_PID"
# prometheus_client's own: it reads it too, in every process, to keep its values in files.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Handover:
    """What each worker gets from its supervisor. uvicorn starts a worker by an import string,
    so this crosses the fork in the environment: the one place the server passes settings
    through the environment (they are arguments everywhere else)."""

    settings_file: Path
    settings_key: str  # the pad the settings file is sealed with, in hex
    runtime_dir: Path
    metrics_dir: str
    supervisor_pid: int

    def export(self) -> None:
        """In the supervisor: the environment the workers inherit."""
        os.environ.update({
            SETTINGS_FILE_ENV: str(self.settings_file),
            SETTINGS_KEY_ENV: self.settings_key,
            RUNTIME_DIR_ENV: str(self.runtime_dir),
            MULTIPROC_ENV: self.metrics_dir,
            SUPERVISOR_PID_ENV: str(self.supervisor_pid),
        })

    @classmethod
    def received(cls) -> Handover:
        """In a worker: what the supervisor exported."""
        return cls(
            Path(os.environ[SETTINGS_FILE_ENV]),
            os.environ[SETTINGS_KEY_ENV],
            Path(os.environ[RUNTIME_DIR_ENV]),
            os.environ[MULTIPROC_ENV],
            int(os.environ[SUPERVISOR_PID_ENV]),
        )


def prepare_worker_environment(settings: Settings) -> None:
    """In the supervisor, after the backend was loaded and before uvicorn starts the workers."""
    runtime_dir = _prepare_runtime_dir()
    if settings.malloc_arenas > 0:  # read by glibc as each worker starts, before any thread
        os.environ["MALLOC_ARENA_MAX"] = str(settings.malloc_arenas)
    settings_file, key = _write_settings(settings, runtime_dir)
    Handover(settings_file, key, runtime_dir, _prepare_multiprocess_metrics(),
             os.getpid()).export()


def _prepare_multiprocess_metrics() -> str:
    """Workers share their metrics through files in PROMETHEUS_MULTIPROC_DIR: the operator's
    (docs/operations.md), emptied, else a temporary one."""
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        for stale in Path(directory).glob("*.db"):
            stale.unlink()
        return directory
    directory = tempfile.mkdtemp(prefix="lance-adapter-metrics-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


def _prepare_runtime_dir() -> Path:
    directory = tempfile.mkdtemp(prefix="lance-adapter-run-")  # 0700
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return Path(directory)


def _write_settings(settings: Settings, runtime_dir: Path) -> tuple[Path, str]:
    """The settings file, sealed with a one-time pad, and the pad (hex). The file outlives a
    supervisor killed with SIGKILL (nothing removes it then); the pad dies with the processes."""
    settings_file = runtime_dir / "settings.sealed"
    plain = settings.to_json().encode()
    pad = os.urandom(len(plain))
    descriptor = os.open(settings_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as output:
        output.write(_xor(plain, pad))
    return settings_file, pad.hex()


def _xor(data: bytes, pad: bytes) -> bytes:
    return (int.from_bytes(data, "big") ^ int.from_bytes(pad, "big")).to_bytes(len(data), "big")


def _read_settings(handover: Handover) -> Settings:
    sealed = handover.settings_file.read_bytes()
    return Settings.from_json(_xor(sealed, bytes.fromhex(handover.settings_key)).decode())


def _end_with_supervisor(supervisor_pid: int) -> None:
    """Ask the kernel for SIGTERM when the supervisor dies (Linux), so no orphaned worker
    keeps serving; a supervisor already gone before the request is caught by its pid."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != supervisor_pid:
        os.kill(os.getpid(), signal.SIGTERM)


def _metric_values_of_this_process() -> None:
    """prometheus_client's values shared through files ask the kernel for the process's id
    on every change, to notice a fork (about 5% of a cached DescribeTable's CPU, with the
    seven changes a request makes). A worker is spawned, not forked, and forks nothing that
    runs Python: its values, made after this, take the id it has now."""
    pid = os.getpid()
    prometheus_values.ValueClass = prometheus_values.MultiProcessValue(lambda: pid)


def create_app_from_environment() -> AdapterApp:
    """The uvicorn factory used by worker processes: settings come from the supervisor."""
    handover = Handover.received()
    _end_with_supervisor(handover.supervisor_pid)
    settings = _read_settings(handover)
    atexit.register(mark_process_dead, os.getpid(), handover.metrics_dir)
    _metric_values_of_this_process()
    namespace = served_backend(settings, lance_session(settings))
    return create_app(namespace, settings, handover.runtime_dir, handover.metrics_dir)
