"""What a table's files may reach: its own location, nothing else.

A Lance manifest can name data outside the table's location (pylance's multi-base tables, a
shallow clone's source), and on a local root a table's directory or one of Lance's directories
in it can be a symbolic link. The server reads, writes and deletes with its own credentials,
so a table opened as its files say would reach whatever they name. Every open therefore
checks, at the version opened:
- each base path of the manifest lies inside the table's own location, except the sources of
  a shallow clone the server made (CloneTable), which the clone's ownership record names
  (`backends.ownership.Record.sources`); data, deletion and index files name a base by its id,
  so checking the bases covers them, at a cost of O(bases), not O(fragments); the caller
  must be able to read the table that owns each source it reaches (code 15 otherwise);
- on local storage, neither the table's directory nor Lance's directories in it is a link.

Anything else is code 13, naming the foreign place only as "outside this table".
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from lance import LanceDataset
from lance_namespace import InvalidInputError, PermissionDeniedError

from backends.core.access import Reader, every_table
from backends.core.lance_tables import open_lance_table
from backends.core.locations import StorageLocation, local_directory, resolve_stored
from backends.core.names import joined_id
from backends.ownership import read_record

# The directories Lance reads and writes inside a table's location.
LANCE_DIRECTORIES = ("_versions", "data", "_deletions", "_indices", "_transactions", "_refs")


def check_reach(table_id: list[str], location: str, dataset: LanceDataset,
                options: Mapping[str, str] | None, may_read: Reader | None = every_table) -> None:
    """Code 13 unless `dataset`, opened at `location` for table `table_id`, reaches only its own
    bytes. A base outside is allowed when the ownership record at `location` names it as the
    source of a shallow clone the server made, and the caller `may_read` the table that owns
    that source (code 15 otherwise); None: no clone source is allowed."""
    check_no_links(table_id, location)
    foreign = outside_bases(location, (base.path for base in dataset.base_paths().values()))
    if not foreign:
        return
    sources = None if may_read is None else _recorded_sources(location, options, foreign)
    if sources is None:
        raise InvalidInputError(
            f"table {joined_id(table_id)} names data outside this table in its manifest; "
            "the server reads only a table's own data")
    for source in sources:
        record = read_record(source, options)
        if record is None or not may_read(record.owner):
            raise PermissionDeniedError(
                f"table {joined_id(table_id)} is a shallow clone of a table this caller may "
                "not read")


def check_adopted(table_id: list[str], location: str,
                  options: Mapping[str, str] | None) -> None:
    """Code 13 unless the data at `location` (if any), which RegisterTable or DeclareTable is
    to adopt for `table_id`, reaches only its own bytes: no clone source is allowed there (a
    registered table is never a clone the server made)."""
    check_no_links(table_id, location)
    dataset = open_lance_table(location, options)
    if dataset is not None:
        check_reach(table_id, location, dataset, options, may_read=None)


def outside_bases(location: str, bases: Iterable[str]) -> list[StorageLocation | None]:
    """The bases that do not lie inside `location` (None for one that names no place)."""
    named = list(bases)
    if not named:  # most tables: their location is not even parsed
        return []
    own = resolve_stored(location)
    foreign: list[StorageLocation | None] = []
    for base in named:
        try:
            place = resolve_stored(base)
        except InvalidInputError:
            foreign.append(None)
            continue
        if not own.contains(place):
            foreign.append(place)
    return foreign


def _recorded_sources(location: str, options: Mapping[str, str] | None,
                      foreign: list[StorageLocation | None]) -> list[str] | None:
    """The clone sources the record at `location` names that the bases in `foreign` lie in;
    None unless every one lies in one."""
    record = read_record(location, options)
    if record is None or not record.sources or None in foreign:
        return None
    sources = {source: resolve_stored(source) for source in record.sources}
    used = set()
    for base in foreign:
        found = next((text for text, place in sources.items() if base and place.contains(base)),
                     None)
        if found is None:
            return None
        used.add(found)
    return sorted(used)


def check_no_links(table_id: list[str], location: str) -> None:
    """Code 13 when the local table at `location`, or a Lance directory in it, is a symbolic
    link: what it points to is another place's data (a delete would follow it)."""
    try:
        directory = local_directory(location)
    except InvalidInputError:
        return  # no local place: Lance's own refusal follows
    if directory is None:
        return
    for path in (directory, *(directory / name for name in LANCE_DIRECTORIES)):
        if os.path.islink(path):
            raise InvalidInputError(
                f"table {joined_id(table_id)} is a symbolic link, or holds one where Lance "
                "keeps its files; the server reads only a table's own data")
