"""How the `dir` backend lays tables out on storage: `DirectoryLayout` (each id's own path),
which ids fit the file system, and renaming a root table of a local root.

The native namespace also finds root tables by listing `<name>.lance` directories, so a root
table renamed by re-registering alone would still be listed (and its name taken) under its
old directory. Its directory is moved first, atomically on a local file system; a failed
re-registration moves it back. Object storage has no atomic move: there such a rename is
refused before anything changes.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from lance_namespace import (
    InvalidInputError,
    InvalidTableStateError,
    LanceNamespace,
    RenameTableRequest,
    TableAlreadyExistsError,
    UnsupportedOperationError,
)

from backends.core.locations import (
    is_relative,
    join_location,
    local_directory,
    resolve_stored,
    storage_root,
)
from backends.core.names import ID_DELIMITER, joined_id
from backends.layouts import TABLE_SUFFIX, TableLayout
from backends.owner_record import read_record
from backends.tables import lifecycle
from backends.tables.datasets import TableLocation, has_data
from backends.tables.lifecycle import renamed_id
from backends.tables.refs import MAX_FILE_NAME_BYTES

if TYPE_CHECKING:
    from backends.directory.renames import RootRenames

_NESTED_TABLE = re.compile(r"[0-9a-f]{8}_(.+)")


# The native storage layer percent-encodes a name's bytes when it walks the root, so a
# directory name must fit the file system's limit once encoded: a longer one would make
# every listing of the root fail.
_NESTED_PREFIX_BYTES = len("0123abcd_")


# Percent-encodings the native layer may stack on a name between the request and the file
# system (seen: three, `%F2` stored as `%2525F2`; the lookup of a root table adds one).
_ENCODING_PASSES = 4


def storable_id(table_id: list[str]) -> bool:
    """True when the table's directory name fits the file system however it is encoded."""
    joined = joined_id(table_id)
    name = f"{joined}.lance" if len(table_id) == 1 else joined
    for _ in range(_ENCODING_PASSES):
        name = quote(name, safe="")
    encoded = len(name) + (0 if len(table_id) == 1 else _NESTED_PREFIX_BYTES)
    return encoded <= MAX_FILE_NAME_BYTES


def require_storable_id(table_id: list[str]) -> None:
    """InvalidInputError unless the table's directory name fits the file system."""
    if not storable_id(table_id):
        joined = joined_id(table_id)
        raise InvalidInputError(
            f"table id {joined[:40]}... is too long to store: its directory name, "
            f"percent-encoded, would pass the file system's {MAX_FILE_NAME_BYTES} bytes"
        )


def listed_directory(root: Path | None, table: TableLocation) -> Path | None:
    """The directory that makes `table` a listed root table, if it has one."""
    if len(table.id) != 1:
        return None
    name = f"{table.id[0]}{TABLE_SUFFIX}"
    if root is None:
        if table.location.rstrip("/").endswith(f"/{name}"):
            raise UnsupportedOperationError(
                "a root table on object storage cannot be renamed (its directory cannot be "
                "moved atomically); tables in a namespace can"
            )
        return None
    directory = local_directory(table.location)
    return directory if directory == root / name else None


def rename_root_table(
    namespace: LanceNamespace, request: RenameTableRequest, table: TableLocation, old: Path,
    renames: RootRenames,
) -> None:
    """Move the table's directory to the one its new id gets, then re-register it there,
    holding the rename's intent meanwhile (`backends.directory.renames`): a kill half-way is
    finished by a later request."""
    if not has_data(table):
        # Declared again where the native namespace puts the new id; the old directory holds
        # only the declaration's reservation.
        lifecycle.rename_by_reregistering(namespace, request, table, None)
        shutil.rmtree(old, ignore_errors=True)
        return
    record = read_record(table.location, table.options)
    if record is not None and record.cloned:
        raise InvalidTableStateError(
            f"table {joined_id(table.id)} has shallow clones, which read its data files where "
            "they are: a root table's rename would move them")
    new_id = renamed_id(request)
    if len(new_id) == 1:
        new_name = f"{new_id[0]}{TABLE_SUFFIX}"
    else:  # never listed as a root table: no `.lance` suffix
        new_name = f"{uuid.uuid4().hex[:8]}_{'$'.join(new_id)}"
    new = old.parent / new_name
    if new.exists():
        raise TableAlreadyExistsError(f"table {'$'.join(new_id)} already exists")
    with renames.intent(list(table.id), new_id, old.name, new.name):
        os.rename(old, new)
        try:
            moved = dataclasses.replace(table, location=str(new))
            lifecycle.rename_by_reregistering(namespace, request, moved, moved.location)
        except BaseException:
            os.rename(new, old)
            raise


class DirectoryLayout(TableLayout):
    """pylance's directory layout: a root table at `<root>/<name>.lance`, a table inside a
    namespace at `<root>/<8 hex>_<namespace$…$table>` (the hex digits differ per creation)."""

    def home(self, table_id: Sequence[str]) -> tuple[str, ...] | None:
        return (table_id[0] + TABLE_SUFFIX,) if len(table_id) == 1 else None

    def owner(self, relative: tuple[str, ...]) -> tuple[str, ...] | None:
        if len(relative) != 1:
            return None
        name = relative[0]
        nested = _NESTED_TABLE.fullmatch(name)
        if nested is not None and ID_DELIMITER in nested.group(1):
            return tuple(nested.group(1).split(ID_DELIMITER))
        if name.endswith(TABLE_SUFFIX) and len(name) > len(TABLE_SUFFIX):
            return (name[: -len(TABLE_SUFFIX)],)
        return None


def in_root(root: str, location: str) -> str:
    """A location as the native RegisterTable resolves it: relative ones below `root`. Its
    rule, not Lance's (`is_relative`): what has no `://` and no leading `/` is relative,
    `file:/x` included."""
    if "://" in location or location.startswith("/"):
        return location
    return join_location(storage_root(root), location)


def relative_to_root(root: str, location: str) -> str:
    """The native RegisterTable takes only locations relative to `root`; one inside the root
    given in full (as DescribeTable answers it) is made relative."""
    directory = local_directory(root)
    if directory is None:
        return location.removeprefix(root.rstrip("/") + "/")
    path = None if is_relative(location) else local_directory(location)
    if path is None or path == directory or not path.is_relative_to(directory):
        return location
    return path.relative_to(directory).as_posix()


def as_lance_opens(root: str, location: str | None) -> str | None:
    """The native lookup answers a table on object storage under `root` (its storage root)
    with its directory name as stored (`s3://b/root/?.lance`), which Lance would open
    elsewhere: the same place, its names escaped once (`backends.core.locations`)."""
    if not location or local_directory(root) is not None or not location.startswith(root + "/"):
        return location
    names = location[len(root) + 1 :].split("/")
    return resolve_stored(root).child(*names).uri
