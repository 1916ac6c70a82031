"""The one guard of every loaded backend: `GuardedNamespace`, the wrapper `load_namespace`
puts around the backend it builds.

Every operation called on the wrapper passes the guard once, before the backend's method:
- the request's `id`, `new_namespace_id` and `new_table_name` are validated
  (`backends.core.names`, in NFC), and the tag and branch names and SQL expressions the
  request holds, and the column types of its Arrow data (`call_with_valid_id`);
- the SQL expressions and projections it carries are within the server's `RequestBounds`;
- RegisterTable, DeclareTable and DropTable pass the location checks of
  `backends.containment` when the backend names a storage root.

Inside the backend, operations call each other and their helpers as plain methods: nothing
passes the guard twice, so no flag or memo tells an inner call from an outer one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from lance_namespace import InvalidInputError, UnsupportedOperationError

from backends.containment import Containment
from backends.core.access import Reader
from backends.core.bounds import RequestBounds
from backends.core.external import ExternalLocation
from backends.core.locations import resolve_stored
from backends.core.names import validate_identifier, validate_name
from backends.core.operations import EXTENSION_METHODS, operation_methods, streamed_methods
from backends.location_checks import CHECKED_OPERATIONS, checked
from backends.rename_recovery import finish_cut_off_rename
from backends.tables.bodies import check_storable_stream
from backends.tables.refs import check_ref_names
from backends.tables.sql import check_sql_expressions

if TYPE_CHECKING:
    from backends.base import MetadataNamespace

ResultT = TypeVar("ResultT")

# The operations the wrapper puts behind the guard; any other attribute is the backend's own.
GUARDED_OPERATIONS = frozenset((*operation_methods(), *EXTENSION_METHODS, "list_operations",
                                *streamed_methods()))


class GuardedNamespace:
    """`backend` with every operation behind the guard. Anything else (`namespace_id`, the
    hooks the server asks: `storage_root`, `readiness_probe`, ...) is the backend's."""

    def __init__(self, backend: MetadataNamespace, bounds: RequestBounds | None = None,
                 external: tuple[ExternalLocation, ...] = (), catalog: str | None = None) -> None:
        self.backend = backend
        self.bounds = bounds or RequestBounds()
        root = backend.storage_root()
        # `catalog`: its name on a server of several, which ownership records name too.
        self.containment = None if root is None else Containment(
            backend, root, backend.table_layout(), external, catalog)
        backend.use_external_locations(external)

    def call(self, name: str, request: Any, *arguments: Any, **keywords: Any) -> Any:
        """The operation `name` for `request`, behind the guard."""
        operation = self.backend.for_caller(request).served_operation(name)
        if self.containment is not None and name in CHECKED_OPERATIONS:
            operation = checked(self.containment, name, operation)
        return call_with_valid_id(operation, request, *arguments, bounds=self.bounds, **keywords)

    def reading_as(self, reader: Reader) -> GuardedNamespace:
        """This guard over a view of its backend that opens tables for a caller who may read
        what `reader` says (the server gives each request's: `backends.tables.reach`)."""
        view = GuardedNamespace.__new__(GuardedNamespace)  # not `copy`: see `__getattr__`
        view.__dict__.update(self.__dict__, backend=self.backend.reading_as(reader))
        return view

    def vendable(self, table_id: Sequence[str], location: str) -> bool:
        """Whether keys for all of `location` reach only the table `table_id`'s data: not a
        place that could hold other tables' own paths, and no record naming another table."""
        if self.containment is None:
            return not self.backend.holds_other_tables(location)
        return self.containment.vendable(list(table_id), location)

    def extra_bases(self, table_id: Sequence[str], location: str) -> list[str]:
        """The extra bases recorded as the table's (a multi-base table's, in the external
        locations): vended keys cover them too. None are looked for without external
        locations."""
        if self.containment is None or not self.containment.external:
            return []
        return self.containment.records.recorded_bases(list(table_id), location)

    def table_at(self, location: str, request: Any) -> list[str]:
        """The table whose data is at `location`, by its ownership record and its catalog
        entry (asked as the caller of `request`): how a client names a clone's source."""
        if self.containment is None:
            raise UnsupportedOperationError(
                "this backend names no storage root, so the server keeps no ownership records "
                "from which to find the table at a location")
        return self.containment.records.table_at(location, request)

    def holds(self, location: str) -> bool:
        """Whether `location` lies in this backend's storage: its root or an external
        location (a server of several catalogs asks which catalog a clone's source is in)."""
        if self.containment is None:
            return False
        try:
            place = resolve_stored(location)
        except InvalidInputError:
            return False
        found = self.containment
        return found.root.contains(place) or found.external_of(place) is not None

    def keeps_versions(self, table_id: Sequence[str], location: str) -> bool:
        """Whether every version of the table must be kept (maintenance asks): shallow clones
        read the data files of its versions."""
        return self.containment is not None and self.containment.records.is_cloned(
            list(table_id), location)

    def finish_cut_off_rename(self, table_id: list[str]) -> bool:
        """Whether `table_id` was the old name of a rename cut off half-way, deregistered
        now (maintenance asks; `backends.rename_recovery`)."""
        return self.containment is not None and finish_cut_off_rename(self.containment, table_id)

    def __getattr__(self, name: str) -> Any:
        if name in GUARDED_OPERATIONS and hasattr(self.backend, name):
            return functools.partial(self.call, name)
        return getattr(self.backend, name)  # AttributeError for an operation it lacks

    def __repr__(self) -> str:
        return repr(self.backend)


def call_with_valid_id(
    call: Callable[..., ResultT], request: Any, *arguments: Any,
    bounds: RequestBounds | None = None, **keywords: Any
) -> ResultT:
    """`call(request, ...)` with `request.id`, `request.new_namespace_id`,
    `request.source_id` and `request.new_table_name` validated first (and in NFC), and the
    tag and branch names and SQL expressions it holds, and the column types of its Arrow data
    (the one positional argument of the operations that take data)."""
    updates: dict[str, Any] = {}
    for field, kind in (("id", "identifier"), ("new_namespace_id", "new_namespace_id"),
                        ("source_id", "source_id")):
        names = getattr(request, field, None)
        if names is not None:
            validated = validate_identifier(names, kind)
            if validated != names:
                updates[field] = validated
    new_name = getattr(request, "new_table_name", None)
    if new_name is not None:
        validated_name = validate_name(new_name, "new_table_name")
        if validated_name != new_name:
            updates["new_table_name"] = validated_name
    if updates:
        request = request.model_copy(update=updates)
    check_ref_names(request)
    check_sql_expressions(request, bounds)
    check_storable_stream(keywords.get("request_data", arguments[0] if arguments else None))
    return call(request, *arguments, **keywords)
