"""Where a client may point a table, and which data DropTable may delete, decided from the
table's own catalog entry and the backend's layout (`backends.layouts`): no catalog search.
Locations are read by `backends.core.locations`: a client-named one strictly, a stored one as
Lance opens it. The rules:
- Every table id has its own path under the storage root, given by the backend's layout.
- A client-named location (RegisterTable, DeclareTable with a location) must lie strictly
  inside the root, outside the catalog's own files (the directory backend's `__manifest`),
  and inside no other id's own path, except that RegisterTable may adopt the data in the
  own path of an id the catalog no longer holds (a deregistered or renamed table's); a path
  that could hold other ids' own paths (a namespace's directory) is refused too. Nothing is
  written when a check fails (code 13). Each check needs at most one catalog lookup.
- A table the server creates (CreateTable, DeclareTable without a location) is placed at its
  own path, never over a Lance table already there (refused before anything is written).
- Ownership is recorded with the data (`backends.ownership`): CreateTable, DeclareTable and
  RegisterTable record the table's id at its location, RenameTable moves the record to the
  new id. A location whose record (or a record above it) names a live table of another id
  whose entry names it is refused; data last owned by a table now gone is taken only within
  that table's namespace.
- Data RegisterTable or DeclareTable adopts reaches only its own bytes (`backends.tables.reach`).
- DropTable deletes data only of a table that owns its location: one inside the root (also
  once symbolic links are resolved) whose record names the table; a table that is or holds a
  link is refused. Any other table (data the server did not record: other tools' entries,
  tables from before records) is deregistered and its data left where it is.

The one guard (`backends.guard.GuardedNamespace`) puts these checks in front of the client's
CreateTable, RegisterTable, DeclareTable, RenameTable, DropTable and CloneTable
(`backends.location_checks`); the backend's own calls (RenameTable re-registering the data
it moves) do not pass them."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lance_namespace import (
    DescribeTableResponse,
    InvalidInputError,
    LanceNamespaceError,
    NamespaceExistsRequest,
    NamespaceNotFoundError,
)

from backends.core.external import ExternalLocation
from backends.core.locations import (
    StorageLocation,
    parse_location,
    physically_inside,
    resolve_stored,
)
from backends.core.names import joined_id
from backends.core.settings import ConfigurationError
from backends.layouts import TableLayout
from backends.ownership import OwnershipRecords, table_gone

if TYPE_CHECKING:
    from backends.base import MetadataNamespace

logger = logging.getLogger("lance_adapter")

# Files of the directory backend's catalog, directly below its root.
CATALOG_ENTRIES = frozenset({"__manifest", "_lance_adapter_renames"})  # dir's own


class Containment:
    """The location checks of one backend, whose storage root is `root`."""

    def __init__(self, namespace: MetadataNamespace, root: str, layout: TableLayout,
                 external: tuple[ExternalLocation, ...] = (), catalog: str | None = None) -> None:
        self.namespace = namespace
        self.layout = layout
        self.external = external
        try:
            self.root = resolve_stored(root)
        except InvalidInputError as error:
            raise ConfigurationError(f"the storage root cannot be used: {error}") from None
        self.records = OwnershipRecords(namespace, self.root, layout, catalog)

    def check_new_location(
        self, table_id: list[str], location: str, adopting: bool, request: Any
    ) -> StorageLocation:
        """A client-named location the table `table_id` may take, else code 13. A location
        whose ownership is recorded is taken as the record allows (`OwnershipRecords`); data
        left unrecorded in the own path of an id the catalog no longer holds may be adopted
        by RegisterTable (`adopting`) of a table in that id's namespace. DeclareTable may not
        take another id's own path, which would still be empty when that id is created."""
        parsed = parse_location(location, self.root)
        outside = self.external_of(parsed)
        if outside is not None:
            return self._check_external(table_id, parsed, outside, request)
        path = self._inside_root(parsed)
        if path is None:
            raise InvalidInputError(
                "a table location must lie inside the server's storage root, or inside one "
                "of its external locations (external_locations), and must not be the root "
                "itself or the catalog's own files"
            )
        relative = path.relative_to(self.root) or ()
        owner = self.layout.owner_of(relative)
        key = self.layout.key(table_id)
        recorded = self.records.refuse_taken(table_id, path, request)
        if owner is not None and owner != key and not (adopting and recorded):
            # Only within the namespace: its writers may reach what lies in its paths anyway.
            if adopting and owner[:-1] == key[:-1] and table_gone(self.namespace, list(owner)):
                return path
            raise InvalidInputError(
                f"the location lies in the own path of table {joined_id(list(owner))}"
            )
        own_path = self.layout.in_own_path(relative, table_id)
        # A recorded table's data (adopted as its record allows) is no namespace's directory.
        if (owner is None and self.layout.holds_homes(relative) and not own_path
                and not (adopting and recorded)):
            raise InvalidInputError(
                "the location could hold other tables' own paths (it is a namespace's "
                "directory in this backend's layout); choose a table's own path"
            )
        return path

    def _check_external(self, table_id: list[str], place: StorageLocation,
                        outside: ExternalLocation, request: Any) -> StorageLocation:
        """A location inside an external location: the table's namespace must be the one it
        is bound to (or below it), and no other table may own it."""
        if not outside.admits(table_id):
            raise InvalidInputError(
                f"the location lies in the external location {outside}: a table of "
                f"{joined_id(table_id[:-1]) or 'the root'} may not register there"
            )
        if not self.namespace.registers_anywhere():
            raise InvalidInputError(
                f"the {self.namespace.backend_name()} backend registers tables only inside "
                "its root (its catalog keeps locations relative to it)"
            )
        if not physically_inside(place, outside.prefix):
            raise InvalidInputError("the location leads outside its external location")
        self.records.refuse_taken(table_id, place, request, base=outside.prefix)
        return place

    def external_of(self, place: StorageLocation) -> ExternalLocation | None:
        return next((entry for entry in self.external if entry.holds(place)), None)

    def owns(self, table_id: list[str], entry: DescribeTableResponse) -> bool:
        """Whether the table of `entry` owns its location, so DropTable may delete it: inside
        the root, its record naming the table."""
        path = self._owned_path(entry.location or "")
        if path is None:
            return self._purged(table_id, entry)
        if self._namespace_of_same_id(table_id, None):
            return False  # a namespace's tables may lie below a nesting layout's table
        return self.records.owns(table_id, path.uri, entry.storage_options)

    def _purged(self, table_id: list[str], entry: DescribeTableResponse) -> bool:
        """Whether DropTable deletes a table in an external location: only when the operator
        enabled purge, and the record there names the table."""
        try:
            place = parse_location(entry.location or "")
        except InvalidInputError:
            return False
        outside = self.external_of(place)
        if outside is None or not outside.purge or not physically_inside(place, outside.prefix):
            return False
        return self.records.owns(table_id, place.uri, entry.storage_options, base=outside.prefix)

    def vendable(self, table_id: list[str], location: str) -> bool:
        """Whether keys for all of `location` reach only `table_id`'s data: its own path
        (which, in a nesting layout, no namespace of the same id shares), or a place that
        holds no other table's own path; and no record there names another table."""
        try:
            relative = resolve_stored(location, self.root).relative_to(self.root)
        except InvalidInputError:
            return False
        if relative is not None and self.layout.in_own_path(relative, table_id):
            if self._namespace_of_same_id(table_id, None):
                return False
        elif holds_other_tables(self.root.uri, self.layout, location):
            return False
        return self.records.may_vend(table_id, location)

    def refuse_nesting(self, table_id: list[str], request: Any, table: bool) -> None:
        """In a nesting layout (`TableLayout.nests`) a table and a namespace never share an
        id: the namespace's tables would lie inside the table's data (code 13)."""
        if not self.layout.nests or self.layout.home(table_id) is None:
            return  # no table can have this id: nothing to keep apart
        if table and self._namespace_of_same_id(table_id, request):
            raise InvalidInputError(
                f"a namespace {joined_id(table_id)} exists: in this backend's layout a table "
                "of that id would hold its tables' data; choose another name"
            )
        if not table and not table_gone(self.namespace, table_id, request):
            raise InvalidInputError(
                f"a table {joined_id(table_id)} exists: in this backend's layout the "
                "namespace's tables would lie inside its data; choose another name"
            )

    def _namespace_of_same_id(self, table_id: list[str], request: Any) -> bool:
        """In a nesting layout, whether a namespace has `table_id` as its id (a catalog that
        does not answer counts as yes: data is not deleted or vended on a guess)."""
        if not self.layout.nests or self.layout.home(table_id) is None:
            return False
        caller = {"identity": request.identity, "context": request.context} if request else {}
        try:
            self.namespace.for_caller(request).namespace_exists(
                NamespaceExistsRequest(id=table_id, **caller))
        except NamespaceNotFoundError:
            return False
        except LanceNamespaceError:
            return True
        return True

    def home(self, table_id: list[str]) -> StorageLocation | None:
        """The id's own path, when the layout gives one."""
        relative = self.layout.home(table_id)
        return None if relative is None else self.root.child(*relative)

    def _owned_path(self, location: str) -> StorageLocation | None:
        try:
            return self._inside_root(resolve_stored(location, self.root))
        except InvalidInputError:
            return None

    def _inside_root(self, path: StorageLocation) -> StorageLocation | None:
        relative = path.relative_to(self.root)
        if relative is None or relative[0] in CATALOG_ENTRIES:
            return None
        return path if physically_inside(path, self.root) else None


def holds_other_tables(root: str, layout: TableLayout, location: str) -> bool:
    """Whether a grant of everything at `location` could reach other tables' own paths: the
    root or a place above it, or a namespace's directory in the layout. Credentials are
    never vended for such a location, whichever catalog entry names it."""
    try:
        place, base = resolve_stored(location), resolve_stored(root)
    except InvalidInputError:
        return True
    if place.contains(base):
        return True
    relative = place.relative_to(base)
    if relative is None:
        return False  # outside the root: no table of this server lies there
    return layout.owner_of(relative) is None and layout.holds_homes(relative)
