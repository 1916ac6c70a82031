"""`malloc_arenas`: glibc takes the limit (this machine's C library is glibc); 0 leaves its
default; a negative value stops the start with one sentence."""

from __future__ import annotations

import pytest

from app.config import load_settings
from app.malloc_arenas import limit_malloc_arenas
from backends.core.settings import ConfigurationError


def test_glibc_takes_the_arena_limit() -> None:
    assert limit_malloc_arenas(2) is True
    assert limit_malloc_arenas(0) is False


def test_the_setting_defaults_to_two_and_refuses_a_negative_count() -> None:
    assert load_settings(environ={}).malloc_arenas == 2
    assert load_settings(environ={"LANCE_ADAPTER_MALLOC_ARENAS": "0"}).malloc_arenas == 0
    with pytest.raises(ConfigurationError, match="'malloc_arenas' must be at least 0"):
        load_settings(environ={"LANCE_ADAPTER_MALLOC_ARENAS": "-1"})
