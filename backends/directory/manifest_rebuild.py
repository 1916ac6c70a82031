"""Rebuilding the directory backend's catalog, the `__manifest` table at its root, when none of
its recent versions reads whole (`backends.directory.manifest_repair` restores one that does
when it can): from its newest older version that reads, completed and corrected by what the
tables themselves record under the root.

- The base: the newest version of the manifest that reads whole, however old (none: empty).
- Its tables are kept where their location still holds anything (a Lance table, a declared
  table's `.lance-reserved`, an ownership record): a table dropped since is gone.
- Every table directory at the root's top level (`<8 hex>_<ns$…$name>` and `<name>.lance`)
  holding a Lance table or a declaration is added under the id its ownership record names
  (the record is authoritative: a renamed table's directory keeps its first name), else the
  id its name gives; one whose record names an id another directory's record claims too is
  left out and logged.
- Every namespace a kept table lies in is kept or added; the base's namespaces keep their
  properties (a namespace created since the base, with no table yet, is lost, and one
  dropped since comes back empty: both logged by count).

The new manifest is committed as an overwrite, a version of its own, so every version before
it stays for an operator to read. Tables registered elsewhere in the root since the base are
not found (only the top level is listed): they can be registered again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import lance
import pyarrow as pa
import pyarrow.fs as pafs

from backends.core.filesystems import table_filesystem
from backends.core.locations import join_location
from backends.core.names import ID_DELIMITER
from backends.directory.layout import DirectoryLayout
from backends.owner_record import OWNER_FILE, read_record

logger = logging.getLogger("lance_adapter")

# What a declared table's directory holds before its first write (pylance's own marker).
RESERVED_FILE = ".lance-reserved"


@dataclass(frozen=True)
class Rebuilt:
    """What a rebuild kept: its base version (0: none read), tables and namespaces."""

    base_version: int
    tables: int
    namespaces: int
    dropped: int  # tables of the base whose location holds nothing now


def rebuild(manifest: str, root: str, options: Mapping[str, str] | None) -> Rebuilt:
    """Commit a new version of the manifest at `manifest` (under `root`) rebuilt as the
    module's docstring says."""
    storage = dict(options or {}) or None
    dataset = lance.dataset(manifest, storage_options=storage)
    base_version, rows = _newest_whole_rows(dataset)
    tables = {row["object_id"]: row for row in rows if row["object_type"] == "table"}
    kept = {key: row for key, row in tables.items()
            if _holds_anything(join_location(root, row["location"] or ""), storage)}
    for object_id, location in _tables_on_disk(root, storage).items():
        kept.setdefault(object_id, {"object_id": object_id, "object_type": "table",
                                    "location": location, "metadata": None,
                                    "base_objects": None})
    namespaces = {row["object_id"]: row for row in rows if row["object_type"] == "namespace"}
    for object_id in kept:
        parts = object_id.split(ID_DELIMITER)[:-1]
        for depth in range(1, len(parts) + 1):
            name = ID_DELIMITER.join(parts[:depth])
            namespaces.setdefault(name, {"object_id": name, "object_type": "namespace",
                                         "location": None, "metadata": None,
                                         "base_objects": None})
    rebuilt = [*namespaces.values(), *kept.values()]
    lance.write_dataset(pa.Table.from_pylist(rebuilt, schema=dataset.schema), manifest,
                        mode="overwrite", storage_options=storage)
    dropped = sum(1 for object_id in tables if object_id not in kept)
    return Rebuilt(base_version, len(kept), len(namespaces), dropped)


def _newest_whole_rows(dataset: lance.LanceDataset) -> tuple[int, list[dict]]:
    """The rows of the newest version that reads whole, and that version (0, []: none)."""
    for version in sorted((entry["version"] for entry in dataset.versions()), reverse=True):
        try:
            return version, dataset.checkout_version(version).to_table().to_pylist()
        except (OSError, RuntimeError, ValueError):
            continue
    return 0, []


def _tables_on_disk(root: str, storage: dict[str, str] | None) -> dict[str, str]:
    """The tables found in the top-level directories of `root`: id -> location as the
    manifest stores it (relative to the root)."""
    filesystem, path = table_filesystem(root, storage)
    found: dict[str, list[str]] = {}
    for info in filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True)):
        name = info.base_name
        named = DirectoryLayout().owner((name,))
        if info.type != pafs.FileType.Directory or named is None:
            continue
        location = join_location(root, name)
        if not _holds_anything(location, storage, table_only=True):
            continue
        record = read_record(location, storage)
        owner = record.owner if record is not None else list(named)
        found.setdefault(ID_DELIMITER.join(owner), []).append(name)
    tables = {}
    for object_id, names in found.items():
        if len(names) == 1:
            tables[object_id] = names[0]
        else:
            logger.warning("rebuilding the namespace manifest: %d directories hold table %s; "
                           "none is kept", len(names), object_id)
    return tables


def _holds_anything(location: str, storage: dict[str, str] | None,
                    table_only: bool = False) -> bool:
    """Whether `location` holds a Lance table or a declaration (`table_only`), or any file."""
    filesystem, path = table_filesystem(location, storage)
    names = {info.base_name for info in filesystem.get_file_info(
        pafs.FileSelector(path, allow_not_found=True))}
    if not table_only and OWNER_FILE in names:
        return True
    return RESERVED_FILE in names or "_versions" in names
