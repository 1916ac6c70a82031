"""Change stamps of a local `dir` root: the modification times (ns; None where a path does not
exist) of the directories a change to a namespace, a listing or a table touches, which the
server's metadata cache compares to validate a hit (`app.cache`)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lance_namespace import InvalidInputError

from backends.core.locations import resolve_stored


def _modified_ns(path: Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


@functools.lru_cache(maxsize=4096)  # asked on every validated hit of a DescribeTable entry
def _local_path(location: str | None) -> Path | None:
    """Where Lance opens `location` on the local file system (`backends.core.locations`)."""
    if not location:
        return None
    try:
        place = resolve_stored(location)
    except InvalidInputError:
        return None
    return Path(place.uri) if place.scheme == "file" else None


def directory_stamper(root: Path) -> Callable[[str, Any], tuple[int | None, ...]]:
    """Stamps of a local `dir` root: what a change to a namespace, listing or table touches.

    A table version, a manifest version (create, drop, declare, register, namespaces) and a
    table or namespace directory all appear as a new file in a directory whose modification
    time the stamp holds.
    """
    root = root.absolute()
    watched = (root, root / "__manifest" / "_versions")

    def stamp(operation_id: str, answer: Any) -> tuple[int | None, ...]:
        times = tuple(_modified_ns(path) for path in watched)
        if operation_id != "DescribeTable":
            return times
        table = _local_path(getattr(answer, "location", None))
        if table is None:
            return (*times, None, None)
        return (*times, _modified_ns(table), _modified_ns(table / "_versions"))

    return stamp
