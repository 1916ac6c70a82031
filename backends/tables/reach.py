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
- on local storage, neither the table's directory nor Lance's directories in it is a link,
  and the ownership record at the directory, if any, names the table (a directory moved or
  swapped into another's place is someone else's data). Object stores have no links nor
  renames of directories, and a tenant's vended keys cannot write a record
  (`backends.vending`), so the record is compared on local storage only, where a `stat`
  tells whether the record read before is still the one there.

Anything else is code 13, naming the foreign place only as "outside this table".
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from lance import LanceDataset
from lance_namespace import InvalidInputError, PermissionDeniedError

from backends.core.access import Reader, every_table
from backends.core.external import ExternalLocation, admitting
from backends.core.lance_tables import open_lance_table
from backends.core.locations import StorageLocation, local_directory, resolve_stored
from backends.core.names import joined_id
from backends.core.recent import keep_recent
from backends.owner_record import OWNER_FILE, Record, read_record

# The directories Lance reads and writes inside a table's location.
LANCE_DIRECTORIES = ("_versions", "data", "_deletions", "_indices", "_transactions", "_refs")
# How a catalog spells a table id for comparison (`backends.layouts.TableLayout.key`).
IdKey = Callable[[Sequence[str]], tuple[str, ...]]
# The local ownership records read, by the record file's identity (device, inode, size,
# modification time): a record rewritten or replaced is read again.
_RecordStat = tuple[str, int, int, int, int]
_LOCAL_RECORDS: OrderedDict[_RecordStat, Record | None] = OrderedDict()
_LOCAL_RECORDS_LOCK = threading.Lock()
MOST_LOCAL_RECORDS = 4096


def check_reach(table_id: list[str], location: str, dataset: LanceDataset,
                options: Mapping[str, str] | None, may_read: Reader = every_table,
                key: IdKey = tuple, external: Sequence[ExternalLocation] = ()) -> None:
    """Code 13 unless `dataset`, opened at `location` for table `table_id`, reaches only its own
    bytes. A base outside is allowed when it is an extra base recorded as the table's in an
    `external` location admitting it, or when the ownership record at `location` names it as
    the source of a shallow clone the server made and the caller `may_read` the table that
    owns that source (code 15 otherwise). Ids are compared as `key` spells them."""
    directory = check_no_links(table_id, location)
    if directory is not None:
        _check_local_owner(table_id, directory, key)
    foreign = [base for base in outside_bases(location, _base_paths(dataset))
               if not _recorded_extra_base(table_id, base, external, options, key)]
    if not foreign:
        return
    sources = _recorded_sources(location, options, foreign)
    if sources is None:
        raise _outside(table_id)
    for source in sources:
        record = read_record(source, options)
        if record is None or not may_read(record.owner):
            raise PermissionDeniedError(
                f"table {joined_id(table_id)} is a shallow clone of a table this caller may "
                "not read")


def check_adopted(table_id: list[str], location: str, options: Mapping[str, str] | None,
                  external: Sequence[ExternalLocation] = ()) -> list[StorageLocation]:
    """The extra bases of the data at `location` (if any), which RegisterTable or DeclareTable
    is to adopt for `table_id`: each must lie in an `external` location admitting the table
    (the caller records them as the table's), and nothing else outside (code 13; no clone
    source: a registered table is never a clone the server made). Whose record lies at
    `location` is `backends.ownership`'s to judge."""
    check_no_links(table_id, location)
    dataset = open_lance_table(location, options)
    if dataset is None:
        return []
    foreign = outside_bases(location, _base_paths(dataset))
    admitted = [base for base in foreign
                if base is not None and admitting(external, table_id, base) is not None]
    if len(admitted) != len(foreign):
        raise _outside(table_id)
    for base in admitted:
        check_no_links(table_id, base.uri)
    return admitted


def _base_paths(dataset: LanceDataset) -> list[str]:
    return [base.path for base in dataset.base_paths().values()]


def _outside(table_id: list[str]) -> InvalidInputError:
    return InvalidInputError(
        f"table {joined_id(table_id)} names data outside this table in its manifest; the "
        "server reads only a table's own data (an extra base must lie in an external location "
        "bound to the table's namespace, and be there when the table is registered)")


def _recorded_extra_base(table_id: list[str], base: StorageLocation | None,
                         external: Sequence[ExternalLocation],
                         options: Mapping[str, str] | None, key: IdKey) -> bool:
    """Whether `base` is an extra base of the table the operator allows: inside an external
    location admitting it, recorded there as the table's when it was registered, no link."""
    if base is None or admitting(external, table_id, base) is None:
        return False
    directory = check_no_links(table_id, base.uri)
    record = (_local_record(directory / OWNER_FILE) if directory is not None
              else read_record(base.uri, options))
    return record is not None and record.extra_base and key(record.owner) == key(table_id)


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


def check_no_links(table_id: list[str], location: str) -> Path | None:
    """Code 13 when the local table at `location`, or a Lance directory in it, is a symbolic
    link: what it points to is another place's data (a delete would follow it). The table's
    local directory, None when it is not on local storage."""
    try:
        directory = local_directory(location)
    except InvalidInputError:
        return None  # no local place: Lance's own refusal follows
    if directory is None:
        return None
    for path in (directory, *(directory / name for name in LANCE_DIRECTORIES)):
        if os.path.islink(path):
            raise InvalidInputError(
                f"table {joined_id(table_id)} is a symbolic link, or holds one where Lance "
                "keeps its files; the server reads only a table's own data")
    return directory


def _check_local_owner(table_id: list[str], directory: Path, key: IdKey) -> None:
    """Code 13 when the ownership record in the local `directory` names another table than
    `table_id` (nor the table a rename under way takes the data from): the directory holds
    another table's data, moved or swapped into this one's place."""
    record = _local_record(directory / OWNER_FILE)
    if record is None:
        return  # data the server did not record (registered before records, or by a tool)
    named = {key(record.owner), *([key(record.renamed_from)] if record.renamed_from else [])}
    if key(table_id) not in named:
        raise InvalidInputError(
            f"the data at table {joined_id(table_id)}'s location is recorded as another "
            "table's; the server reads only a table's own data")


def _local_record(path: Path) -> Record | None:
    """The record in the local file at `path`, read again only when the file changed."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError:  # unreadable: read_record decides (code 17)
        return read_record(str(path.parent), None)
    stamp = (str(path), found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)
    with _LOCAL_RECORDS_LOCK:
        if stamp in _LOCAL_RECORDS:
            _LOCAL_RECORDS.move_to_end(stamp)
            return _LOCAL_RECORDS[stamp]
    record = read_record(str(path.parent), None)
    with _LOCAL_RECORDS_LOCK:
        keep_recent(_LOCAL_RECORDS, stamp, record, MOST_LOCAL_RECORDS)
    return record
