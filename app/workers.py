"""Running several worker processes: what the supervisor prepares for them, and how each
worker builds its app.

The workers share a private runtime directory (the metadata cache's generation counter, and
the settings, which may hold secrets: in a 0600 file, never in the environment) and a
metrics directory. A worker ends with its supervisor, also when the supervisor is killed
with SIGKILL and cannot stop it.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from app.config import Settings
from app.observability import MULTIPROC_ENV
from app.server import AdapterApp, create_app
from backends import load_namespace

SETTINGS_FILE_ENV = "LANCE_ADAPTER_SETTINGS_FILE"
RUNTIME_DIR_ENV = "LANCE_ADAPTER_RUNTIME_DIR"
SUPERVISOR_PID_ENV = "LANCE_ADAPTER_SUPERVISOR_PID"
_PR_SET_PDEATHSIG = 1


def prepare_worker_environment(settings: Settings) -> None:
    """In the supervisor, before uvicorn starts the workers."""
    _prepare_multiprocess_metrics()
    _prepare_runtime_dir(settings)
    os.environ[SUPERVISOR_PID_ENV] = str(os.getpid())


def _prepare_multiprocess_metrics() -> None:
    """Workers share their metrics through files in PROMETHEUS_MULTIPROC_DIR."""
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        for stale in Path(directory).glob("*.db"):
            stale.unlink()
    else:
        directory = tempfile.mkdtemp(prefix="lance-adapter-metrics-")
        os.environ[MULTIPROC_ENV] = directory
        atexit.register(shutil.rmtree, directory, ignore_errors=True)


def _prepare_runtime_dir(settings: Settings) -> None:
    directory = tempfile.mkdtemp(prefix="lance-adapter-run-")  # 0700
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    settings_file = Path(directory) / "settings.json"
    descriptor = os.open(settings_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as output:
        output.write(settings.to_json())
    os.environ[RUNTIME_DIR_ENV] = directory
    os.environ[SETTINGS_FILE_ENV] = str(settings_file)


def _end_with_supervisor() -> None:
    """Ask the kernel for SIGTERM when the supervisor dies (Linux), so no orphaned worker
    keeps serving; a supervisor already gone before the request is caught by its pid."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    supervisor = os.environ.get(SUPERVISOR_PID_ENV)
    if supervisor and os.getppid() != int(supervisor):
        os.kill(os.getpid(), signal.SIGTERM)


def create_app_from_environment() -> AdapterApp:
    """The uvicorn factory used by worker processes: settings come from the supervisor."""
    _end_with_supervisor()
    settings = Settings.from_json(Path(os.environ[SETTINGS_FILE_ENV]).read_text())
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client.multiprocess import mark_process_dead

        atexit.register(mark_process_dead, os.getpid())
    namespace = load_namespace(settings.impl, settings.properties)
    return create_app(namespace, settings, Path(os.environ[RUNTIME_DIR_ENV]))
