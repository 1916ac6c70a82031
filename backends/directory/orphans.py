"""Start-up sweep of a local `dir` root: the table directories a killed CreateTable or
DeclareTable left behind, neither registered in the manifest nor holding a committed version.

Only directories that look like tables are candidates: named `<name>.lance` or
`<8 hex>_<id>` (the native layout of nested tables), holding nothing but Lance table entries.
Any other directory is left alone (descended into, for nested layouts), never removed.

A root is swept once per server: a worker must not sweep while its siblings serve, since
their CreateTable in flight looks exactly like an orphan. The roots swept so far
(`swept_roots`) reach the workers as an argument (`mark_swept`, called by `app.workers`).
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

import lance
from lance_namespace import InvalidInputError

from backends.core.locations import join_location, local_directory, storage_root

logger = logging.getLogger("lance_adapter")

MANIFEST_DIRECTORY = "__manifest"
TABLE_ENTRIES = frozenset(
    {"_versions", "_transactions", "data", "_indices", "_deletions", "_refs", ".lance-reserved"}
)
_TABLE_NAME = re.compile(r"^(?:.+\.lance|[0-9a-f]{8}_.+)$")
MAX_DEPTH = 4
# Roots already swept by this process or, through `mark_swept`, by its supervisor.
_swept: set[str] = set()


def swept_roots() -> list[str]:
    """The local roots this process swept, or was told were swept."""
    return sorted(_swept)


def mark_swept(roots: Iterable[str]) -> None:
    """Roots the supervisor swept: a worker does not sweep them again."""
    _swept.update(roots)


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


def sweep_orphans(root: str) -> list[Path]:
    """Remove the orphan table directories under a local `root`, once per server."""
    path = local_directory(root)
    if path is None or not path.is_dir() or str(path) in _swept:
        return []
    registered = registered_locations(path)
    if registered is None:
        return []
    orphans = orphan_directories(path, registered)
    for orphan in orphans:
        logger.warning("removing orphan table directory %s: not in the manifest and no "
                       "committed version (left by an interrupted create)", orphan)
        shutil.rmtree(orphan, ignore_errors=True)
    _swept.add(str(path))
    return orphans
