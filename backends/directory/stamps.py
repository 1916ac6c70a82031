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
from backends.hooks import Stamp, Stamper


def _modified_ns(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


@functools.lru_cache(maxsize=4096)  # asked on every validated hit of a DescribeTable entry
def _table_paths(location: str | None) -> tuple[str, str] | None:
    """Where Lance opens `location` on the local file system (`backends.core.locations`),
    and its `_versions` directory: strings, made once (a hit stats them, nothing more)."""
    if not location:
        return None
    try:
        place = resolve_stored(location)
    except InvalidInputError:
        return None
    if place.scheme != "file":
        return None
    table = Path(place.uri)
    return str(table), str(table / "_versions")


def directory_stamper(
    root: Path, remembered_location: Callable[[list[str]], str | None]
) -> Stamper:
    """Stamps of a local `dir` root: what a change to a namespace, listing or table touches.

    A table version, a manifest version (create, drop, declare, register, namespaces) and a
    table or namespace directory all appear as a new file in a directory whose modification
    time the stamp holds. A count depends on its table's data too: it is stamped only when
    `remembered_location` knows where the table is (without a lookup) and that is on the
    local file system, where a commit shows in the table's `_versions` directory.
    """
    root = root.absolute()
    watched, manifests = str(root), str(root / "__manifest" / "_versions")

    def root_times() -> tuple[int | None, int | None]:
        return _modified_ns(watched), _modified_ns(manifests)

    def stamp(operation_id: str, table_id: list[str] | None, answer: Any) -> Stamp | None:
        if operation_id == "CountTableRows":
            table = _table_paths(remembered_location(table_id) if table_id else None)
            if table is None:
                return None
        elif operation_id == "DescribeTable":
            table = _table_paths(getattr(answer, "location", None))
        else:
            return root_times()
        times = root_times()
        if table is None:
            return (*times, None, None)
        return (*times, _modified_ns(table[0]), _modified_ns(table[1]))

    return stamp
