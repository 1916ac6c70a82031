"""`malloc_arenas`: glibc takes the limit (this machine's C library is glibc); 0 leaves its
default; a negative value stops the start with one sentence. `malloc_trim_interval`: each
worker trims while it serves, and stops with it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from app.config import load_settings
from app.malloc_arenas import MemoryTrimmer, limit_malloc_arenas
from backends.core.settings import ConfigurationError
from tests.support.adapter import running_server


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
    trimmer.trim()
    assert trimmer.trims == 1  # glibc's malloc_trim was called
    trimmer.stop()
    assert not trimmer._thread.is_alive()
    never = MemoryTrimmer(0)
    never.start()
    assert never._thread is None and never.trim() is False and never.trims == 0


def _trimmers() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "malloc-trim"]


def test_each_served_worker_runs_a_trimmer_while_it_serves(tmp_path: Path) -> None:
    before = _trimmers()
    root = {"root": str(tmp_path)}
    with running_server("dir", root, lifespan="on", malloc_trim_interval=3600.0):
        (trimmer,) = [thread for thread in _trimmers() if thread not in before]
    trimmer.join(timeout=30)
    assert not trimmer.is_alive()
    with running_server("dir", root, lifespan="on", malloc_trim_interval=0):
        assert [thread for thread in _trimmers() if thread not in before] == []
