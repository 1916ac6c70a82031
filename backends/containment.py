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
CreateTable, RegisterTable, DeclareTable, RenameTable, DropTable and CloneTable; the backend's
own calls (RenameTable re-registering the data it moves) do not pass them."""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lance_namespace import (
    DeregisterTableRequest,
    DescribeTableRequest,
    DescribeTableResponse,
    DropTableRequest,
    DropTableResponse,
    InvalidInputError,
    InvalidTableStateError,
    LanceNamespace,
    LanceNamespaceError,
    NamespaceExistsRequest,
    NamespaceNotFoundError,
    TableExistsRequest,
    TableNotFoundError,
)

from backends.core.external import ExternalLocation
from backends.core.lance_tables import open_lance_table
from backends.core.locations import (
    StorageLocation,
    parse_location,
    physically_inside,
    resolve_stored,
)
from backends.core.names import joined_id
from backends.core.settings import ConfigurationError
from backends.layouts import TableLayout
from backends.ownership import OwnershipRecords
from backends.tables.lifecycle import renamed_id
from backends.tables.reach import check_adopted, check_no_links

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
            if adopting and owner[:-1] == key[:-1] and _gone(self.namespace, list(owner)):
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
        if not table and not _gone(self.namespace, table_id, request):
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


# The operations the location checks stand in front of.
CHECKED_OPERATIONS = frozenset({"register_table", "declare_table", "create_table",
                                "rename_table", "drop_table", "create_namespace", "clone_table",
                                "batch_delete_table_versions"})


def checked(containment: Containment, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
    """`call`, the operation `name` of the backend, behind its location checks."""
    check = {"register_table": _register, "declare_table": _declare, "create_table": _create,
             "rename_table": _rename, "drop_table": _drop,
             "create_namespace": _create_namespace, "clone_table": _clone,
             "batch_delete_table_versions": _delete_versions}[name]
    return functools.partial(check, containment, call)


def _register(containment: Containment, register: Callable[..., Any], request: Any) -> Any:
    if not request.location or not str(request.location).strip():
        raise InvalidInputError("RegisterTable needs the location of an existing Lance table")
    table_id = list(request.id or [])
    containment.refuse_nesting(table_id, request, table=True)
    place = containment.check_new_location(table_id, request.location, True, request)
    check_adopted(table_id, place.uri, containment.namespace.root_storage_options())
    return _claimed(containment, table_id, place, register, request)


def _declare(containment: Containment, declare: Callable[..., Any], request: Any) -> Any:
    table_id = list(request.id or [])
    containment.refuse_nesting(table_id, request, table=True)
    if request.location is None:
        _refuse_data_at_home(containment, table_id, request)
        declared = declare(request)
        _claim_after(containment, table_id, declared, unrecorded_only=False)
        return declared
    place = containment.check_new_location(table_id, request.location, False, request)
    check_adopted(table_id, place.uri, containment.namespace.root_storage_options())
    return _claimed(containment, table_id, place, declare, request)


def _claimed(containment: Containment, table_id: list[str], place: StorageLocation,
             register: Callable[..., Any], request: Any) -> Any:
    """`register(request)` at a client-named `place`, claimed first and recorded after: of two
    registrations of one location at once, one is refused before the catalog is touched
    (`OwnershipRecords.claim_first`); a location is never left registered without its
    record (which keeps other tables out), so a record that cannot be written undoes the
    registration."""
    records, outside = containment.records, containment.external_of(place)
    made = records.claim_first(table_id, place, request, outside and outside.prefix)
    try:
        answer = register(request)
    except BaseException:
        if made:
            records.release_claim(place)
        raise
    try:
        records.claim(table_id, place.uri, placed=False)
    except BaseException:
        containment.namespace.for_caller(request).deregister_entry(DeregisterTableRequest(
            id=table_id, identity=request.identity, context=request.context))
        if made:
            records.release_claim(place)
        raise
    return answer


def _create(
    containment: Containment, create: Callable[..., Any], request: Any, *arguments: Any
) -> Any:
    table_id = list(request.id or [])
    containment.refuse_nesting(table_id, request, table=True)
    _refuse_data_at_home(containment, table_id, request)
    created = create(request, *arguments)
    _claim_after(containment, table_id, created, unrecorded_only=True)
    return created


def _clone(containment: Containment, clone: Callable[..., Any], request: Any) -> Any:
    """A clone is placed as a new table is; a shallow one reads its source's data files in
    place, so the source is marked as cloned (its data never deleted, its versions never
    removed) before the clone exists, and stays marked; its record names its sources."""
    table_id = list(request.id or [])
    containment.refuse_nesting(table_id, request, table=True)
    _refuse_data_at_home(containment, table_id, request)
    sources = None
    if request.is_shallow is not False and request.source_id:
        source = list(request.source_id)
        entry = _catalog_entry(containment.namespace, source, request)
        if entry.location:
            sources = containment.records.mark_cloned(source, entry.location)
    cloned = clone(request)
    try:
        containment.records.claim(table_id, cloned.location, True, sources=sources)
    except BaseException:  # a clone without its record reads nothing: undone, not answered
        with contextlib.suppress(Exception):
            containment.namespace.for_caller(request).drop_table(DropTableRequest(
                id=table_id, identity=request.identity, context=request.context))
        raise
    return cloned


def _delete_versions(containment: Containment, delete: Callable[..., Any], request: Any) -> Any:
    table_id = list(request.id or [])
    entry = _catalog_entry(containment.namespace, table_id, request)
    if entry.location and containment.records.is_cloned(table_id, entry.location):
        raise InvalidTableStateError(
            f"table {joined_id(table_id)} has shallow clones, which read the data files of "
            "its versions: its versions are not deleted")
    return delete(request)


def _create_namespace(containment: Containment, create: Callable[..., Any], request: Any) -> Any:
    containment.refuse_nesting(list(request.id or []), request, table=False)
    return create(request)


def _rename(containment: Containment, rename: Callable[..., Any], request: Any) -> Any:
    """The record names the new id before the catalog does: a rename cut off half-way (both
    entries naming the data, or only the old one) leaves DropTable of the old id unable to
    delete the data the new one may hold. A rename that failed gives the record back to the
    old id, unless the new entry was left behind (then it holds the data)."""
    old_id, new_id = list(request.id or []), renamed_id(request)
    containment.refuse_nesting(new_id, request, table=True)
    before = _catalog_entry(containment.namespace, old_id, request).location
    handed = (bool(before) and _gone(containment.namespace, new_id, request)
              and containment.records.hand_over(old_id, new_id, before))
    try:
        renamed = rename(request)
    except BaseException:
        if handed and not containment.records.names(new_id, before, request):
            containment.records.hand_over(new_id, old_id, before, renaming=False)
        raise
    try:
        containment.records.moved(old_id, new_id, before, request)
    except Exception:  # the rename took effect: answered as done, the record left behind
        logger.exception("could not move the ownership record of %s", joined_id(new_id))
    return renamed


def _claim_after(
    containment: Containment, table_id: list[str], answer: Any, unrecorded_only: bool
) -> None:
    """Record the owner of a table the backend has just placed. The table exists already: a
    record that cannot be written is logged, not answered as a failure of a write that took
    effect (without a record, DropTable leaves the data: the safe side)."""
    try:
        containment.records.claim(table_id, answer.location, True, answer.storage_options,
                                  unrecorded_only)
    except Exception:
        logger.exception("could not record the owner of %s", joined_id(table_id))


def _refuse_data_at_home(containment: Containment, table_id: list[str], request: Any) -> None:
    """A new table never takes over a Lance table already at its own path (a deregistered or
    renamed table's data): that data is adopted only by RegisterTable."""
    home = containment.home(table_id)
    if home is None:
        return
    options = containment.namespace.root_storage_options()
    if open_lance_table(home.uri, options) is None or not _gone(
        containment.namespace, table_id, request
    ):
        return  # a table already in the catalog: the backend answers that it exists
    raise InvalidInputError(
        f"a Lance table not registered as {joined_id(table_id)} lies at its own path; "
        "RegisterTable adopts it, or drop the table that keeps its data there"
    )


def _gone(namespace: LanceNamespace, table_id: list[str], request: Any = None) -> bool:
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


def _drop(containment: Containment, drop: Callable[..., Any], request: Any) -> Any:
    table_id = list(request.id or [])
    entry = _catalog_entry(containment.namespace, table_id, request)
    if entry.location:
        check_no_links(table_id, entry.location)  # refused before the entry goes
        if containment.owns(table_id, entry):
            return drop(request)
    deregistered = containment.namespace.for_caller(request).deregister_entry(
        DeregisterTableRequest(id=table_id, identity=request.identity, context=request.context))
    return DropTableResponse(id=table_id, location=deregistered.location or entry.location)


def _catalog_entry(namespace: MetadataNamespace, table_id: list[str],
                   request: Any) -> DescribeTableResponse:
    return namespace.for_caller(request).describe_table_entry(DescribeTableRequest(
        id=table_id, identity=request.identity, context=request.context))
