"""Spark's Python daemon for local sessions, loading pyspark from its cached byte code.

Spark starts its Python daemon with `$SPARK_HOME/python/lib/pyspark.zip` and py4j's zip
first on the path. Python never caches the byte code of zip imports, so every daemon
compiles pyspark's modules again (0.4 s here) and each task process it forks compiles
the ones it imports next. When the same pyspark and py4j are installed, as with a
pip-installed Spark, this daemon moves those zips behind the installed packages and then
runs pyspark's own daemon, whose task processes inherit that order.

`lance_adapter_spark.local_python`'s launcher starts it in local sessions (docs/spark.md,
Set-up). It imports nothing from pyspark before reordering the path.
"""

from __future__ import annotations

import sys
import zipfile
from importlib.machinery import PathFinder
from pathlib import Path

ZIPPED_PACKAGES = {"pyspark.zip": "pyspark", "py4j-": "py4j"}  # zip name prefix -> package


def zipped_package(entry: str) -> str | None:
    """The package a Spark zip on the path holds, or None for any other entry."""
    name = Path(entry).name
    if not name.endswith(".zip"):
        return None
    return next((pkg for prefix, pkg in ZIPPED_PACKAGES.items() if name.startswith(prefix)), None)


def installed_alike(entry: str, package: str, path: list[str]) -> bool:
    """Whether `package` is installed on `path` in the version `entry` (its zip) holds."""
    spec = PathFinder.find_spec(package, path)
    if spec is None or not spec.submodule_search_locations:
        return False
    installed = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        with zipfile.ZipFile(entry) as archive:
            return archive.read(f"{package}/version.py") == installed.read_bytes()
    except (OSError, KeyError, zipfile.BadZipFile):
        return False


def prefer_installed(path: list[str]) -> list[str]:
    """`path` with each Spark zip whose package is installed alike moved to its end."""
    others = [entry for entry in path if zipped_package(entry) is None]
    moved = [
        entry
        for entry in path
        if (package := zipped_package(entry)) and installed_alike(entry, package, others)
    ]
    return [entry for entry in path if entry not in moved] + moved


if __name__ == "__main__":
    sys.path[:] = prefer_installed(sys.path)
    from pyspark.daemon import manager

    manager()
