from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server import running_server


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    root = tmp_path / "lance-data"
    root.mkdir()
    return root


@pytest.fixture
def dir_server(data_root: Path) -> Iterator[str]:
    """The adapter on the embedded directory backend; yields its base URL."""
    with running_server("dir", {"root": str(data_root)}) as url:
        yield url


# Session fixtures of the real Hive Metastore, shared by every Hive test module.
pytest_plugins = ("tests.hive_support",)
