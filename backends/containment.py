"""Where a client may point a table, and which data DropTable may delete.

Locations are read by the one parser of `backends.locations`: a client-named location
strictly (`parse_location` refuses query, fragment, percent-encoding, `.`/`..`, empty
segments, backslashes and invalid bucket names, every form Lance would open elsewhere than the
check reads), a stored one as Lance opens it (`resolve_stored`). A table *owns* its location
when that place lies strictly inside the backend's storage root, is not one of the catalog's
own files (the directory backend's `__manifest`), and no other table of the catalog is
registered at it, above it or below it. RegisterTable and DeclareTable accept a client-named
location only if the new table would own it (RegisterTable also needs a Lance table there);
anything else is code 13 and nothing is written. DropTable deletes data only at a location
the table owns; otherwise it removes the catalog entry and leaves the data where it is.

`contain(namespace)` puts these checks in front of the backend's register_table,
declare_table and drop_table. It is applied once, when the server loads its backend.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
from collections.abc import Callable, Iterator
from typing import Any

from lance_namespace import (
    DeregisterTableRequest,
    DescribeTableRequest,
    DropTableResponse,
    InvalidInputError,
    LanceNamespace,
    LanceNamespaceError,
    ListTablesRequest,
    UnsupportedOperationError,
)

from backends.locations import StorageLocation, parse_location, resolve_stored
from backends.names import ID_DELIMITER, call_with_valid_id, joined_id
from backends.properties import ConfigurationError

# Files of the directory backend's catalog, directly below its root.
CATALOG_ENTRIES = frozenset({"__manifest"})
# Tables being renamed by re-registration: the new entry may share the old one's location.
_moving_from: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar(
    "moving_from", default=None
)


class Containment:
    """The location checks of one backend, whose storage root is `root`."""

    def __init__(self, namespace: LanceNamespace, root: str) -> None:
        self.namespace = namespace
        try:
            self.root = resolve_stored(root)
        except InvalidInputError as error:
            raise ConfigurationError(f"the storage root cannot be used: {error}") from None

    def check_new_location(self, table_id: list[str], location: str) -> StorageLocation:
        """A client-named location the table `table_id` would own, else code 13: parsed
        strictly (`parse_location` refuses every form Lance would read otherwise)."""
        path = self._inside_root(parse_location(location, self.root))
        if path is None:
            raise InvalidInputError(
                "a table location must lie inside the server's storage root and must not be "
                "the root itself or the catalog's own files"
            )
        other = self._overlapping_table(table_id, path)
        if other is not None:
            table = joined_id(other)
            raise InvalidInputError(
                f"the location belongs to table {table} (or lies above or below it)"
            )
        return path

    def owned_path(self, location: str) -> StorageLocation | None:
        """Where Lance opens a stored `location`, when inside the root and outside the
        catalog's files; None when it is elsewhere or names no one place."""
        try:
            return self._inside_root(resolve_stored(location, self.root))
        except InvalidInputError:
            return None

    def _inside_root(self, path: StorageLocation) -> StorageLocation | None:
        relative = path.relative_to(self.root)
        if relative is None or relative[0] in CATALOG_ENTRIES:
            return None
        return path if _physically_inside(path, self.root) else None

    def owns(self, table_id: list[str], location: str) -> bool:
        path = self.owned_path(location)
        return path is not None and self._overlapping_table(table_id, path) is None

    def _overlapping_table(
        self, table_id: list[str], path: StorageLocation
    ) -> list[str] | None:
        excluded = {tuple(table_id), _moving_from.get()}
        for other_id, other_location in self._registered_locations(table_id[:1]):
            if tuple(other_id) in excluded:
                continue
            with contextlib.suppress(InvalidInputError):
                if resolve_stored(other_location, self.root).overlaps(path):
                    return other_id
        return None

    def _registered_locations(self, top: list[str]) -> Iterator[tuple[list[str], str]]:
        """Every table of the catalog with its location (tables without one are skipped);
        a catalog that cannot list its root (Iceberg without `warehouses`) lists `top`."""
        try:
            yield from self._locations_under([])
        except UnsupportedOperationError:
            yield from self._locations_under(top)

    def _locations_under(self, parent: list[str]) -> Iterator[tuple[list[str], str]]:
        token: str | None = None
        for _ in range(100_000):  # bounded: a backend that never ends its paging stops here
            page = self.namespace.list_all_tables(
                ListTablesRequest(id=parent, page_token=token, include_declared=True)
            )
            for joined in page.tables or []:
                table_id = joined.split(ID_DELIMITER)
                with contextlib.suppress(LanceNamespaceError):
                    location = self._location_of(table_id)
                    if location:
                        yield table_id, location
            token = page.page_token
            if not token:
                return

    def _location_of(self, table_id: list[str]) -> str | None:
        describe = getattr(self.namespace, "describe_table_entry", self.namespace.describe_table)
        return describe(DescribeTableRequest(id=table_id)).location


def _physically_inside(path: StorageLocation, root: StorageLocation) -> bool:
    """On a local root, whether `path` still lies strictly inside it once symbolic links
    (an operator's, in the root or above the table) are resolved: a link must never let a
    table's data, and so a DropTable, reach outside the root."""
    if path.scheme != "file":
        return True
    real_root = os.path.realpath(root.uri).rstrip("/") + "/"
    return os.path.realpath(path.uri).startswith(real_root)


@contextlib.contextmanager
def moving_table(table_id: list[str]) -> Iterator[None]:
    """While a table is re-registered under a new id, its old entry may share the location."""
    token = _moving_from.set(tuple(table_id))
    try:
        yield
    finally:
        _moving_from.reset(token)


def contain(namespace: LanceNamespace, root: str | None) -> LanceNamespace:
    """`namespace` (storage root `root`) with the location checks; a plug-in that names no
    root is left as it is."""
    if root is None:
        return namespace
    containment = Containment(namespace, root)
    _wrap(namespace, "register_table", functools.partial(_register, containment))
    _wrap(namespace, "declare_table", functools.partial(_declare, containment))
    _wrap(namespace, "drop_table", functools.partial(_drop, containment))
    return namespace


def _wrap(namespace: LanceNamespace, name: str, guard: Callable[..., Any]) -> None:
    original = getattr(namespace, name)

    @functools.wraps(original)
    def guarded(request: Any, *arguments: Any) -> Any:
        # The id is validated before the checks look anything up with it.
        return call_with_valid_id(functools.partial(guard, original), request, *arguments)

    setattr(namespace, name, guarded)


def _register(containment: Containment, register: Callable[..., Any], request: Any) -> Any:
    if not request.location or not str(request.location).strip():
        raise InvalidInputError("RegisterTable needs the location of an existing Lance table")
    containment.check_new_location(list(request.id or []), request.location)
    return register(request)


def _declare(containment: Containment, declare: Callable[..., Any], request: Any) -> Any:
    if request.location is not None:
        containment.check_new_location(list(request.id or []), request.location)
    return declare(request)


def _drop(containment: Containment, drop: Callable[..., Any], request: Any) -> Any:
    table_id = list(request.id or [])
    location = containment._location_of(table_id)
    if location and containment.owns(table_id, location):
        return drop(request)
    deregistered = containment.namespace.deregister_table(
        DeregisterTableRequest(id=table_id, identity=request.identity, context=request.context)
    )
    return DropTableResponse(id=table_id, location=deregistered.location or location)
