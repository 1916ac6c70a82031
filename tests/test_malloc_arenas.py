"""`malloc_arenas`: glibc takes the limit (this machine's C library is glibc); 0 leaves its
default; a negative value stops the start with one sentence. `malloc_trim_interval`: each
worker trims while it serves, and stops with it."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from app.config import load_settings
from app.malloc_arenas import MemoryTrimmer, limit_malloc_arenas
from app.server import create_app
from app.settings import Settings
from backends import load_namespace
from backends.core.settings import ConfigurationError


def test_glibc_takes_the_arena_limit() -> None:
    assert limit_malloc_arenas(2) is True
    assert limit_malloc_arenas(0) is False


def test_the_setting_defaults_to_two_and_refuses_a_negative_count() -> None:
    assert load_settings(environ={}).malloc_arenas == 2
    assert load_settings(environ={"LANCE_ADAPTER_MALLOC_ARENAS": "0"}).malloc_arenas == 0
    with pytest.raises(ConfigurationError, match="'malloc_arenas' must be at least 0"):
        load_settings(environ={"LANCE_ADAPTER_MALLOC_ARENAS": "-1"})


def test_a_trimmer_trims_until_stopped_and_a_zero_interval_starts_none() -> None:
    trimmer = MemoryTrimmer(3600.0)
    trimmer.start()
    assert trimmer._thread is not None and trimmer._thread.is_alive()
    assert trimmer.trim() in (True, False)  # glibc's malloc_trim ran
    assert trimmer.trims == 1
    trimmer.stop()
    assert not trimmer._thread.is_alive()
    never = MemoryTrimmer(0)
    never.start()
    assert never._thread is None and never.trim() is False and never.trims == 0


def _trimmers() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "malloc-trim"]


@contextlib.contextmanager
def _served(root: Path, interval: float) -> Iterator[None]:
    """The application served by uvicorn with its lifespan (which starts the trimmer)."""
    settings = Settings(properties={"root": str(root)}, malloc_trim_interval=interval)
    app = create_app(load_namespace("dir", settings.properties), settings)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)  # uvicorn sets a flag, no event, once its lifespan has started
        assert server.started, "the server did not start"
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def test_each_served_worker_runs_a_trimmer_while_it_serves(tmp_path: Path) -> None:
    before = _trimmers()
    with _served(tmp_path, 3600.0):
        (trimmer,) = [thread for thread in _trimmers() if thread not in before]
    trimmer.join(timeout=30)
    assert not trimmer.is_alive()
    with _served(tmp_path, 0):
        assert [thread for thread in _trimmers() if thread not in before] == []
