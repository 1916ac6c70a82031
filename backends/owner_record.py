"""The ownership record of a location: a small Lance file, `_lance_adapter_owner`, at a
table's location, naming the table that owns the data there and how it came to (the rules
that read it: `backends.ownership`). It is written and read with Lance's own object-store
access (`lance.file`), so it reaches every store a table can live in with the table's own
storage options, in one request. Lance ignores the file: it reads only its own directories
of a dataset."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
from lance.file import LanceFileReader, LanceFileWriter
from lance_namespace import InvalidInputError, ServiceUnavailableError

from backends.core.locations import resolve_stored
from backends.tables.errors import lance_errors

OWNER_FILE = "_lance_adapter_owner"
_SCHEMA = pa.schema([
    pa.field("owner_id", pa.list_(pa.string()), nullable=False),
    pa.field("placed", pa.bool_(), nullable=False),
    pa.field("cloned", pa.bool_()),
    pa.field("borrows", pa.bool_()),
    pa.field("renamed_from", pa.list_(pa.string())),
    pa.field("sources", pa.list_(pa.string())),
    pa.field("catalog", pa.string()),
    pa.field("extra_base", pa.bool_()),
    pa.field("dropped", pa.bool_()),
])


@dataclass(frozen=True)
class Record:
    owner: list[str]
    placed: bool  # the server chose the location (its data is the table's alone to delete)
    # Shallow clones read this data in place: it is never deleted, nor its versions removed.
    cloned: bool = False
    # A shallow clone: it reads data files of another table's location.
    borrows: bool = False
    # The id a rename under way takes the data from (`backends.rename_recovery`).
    renamed_from: list[str] | None = None
    # A shallow clone the server made: the locations of its sources, the only places outside
    # its own that its manifest may name (`backends.tables.reach`).
    sources: list[str] | None = None
    # The catalog of the owner, on a server of several (None: a server of one).
    catalog: str | None = None
    # An extra base of the owner's data (a multi-base table), in an external location
    # (`backends.tables.reach`); the owner's own location is elsewhere.
    extra_base: bool = False
    # The owner was dropped and the storage kept (some of) its data: left for deletion.
    dropped: bool = False


def _record_path(location: str) -> str:
    return resolve_stored(location).child(OWNER_FILE).uri


def read_record(location: str, options: Mapping[str, str] | None) -> Record | None:
    """The ownership record of `location`; None when none is recorded
    (data the server did not create or register, or a location it cannot read as one).
    A storage that does not answer is code 17: a record must never be taken as absent."""
    try:
        path = _record_path(location)
    except InvalidInputError:
        return None
    try:
        rows = LanceFileReader(path, storage_options=dict(options or {}) or None).read_all()
    except (ValueError, OSError, RuntimeError) as error:
        if str(error).startswith("Not found"):
            return None
        raise ServiceUnavailableError(
            "the storage did not answer for the table's ownership record; retry"
        ) from error
    found = rows.to_table().to_pylist()
    if len(found) != 1 or not found[0].get("owner_id"):
        return None
    row = found[0]
    return Record(list(row["owner_id"]), bool(row.get("placed")), bool(row.get("cloned")),
                  bool(row.get("borrows")), list(row.get("renamed_from") or []) or None,
                  list(row.get("sources") or []) or None, row.get("catalog"),
                  bool(row.get("extra_base")), bool(row.get("dropped")))


def write_record(location: str, options: Mapping[str, str] | None, record: Record) -> None:
    """Record the owner of `location` (replacing any earlier record)."""
    with lance_errors(location):  # a full disk, say: code 17, not an internal error
        writer = LanceFileWriter(
            _record_path(location), _SCHEMA, storage_options=dict(options or {}) or None
        )
        writer.write_batch(pa.table(
            {"owner_id": [list(record.owner)], "placed": [record.placed],
             "cloned": [record.cloned], "borrows": [record.borrows],
             "renamed_from": [record.renamed_from], "sources": [record.sources],
             "catalog": [record.catalog], "extra_base": [record.extra_base],
             "dropped": [record.dropped]},
            schema=_SCHEMA))
        writer.close()
