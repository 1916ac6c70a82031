"""Which table owns the data at a location, and what that allows: the rules read from the
ownership records (`backends.owner_record`) the server keeps with the data. A record names
the owning table and whether the server placed the data there (CreateTable, DeclareTable
without a location) or a client named the location (RegisterTable, DeclareTable with one).

The server writes one when it creates, declares or registers a table (and at each extra base
of a multi-base table it registers) and rewrites it when it renames one
(`backends.location_checks`); DropTable deletes data only when it names the table dropped.

On a server of several catalogs a record also names the catalog of its table: a table id
means a table within one catalog, and data one catalog's table owns is never taken, deleted
or vended by another's (their storage is kept apart at start, unless the operator allows
roots that nest). A record without a catalog (a server of one, or written before) is judged
by its id alone.

Two registrations of one unrecorded location at once are told apart by a claim
(`backends.ownership_claims`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs
from lance_namespace import (
    DescribeTableRequest,
    InvalidInputError,
    LanceNamespace,
    LanceNamespaceError,
    ServiceUnavailableError,
    TableExistsRequest,
    TableNotFoundError,
)

from backends.core.filesystems import table_filesystem
from backends.core.lance_tables import open_lance_table
from backends.core.locations import StorageLocation, resolve_stored
from backends.core.names import joined_id
from backends.layouts import TableLayout
from backends.owner_record import OWNER_FILE, Record, read_record, write_record
from backends.ownership_claims import (
    CLAIM_DATASET,
    claim_location,
    claimant_of,
    release_claim_at,
)
from backends.tables.reach import outside_bases

if TYPE_CHECKING:
    from backends.base import MetadataNamespace

def table_gone(namespace: LanceNamespace, table_id: list[str], request: Any = None) -> bool:
    """Whether the catalog says for sure that `table_id` names no table, asked as the caller
    of `request` if given."""
    caller = {"identity": request.identity, "context": request.context} if request else {}
    try:
        namespace.for_caller(request).table_exists(TableExistsRequest(id=table_id, **caller))
    except TableNotFoundError:
        return True
    except LanceNamespaceError:  # a catalog that does not answer: not taken as gone
        return False
    return False


class OwnershipRecords:
    """The ownership rules of one backend, whose storage root is `root`: which recorded owner
    lets a table take a location, and which table DropTable may delete the data of."""

    def __init__(self, namespace: MetadataNamespace, root: StorageLocation,
                 layout: TableLayout, catalog: str | None = None) -> None:
        self.namespace = namespace
        self.root = root
        self.layout = layout
        self.catalog = catalog  # on a server of several, the backend's catalog

    def refuse_taken(self, table_id: list[str], place: StorageLocation, request: Any,
                     base: StorageLocation | None = None) -> bool:
        """Code 13 unless `table_id` may take `place`, a location inside the root: no live
        table of another id owns it or a location around it, and data last owned by a table
        now gone is taken only within that table's namespace. Whether a record decided.
        Records are looked for up to `base` (the root, or an external location)."""
        found = self.recorded_around(place, base or self.root)
        if found is None:
            return False
        record, recorded_at = found
        owner = record.owner
        if self._foreign(record):
            raise InvalidInputError(
                "the location holds data a table of another catalog owns; a location belongs "
                "to one table")
        if self._is(record, table_id) and recorded_at == place and not record.extra_base:
            return True
        if record.extra_base and not table_gone(self.namespace, owner, request):
            raise InvalidInputError(
                f"the location lies in data table {joined_id(owner)} reads as an extra base; a "
                "location belongs to one table")
        if self._names(owner, recorded_at, request):
            whose = "is owned by" if recorded_at == place else "lies inside the data of"
            raise InvalidInputError(
                f"the location {whose} table {joined_id(owner)}; a location belongs to one "
                "table"
            )
        if self.layout.key(owner)[:-1] != self.layout.key(table_id)[:-1]:
            raise InvalidInputError(
                f"the data at the location was last owned by table {joined_id(owner)} of "
                "another namespace; only a table of that namespace may take it"
            )
        return True

    def claim(self, table_id: list[str], location: str | None, placed: bool,
              options: Mapping[str, str] | None = None, unrecorded_only: bool = False,
              sources: list[str] | None = None) -> None:
        """Record `table_id` as the owner of `location` (a shallow clone of the data at
        `sources`); with `unrecorded_only`, only where no owner is recorded yet (CreateTable
        with exist_ok or overwrite keeps the record). Data the server placed for a table now
        gone stays placed for the table adopting it, and data clones read stays marked so."""
        if not location:
            return
        earlier = read_record(location, self._options(options))
        if unrecorded_only and earlier is not None:
            return
        placed = placed or (earlier is not None and earlier.placed)
        cloned = earlier is not None and earlier.cloned
        write_record(location, self._options(options),
                     Record(list(table_id), placed, cloned, bool(sources), sources=sources,
                            catalog=self.catalog))

    def claim_first(self, table_id: list[str], place: StorageLocation, request: Any,
                    base: StorageLocation | None = None) -> bool:
        """Before the catalog registers `table_id` at `place`: where a record is found (read
        again: it may have been written since the check), it decides as `refuse_taken` does;
        where none is, `table_id` becomes the location's first claimant, and a claim another
        table made first with no record yet is code 13 (a registration under way, or one cut
        off before its record: that claim is the operator's to remove). Whether this call
        made the claim (`release_claim` undoes it)."""
        self.refuse_holding(table_id, place, request)
        if self.refuse_taken(table_id, place, request, base):
            return False
        winner = claim_location(place.uri, self._options(), table_id, self.catalog)
        if winner is None:
            self._recheck_nested(table_id, place, request, base)
            return True
        if self._is(winner, table_id) or self.refuse_taken(table_id, place, request, base):
            return False
        raise InvalidInputError(
            f"the location is being registered by table {joined_id(winner.owner)} (or a "
            f"registration of it was cut off: remove {CLAIM_DATASET} there); a location "
            "belongs to one table")

    def _recheck_nested(self, table_id: list[str], place: StorageLocation, request: Any,
                        base: StorageLocation | None) -> None:
        """With `place` claimed, look again below it and for claims above it: of two
        registrations at once of a location and a place inside it, each claims before it
        looks for the other, so at least one sees the other's claim (neither may win
        unseen). The claim is released when either look refuses."""
        try:
            self.refuse_holding(table_id, place, request)
            self._refuse_claimed_above(table_id, place, base or self.root)
        except BaseException:
            self.release_claim(place)
            raise

    def _refuse_claimed_above(self, table_id: list[str], place: StorageLocation,
                              base: StorageLocation) -> None:
        """Code 13 when a location around `place` is claimed by another table with no record
        yet (its registration is under way, or was cut off); a record there decided already."""
        relative = place.relative_to(base) or ()
        storage = self._options() or None
        for depth in range(len(relative) - 1, 0, -1):
            here = base.child(*relative[:depth])
            claimant = claimant_of(here.child(CLAIM_DATASET).uri, storage)
            if (claimant and not self._is(claimant, table_id)
                    and read_record(here.uri, self._options()) is None):
                raise InvalidInputError(
                    f"the location lies inside one being registered by table "
                    f"{joined_id(claimant.owner)} (or a registration of it was cut off: remove "
                    f"{CLAIM_DATASET} there); a location belongs to one table")

    def refuse_holding(self, table_id: list[str], place: StorageLocation, request: Any) -> None:
        """Code 13 when data another table owns, or is being registered at, lies below
        `place`: a table there would be vended keys reaching it (and, purged, delete it).
        The location's files are listed once (a registration's cost grows with the data it
        names, not with the catalog)."""
        filesystem, path = table_filesystem(place.uri, self._options())
        try:
            found = filesystem.get_file_info(
                pafs.FileSelector(path, recursive=True, allow_not_found=True))
        except (OSError, pa.ArrowException) as error:
            raise ServiceUnavailableError(
                "the storage did not answer for the files at the location; retry") from error
        prefix = path.rstrip("/") + "/"
        for info in found:
            parts = info.path[len(prefix):].split("/")
            marker = next((index for index, name in enumerate(parts)
                           if name in (OWNER_FILE, CLAIM_DATASET)), None)
            if not marker:  # none, or the location's own record or claim
                continue
            inner = place.child(*parts[:marker])
            record = read_record(inner.uri, self._options())
            owner = record.owner if record is not None else None
            if record is None or not self._is(record, table_id):
                whose = f"table {joined_id(owner)}" if owner else "a table being registered"
                raise InvalidInputError(
                    f"the location holds the data of {whose} (at {'/'.join(parts[:marker])}); "
                    "a location belongs to one table")

    def claim_base(self, table_id: list[str], base: StorageLocation, request: Any,
                   prefix: StorageLocation) -> None:
        """Record `base`, an extra base of `table_id`'s data lying in the external location
        `prefix`, as the table's (`backends.tables.reach` reads it at each open): code 13 when
        data of another table lies there, around it or below it."""
        self.refuse_holding(table_id, base, request)
        found = self.recorded_around(base, prefix)
        if found is not None:
            record, recorded_at = found
            if record.extra_base and recorded_at == base and self._is(record, table_id):
                return
            raise InvalidInputError(
                f"a base of table {joined_id(table_id)} lies in data another table owns or "
                "owned; a location belongs to one table")
        write_record(base.uri, self._options(), Record(
            list(table_id), placed=False, catalog=self.catalog, extra_base=True))

    def release_claim(self, place: StorageLocation) -> None:
        """Undo `claim_first` for a registration that failed."""
        release_claim_at(place, self._options(), self.root)

    def table_at(self, location: str, request: Any) -> list[str]:
        """The table whose data is at `location` (a client names a clone's source so): the
        owner its record names, whose catalog entry names that location."""
        record = read_record(location, self._options())
        if (record is None or self._foreign(record)
                or not self._names_exactly(record.owner, location, request)):
            raise InvalidInputError(
                "source_location is not the location of a table this server recorded")
        return record.owner

    def mark_cloned(self, table_id: list[str], location: str) -> list[str]:
        """Record that shallow clones read the data of `table_id` at `location` (before the
        first clone exists): from then on it is never deleted, nor its versions removed. The
        locations a shallow clone of it reads: `location`, and its own sources (a clone's)."""
        record = read_record(location, self._options())
        if record is None or not self._is(record, table_id):
            raise InvalidInputError(
                f"the data of table {joined_id(table_id)} has no ownership record naming it, "
                "so a shallow clone of it could not be kept from its deletion; clone it deep "
                "(is_shallow false), or register it again")
        if not record.cloned:
            write_record(location, self._options(), replace(record, cloned=True))
        return [resolve_stored(location, self.root).uri, *(record.sources or [])]

    def is_cloned(self, table_id: list[str], location: str) -> bool:
        """Whether shallow clones read the data of `table_id` at `location`."""
        record = read_record(location, self._options())
        return record is not None and record.cloned and self._is(record, table_id)

    def owns(self, table_id: list[str], location: str, options: Mapping[str, str] | None,
             base: StorageLocation | None = None) -> bool:
        """Whether DropTable of `table_id` may delete the data at `location`: its record
        names the table, and the server placed the data there or the location is the
        table's own path in the layout (data registered elsewhere is only deregistered), or
        lies in an external location (`base`) whose purge the operator enabled."""
        record = read_record(location, self._options(options))
        if record is None or not self._is(record, table_id) or record.cloned:
            return False
        if record.placed or base is not None:
            return True
        relative = resolve_stored(location, self.root).relative_to(self.root) or ()
        return self.layout.in_own_path(relative, table_id)

    def left_by_drop(self, table_id: list[str], location: str) -> bool:
        """Whether the data at `location` is what a drop of `table_id` could not delete."""
        record = read_record(location, self._options())
        return record is not None and record.dropped and self._is(record, table_id)

    def may_vend(self, table_id: list[str], location: str) -> bool:
        """Whether keys for `location` may be vended for `table_id`: no record there names
        another table (data the server did not record is judged by its place alone)."""
        try:
            record = read_record(location, self._options())
        except LanceNamespaceError:
            return False  # not given away on a guess
        if record is not None and record.borrows:
            return False  # keys for its location alone would not read a shallow clone
        return record is None or self._is(record, table_id)

    def hand_over(self, from_id: list[str], to_id: list[str], location: str,
                  renaming: bool = True) -> bool:
        """Make the record at `location` name `to_id` where it names `from_id`, noting that
        a rename from `from_id` is under way (not when a failed one gives it back); whether
        it did (a location no record of `from_id` names is left as it is)."""
        record = read_record(location, self._options())
        if record is None or not self._is(record, from_id):
            return False
        write_record(location, self._options(), replace(
            record, owner=list(to_id), renamed_from=list(from_id) if renaming else None))
        for base in self._extra_bases(location):
            found = read_record(base.uri, self._options())
            if found is not None and found.extra_base and self._is(found, from_id):
                write_record(base.uri, self._options(), replace(found, owner=list(to_id)))
        return True

    def recorded_bases(self, table_id: list[str], location: str) -> list[str]:
        """The bases of the table at `location` outside it that are recorded as extra bases
        of `table_id` (those a multi-base table reads as its own)."""
        found = []
        for base in self._extra_bases(location):
            record = read_record(base.uri, self._options())
            if record is not None and record.extra_base and self._is(record, table_id):
                found.append(base.uri)
        return found

    def _extra_bases(self, location: str) -> list[StorageLocation]:
        """The bases of the table at `location` outside it (a multi-base table's)."""
        dataset = open_lance_table(location, self._options())
        if dataset is None:
            return []
        bases = outside_bases(location, (base.path for base in dataset.base_paths().values()))
        return [base for base in bases if base is not None]

    def moved(self, old_id: list[str], new_id: list[str], old_location: str | None,
              request: Any) -> None:
        """After RenameTable: the record of a table that owned its data names the new id,
        at the new location when the rename placed the table elsewhere (a table declared
        without data, declared again at its new id's own path)."""
        entry = self.namespace.for_caller(request).describe_table_entry(DescribeTableRequest(
            id=new_id, identity=request.identity, context=request.context))
        if not entry.location:
            return
        options = self._options(entry.storage_options)
        record = read_record(entry.location, options)
        if record is not None and not self._foreign(record) and (
                self._same(record.owner, old_id) or record.renamed_from):
            write_record(entry.location, options,
                         replace(record, owner=list(new_id), renamed_from=None))
        elif record is None and old_location and old_location != entry.location:
            old = read_record(old_location, options)  # named the new id before the rename
            if old is not None and (self._is(old, old_id) or self._is(old, new_id)):
                write_record(entry.location, options,
                             Record(list(new_id), True, catalog=self.catalog))

    def recorded_around(
        self, place: StorageLocation, base: StorageLocation
    ) -> tuple[Record, StorageLocation] | None:
        """The record at `place` or at the nearest location above it below `base`."""
        relative = place.relative_to(base) or ()
        for depth in range(len(relative), 0, -1):
            here = base.child(*relative[:depth])
            record = read_record(here.uri, self._options())
            if record is not None:
                return record, here
        return None

    def _names(self, owner: list[str], place: StorageLocation, request: Any) -> bool:
        """Whether `owner` is a live table whose entry names `place` (a catalog that does not
        answer counts as naming it: the location is not given away on a guess)."""
        try:
            return self._entry_place(owner, request) == place
        except LanceNamespaceError:
            return True

    def names(self, owner: list[str], location: str, request: Any) -> bool:
        """Whether `owner` is a live table whose entry names `location` (a catalog that does
        not answer counts as naming it)."""
        try:
            place = resolve_stored(location, self.root)
        except InvalidInputError:
            return False
        return self._names(owner, place, request)

    def _names_exactly(self, owner: list[str], location: str, request: Any) -> bool:
        """Whether `owner` is a live table whose entry names `location` (a catalog that does
        not answer is its error)."""
        try:
            return self._entry_place(owner, request) == resolve_stored(location, self.root)
        except InvalidInputError:
            return False

    def _entry_place(self, owner: list[str], request: Any) -> StorageLocation | None:
        """Where the catalog entry of `owner` says its data is; None: no such table (or an
        entry whose location cannot be read as one)."""
        try:
            entry = self.namespace.for_caller(request).describe_table_entry(
                DescribeTableRequest(id=owner, identity=request.identity,
                                     context=request.context))
        except TableNotFoundError:
            return None
        try:
            return resolve_stored(entry.location, self.root) if entry.location else None
        except InvalidInputError:
            return None

    def _same(self, one: Sequence[str], other: Sequence[str]) -> bool:
        return self.layout.key(one) == self.layout.key(other)

    def _is(self, record: Record, table_id: Sequence[str]) -> bool:
        """Whether `record` names the table `table_id` of this backend's catalog."""
        return not self._foreign(record) and self._same(record.owner, table_id)

    def _foreign(self, record: Record) -> bool:
        """Whether `record` names a table of another catalog of the server."""
        return bool(record.catalog and self.catalog and record.catalog != self.catalog)

    def _options(self, options: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**self.namespace.root_storage_options(), **(options or {})}
