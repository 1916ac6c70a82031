"""The sweep of a local `dir` root, part of a maintenance pass: the table directories a killed
CreateTable or DeclareTable left behind, neither registered in the manifest nor holding a
committed version, and abandoned: nothing in them changed for `abandoned_after` seconds.

Only directories that look like tables are candidates: named `<name>.lance` or
`<8 hex>_<id>` (the native layout of nested tables), holding nothing but Lance table entries.
Any other directory is left alone (descended into, for nested layouts), never removed.

A CreateTable in flight, in this server or in another replica on the same root, looks exactly
like an orphan but for its age: its files are being written. So the sweep is never a side
effect of a start, and it removes only what has not changed for far longer than any create
takes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

import lance
from lance_namespace import InvalidInputError

from backends.core.locations import join_location, local_directory, storage_root
from backends.tables.keys import NOTES_DIRECTORY

logger = logging.getLogger("lance_adapter")

MANIFEST_DIRECTORY = "__manifest"
# Lance's entries of a table directory, and the server's notes of idempotency keys.
TABLE_ENTRIES = frozenset({"_versions", "_transactions", "data", "_indices", "_deletions",
                           "_refs", ".lance-reserved", NOTES_DIRECTORY})
_TABLE_NAME = re.compile(r"^(?:.+\.lance|[0-9a-f]{8}_.+)$")
MAX_DEPTH = 4


def manifest_tables(
    root: str, storage_options: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """Each table of the manifest under `root` (a path or an object-store URI): its `$`-joined
    id and its location as stored (relative to the root, or a full URI); None when there is no
    readable manifest."""
    local = local_directory(root)
    if local is not None and not (local / MANIFEST_DIRECTORY).is_dir():
        return None
    manifest = str(local / MANIFEST_DIRECTORY) if local is not None else join_location(
        storage_root(root), MANIFEST_DIRECTORY
    )
    columns = ["object_id", "object_type", "location"]
    try:
        dataset = lance.dataset(manifest, storage_options=dict(storage_options or {}) or None)
        rows = dataset.to_table(columns=columns).to_pylist()
    except (OSError, ValueError, RuntimeError):
        return None
    return {row["object_id"]: row["location"] or "" for row in rows
            if row["object_type"] == "table"}


def registered_locations(root: Path) -> set[Path] | None:
    """Resolved locations of every table in the manifest; None when it cannot be read."""
    manifest = root / MANIFEST_DIRECTORY
    if not manifest.is_dir():
        return set()
    try:
        rows = lance.dataset(str(manifest)).to_table(columns=["location"]).column(0)
        paths = [local_directory(location, root) for location in rows.to_pylist() if location]
    except (OSError, ValueError, RuntimeError, InvalidInputError) as error:
        logger.warning("orphan sweep skipped: the manifest cannot be read: %s", error)
        return None
    return {path.resolve() for path in paths if path is not None}


def _looks_like_table(directory: Path) -> bool:
    if not _TABLE_NAME.match(directory.name):
        return False
    entries = {entry.name for entry in directory.iterdir()}
    return entries <= TABLE_ENTRIES


def _has_committed_version(directory: Path) -> bool:
    versions = directory / "_versions"
    return versions.is_dir() and any(p.suffix == ".manifest" for p in versions.iterdir())


def orphan_directories(root: Path, registered: set[Path], depth: int = 0) -> list[Path]:
    orphans: list[Path] = []
    for directory in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        if depth == 0 and directory.name == MANIFEST_DIRECTORY:
            continue
        if directory.resolve() in registered:
            continue
        if _looks_like_table(directory):
            if not _has_committed_version(directory):
                orphans.append(directory)
        elif depth < MAX_DEPTH:
            orphans.extend(orphan_directories(directory, registered, depth + 1))
    return orphans


def last_change(directory: Path) -> float:
    """When anything in `directory` (itself, its directories and files) last changed."""
    latest = directory.stat().st_mtime
    for parent, directories, files in os.walk(directory):
        for name in (*directories, *files):
            with contextlib.suppress(OSError):  # removed meanwhile
                latest = max(latest, os.lstat(os.path.join(parent, name)).st_mtime)
    return latest


def sweep_orphans(root: str, abandoned_after: float, now: float | None = None) -> list[Path]:
    """Remove the orphan table directories under a local `root` in which nothing changed for
    `abandoned_after` seconds (before `now`, the clock's time by default)."""
    path = local_directory(root)
    if path is None or not path.is_dir():
        return []
    registered = registered_locations(path)
    if registered is None:
        return []
    cutoff = (time.time() if now is None else now) - abandoned_after
    removed = []
    for orphan in orphan_directories(path, registered):
        if last_change(orphan) > cutoff:
            continue
        logger.warning("removing orphan table directory %s: not in the manifest, no "
                       "committed version and unchanged for %.0f s (left by an interrupted "
                       "create)", orphan, abandoned_after)
        shutil.rmtree(orphan, ignore_errors=True)
        removed.append(orphan)
    return removed
