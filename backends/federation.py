"""Several catalogs behind one server: `FederatedNamespace` serves each configured catalog (a
backend behind its own guard, `backends.guard`) as a top-level namespace of the catalog's name.

An operation on `[catalog, *rest]` is the catalog's operation on `rest`, so every id a client
sends or reads keeps the catalog as its first part and a grant on `aws$sales` covers the
`sales` namespace of the catalog `aws` only. The root lists the catalogs and holds no table;
the catalogs come from configuration, so none is created, dropped or altered by a request;
what would span catalogs (a rename from one to another, a clone between them, a transaction
over several) is refused with a sentence saying so.
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from lance_namespace import (
    DescribeNamespaceResponse,
    InvalidInputError,
    ListNamespacesResponse,
    ListTablesResponse,
    NamespaceExistsResponse,
    NamespaceNotFoundError,
    ServiceUnavailableError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from backends.core.access import Reader
from backends.core.extensions import ListOperationsRequest, ListOperationsResponse
from backends.core.external import ExternalLocation
from backends.core.locations import StorageLocation, local_directory, resolve_stored
from backends.core.names import ID_DELIMITER, joined_id
from backends.core.operations import Subject, Traits, all_traits, traits_of
from backends.core.paging import paginate
from backends.core.settings import ConfigurationError
from backends.federation_probes import CatalogProbes
from backends.guard import GUARDED_OPERATIONS, GuardedNamespace
from backends.hooks import Stamp, Stamper

# What DescribeNamespace says of a catalog: the backend serving it (never its properties,
# which may hold credentials).
CATALOG_IMPL_PROPERTY = "catalog.impl"
# Fields naming a second id, which must lie in the same catalog as `id`.
_OTHER_IDS = ("new_namespace_id", "source_id")


class FederatedNamespace:
    """`catalogs` (name -> its guarded backend), each under the top-level namespace of its
    name; `impls` names each one's backend (`dir`, `glue`, ...)."""

    def __init__(self, catalogs: Mapping[str, GuardedNamespace], impls: Mapping[str, str],
                 probe_timeout: float = 5.0) -> None:
        self.catalogs = dict(catalogs)
        self.impls = dict(impls)
        self._probes = CatalogProbes(self.catalogs, probe_timeout)

    def __getattr__(self, name: str) -> Any:
        if name in GUARDED_OPERATIONS and any(hasattr(c, name) for c in self.catalogs.values()):
            return functools.partial(self.call, name)
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"FederatedNamespace({', '.join(self.catalogs)})"

    def reading_as(self, reader: Reader) -> FederatedNamespace:
        """These catalogs, each opening tables for a caller who may read what `reader` says
        of whole ids (a catalog's table ids lead with its name)."""
        view = FederatedNamespace.__new__(FederatedNamespace)  # not `copy`: `__getattr__`
        view.__dict__.update(self.__dict__, catalogs={
            name: catalog.reading_as(_within(reader, name))
            for name, catalog in self.catalogs.items()})
        return view

    def namespace_id(self) -> str:
        return f"federated({','.join(sorted(self.catalogs))})"

    # -- routing -----------------------------------------------------------------------------

    def call(self, name: str, request: Any, *arguments: Any, **keywords: Any) -> Any:
        """The operation `name` for `request`: the catalog's its id names, or the root's."""
        traits = _traits(name)
        if traits.subject is Subject.NOTHING:
            return self._operations(request)
        if traits.subject is Subject.CATALOG:
            raise UnsupportedOperationError(
                f"{traits.operation_id} is not served by a server of several catalogs: it may "
                "span catalogs, which commit separately")
        identifier = list(request.id or [])
        if not identifier:
            return self._at_root(traits, request)
        if len(identifier) == 1 and traits.method == "create_namespace":
            raise _fixed_catalogs(traits, f"namespace {identifier[0]}")
        catalog = self._catalog(identifier, traits)
        if len(identifier) == 1:
            if traits.subject is Subject.TABLE:
                raise TableNotFoundError(
                    f"table {identifier[0]} not found: the root holds catalogs, not tables")
            return self._on_catalog(traits, identifier[0], catalog, request)
        inner = request.model_copy(update={"id": identifier[1:], **self._other_ids(
            traits, identifier[0], request)})
        answer = getattr(catalog, name)(inner, *arguments, **keywords)
        if name == "list_all_tables":
            return _prefixed(answer, identifier[0])
        return _with_catalog(answer, identifier[0])

    def _catalog(self, identifier: list[str], traits: Traits) -> GuardedNamespace:
        catalog = self.catalogs.get(identifier[0])
        if catalog is not None:
            return catalog
        if traits.subject is Subject.TABLE:
            raise TableNotFoundError(f"table {joined_id(identifier)} not found: there is no "
                                     f"catalog {identifier[0]}")
        raise NamespaceNotFoundError(f"namespace {joined_id(identifier)} not found: there is "
                                     f"no catalog {identifier[0]}")

    def _other_ids(self, traits: Traits, catalog: str, request: Any) -> dict[str, list[str]]:
        """The request's second ids (a rename's target namespace, a clone's source) inside
        the catalog: refused when they name another."""
        updates = {}
        for field in _OTHER_IDS:
            other = getattr(request, field, None)
            if other is None:
                continue
            if not other or other[0] != catalog:
                raise UnsupportedOperationError(
                    f"{traits.operation_id} cannot reach from catalog {catalog} to "
                    f"{joined_id(other) or 'the root'}: each catalog commits its own tables")
            updates[field] = list(other[1:])
        return updates

    def _operations(self, request: ListOperationsRequest) -> ListOperationsResponse:
        """The operations the catalog of `request.id` serves; without an id, those every
        catalog serves (an operation listed then works wherever a client calls it)."""
        identifier = list(request.id or [])
        catalogs = ([self._catalog(identifier, _traits("list_namespaces"))] if identifier
                    else list(self.catalogs.values()))
        inner = request.model_copy(update={"id": None})
        served = set.intersection(*(set(catalog.list_operations(inner).operations)
                                    for catalog in catalogs))
        return ListOperationsResponse(operations=sorted(
            operation for operation in served if _servable(operation)))

    def catalog_of(self, identifier: Sequence[str] | None) -> str | None:
        """The catalog an id lies in (metrics label calls with it), or None for the root."""
        return identifier[0] if identifier and identifier[0] in self.catalogs else None

    # -- the root and the catalogs themselves -------------------------------------------------

    def _at_root(self, traits: Traits, request: Any) -> Any:
        method = traits.method
        if method == "list_namespaces":
            page, token = paginate(self.catalogs, request.page_token, request.limit)
            return ListNamespacesResponse(namespaces=page, page_token=token)
        if method == "describe_namespace":
            return DescribeNamespaceResponse(properties={})
        if method == "namespace_exists":
            return NamespaceExistsResponse()
        if method == "list_tables":
            paginate((), request.page_token, request.limit)  # a negative limit is refused
            return ListTablesResponse(tables=[])
        if method == "list_all_tables":
            return self._all_tables(request)
        raise _fixed_catalogs(traits, "the root")

    def _on_catalog(
        self, traits: Traits, name: str, catalog: GuardedNamespace, request: Any
    ) -> Any:
        """A namespace operation on the catalog `name` itself: reads are its root's; the
        catalog is not created, altered or dropped by a request."""
        method = traits.method
        if method == "describe_namespace":
            return DescribeNamespaceResponse(properties={CATALOG_IMPL_PROPERTY: self.impls[name]})
        if method == "namespace_exists":
            return NamespaceExistsResponse()
        if method in ("list_namespaces", "list_tables"):
            return getattr(catalog, method)(request.model_copy(update={"id": []}))
        if method == "list_all_tables":
            return _prefixed(catalog.list_all_tables(request.model_copy(update={"id": []})), name)
        raise _fixed_catalogs(traits, f"catalog {name}")

    def _all_tables(self, request: Any) -> ListTablesResponse:
        """Every table of every catalog, a page at a time: the catalogs in order, each paged
        by its own tokens (the page token holds the catalog and its token)."""
        names = sorted(self.catalogs)
        start, inner_token = _read_token(request.page_token, names)
        limit = request.limit
        if limit is not None and limit < 0:
            raise InvalidInputError(f"limit must not be negative, got {limit}")
        tables: list[str] = []
        for position in range(start, len(names)):
            wanted = None if not limit else limit - len(tables)
            page = self.catalogs[names[position]].list_all_tables(request.model_copy(
                update={"id": [], "page_token": inner_token, "limit": wanted}))
            tables += _prefixed(page, names[position]).tables
            inner_token = None
            if page.page_token:
                return ListTablesResponse(
                    tables=tables, page_token=_token(names[position], page.page_token))
            if limit and len(tables) >= limit and position + 1 < len(names):
                return ListTablesResponse(tables=tables, page_token=_token(names[position + 1]))
        return ListTablesResponse(tables=tables)

    # -- what the server asks of its backend (`backends.hooks`) --------------------------------

    def storage_paths(self) -> list[str]:
        """Every catalog's storage root: hidden in every error answer."""
        return [root for catalog in self.catalogs.values()
                if isinstance(root := catalog.storage_root(), str)]

    def storage_root(self) -> None:
        """No one root: `storage_paths` names them all."""
        return None

    def check_reachable_at_start(self) -> None:
        for catalog in self.catalogs.values():
            catalog.check_reachable_at_start()

    def checks_callers(self) -> bool:
        return all(catalog.checks_callers() for catalog in self.catalogs.values())

    def honours(self, method: str, trait: str) -> bool:
        return all(getattr(catalog, "honours", lambda *_: False)(method, trait)
                   for catalog in self.catalogs.values())

    def readiness_probe(self) -> dict[str, str]:
        """Ready while any catalog answers its probe and passes its checks: one catalog down
        leaves the server serving the others (its own requests answer 503, code 17). The
        catalogs down, each with the kind of its failure (`/readyz` shows them); when none
        answers, ServiceUnavailableError."""
        down = self._probes.down()
        if len(down) == len(self.catalogs):
            raise ServiceUnavailableError(
                "no catalog answers: " + ", ".join(f"{name} ({why})" for name, why in
                                                   sorted(down.items())))
        return down

    def cache_stamper(self) -> Stamper | None:
        """Each catalog's stamps for its own ids; a catalog without stamps has none."""
        stampers = {name: catalog.cache_stamper() for name, catalog in self.catalogs.items()}

        def stamp(operation_id: str, table_id: list[str] | None, answer: Any) -> Stamp | None:
            if not table_id or len(table_id) < 2 or stampers.get(table_id[0]) is None:
                return None
            return stampers[table_id[0]](operation_id, table_id[1:], answer)

        return stamp if any(stampers.values()) else None

    def table_at(self, location: str, request: Any) -> list[str]:
        """The table at `location`, in the catalog whose storage holds it (catalogs' places
        never overlap, unless the operator let them: then the first that records it)."""
        for name, catalog in self.catalogs.items():
            if not catalog.holds(location):
                continue
            try:
                return [name, *catalog.table_at(location, request)]
            except (TableNotFoundError, UnsupportedOperationError, InvalidInputError):
                continue
        raise InvalidInputError(
            "source_location is not the location of a table this server recorded")

    def vendable(self, table_id: Sequence[str], location: str) -> bool:
        catalog = self.catalogs.get(table_id[0]) if table_id else None
        return catalog is not None and catalog.vendable(list(table_id[1:]), location)

    def extra_bases(self, table_id: Sequence[str], location: str) -> list[str]:
        catalog = self.catalogs.get(table_id[0]) if table_id else None
        return [] if catalog is None else catalog.extra_bases(list(table_id[1:]), location)

    # -- what maintenance asks (`backends.maintenance.maintain_all`), by catalog ------------

    def open(self, request: Any) -> Any:
        """The table of `request` opened by its catalog (the maintenance worker's open)."""
        identifier = list(request.id or [])
        catalog = self._catalog(identifier, _traits("describe_table"))
        return catalog.open(request.model_copy(update={"id": identifier[1:]}))

    def sweep_abandoned(self, abandoned_after: float) -> list[str]:
        return [swept for catalog in self.catalogs.values()
                for swept in catalog.sweep_abandoned(abandoned_after)]

    def finish_cut_off_rename(self, table_id: list[str]) -> bool:
        catalog = self.catalogs.get(table_id[0]) if table_id else None
        return catalog is not None and catalog.finish_cut_off_rename(list(table_id[1:]))

    def keeps_versions(self, table_id: Sequence[str], location: str) -> bool:
        catalog = self.catalogs.get(table_id[0]) if table_id else None
        return catalog is not None and catalog.keeps_versions(list(table_id[1:]), location)

    def renew_lance_session(self, new_session: Callable[[], Any], cache_bytes: int) -> bool:
        return any([catalog.renew_lance_session(new_session, cache_bytes)
                    for catalog in self.catalogs.values()])


def _servable(operation_id: str) -> bool:
    """Whether a server of several catalogs serves the operation: not one that may span them."""
    try:
        return traits_of(operation_id).subject is not Subject.CATALOG
    except KeyError:  # an alias (GetTable) the server adds to the list afterwards
        return True


def _traits(method: str) -> Traits:
    """The traits of the operation the backend method `method` answers (a streamed answer's
    method, `stream_query_table`, answers its operation, QueryTable)."""
    return _streamed_traits().get(method) or traits_of(method)


@functools.cache
def _streamed_traits() -> dict[str, Traits]:
    return {traits.streamed_method: traits for traits in all_traits() if traits.streamed_method}


def _fixed_catalogs(traits: Traits, where: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(
        f"{traits.operation_id} on {where} is not served: the top-level namespaces are the "
        "server's catalogs, set by its `catalogs` setting")


# The fields of answers that name an id (DropTable's and DeregisterTable's `id`,
# DescribeTable's `namespace`): answered as the client named them, the catalog first.
_ANSWERED_IDS = ("id", "namespace")


def _with_catalog(answer: Any, catalog: str) -> Any:
    """`answer` with the ids it names inside `catalog` leading with the catalog's name (a copy:
    the catalog's answer may be one its cache holds)."""
    fields = getattr(type(answer), "model_fields", {})
    updates = {name: [catalog, *value] for name in _ANSWERED_IDS if name in fields
               and isinstance(value := getattr(answer, name), list)}
    return answer.model_copy(update=updates) if updates else answer


def _prefixed(answer: ListTablesResponse, catalog: str) -> ListTablesResponse:
    answer.tables = [f"{catalog}{ID_DELIMITER}{table}" for table in answer.tables]
    return answer


def _token(catalog: str, inner: str | None = None) -> str:
    raw = json.dumps([catalog, inner]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _read_token(token: str | None, names: list[str]) -> tuple[int, str | None]:
    """Where a ListAllTables page token resumes: the catalog's position and its token."""
    if not token:
        return 0, None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        catalog, inner = json.loads(raw)
        return names.index(catalog), inner
    except (ValueError, TypeError):
        raise InvalidInputError("page_token is not one this server gave") from None


def _within(reader: Reader, catalog: str) -> Reader:
    return lambda table_id: reader([catalog, *table_id])


def externals_by_catalog(
    names: Sequence[str], external: Sequence[ExternalLocation]
) -> dict[str, tuple[ExternalLocation, ...]]:
    """Each catalog's external locations: those bound to a namespace of it (the binding's
    first name is the catalog's), bound within it. A location bound to every namespace, or to
    no catalog, is refused: a place several catalogs could register would let a table of one
    take, and delete, another's data."""
    by_catalog: dict[str, list[ExternalLocation]] = {name: [] for name in names}
    for entry in external:
        if not entry.namespace or entry.namespace[0] not in by_catalog:
            raise ConfigurationError(
                f"setting 'external_locations': {entry.prefix.uri} must be bound to a "
                "namespace of one catalog, its name first (such as "
                f"'{next(iter(names), 'lake')}$hr'): a place open to several catalogs would "
                "let a table of one take another's data")
        by_catalog[entry.namespace[0]].append(replace(entry, namespace=entry.namespace[1:]))
    return {name: tuple(entries) for name, entries in by_catalog.items()}


def refuse_nested_roots(places: Mapping[str, Sequence[str | None]]) -> None:
    """ConfigurationError when a place of one catalog (its storage root, its external
    locations) is a place of another, or one lies inside the other (on a local root, also once
    links are resolved): a table of one could then be registered at, and delete, data of the
    other's."""
    resolved = [(name, _root_place(place)) for name, listed in sorted(places.items())
                for place in listed if place]
    for (first, one), (second, other) in itertools.combinations(resolved, 2):
        if first != second and (one.contains(other) or other.contains(one)):
            raise ConfigurationError(
                f"setting 'catalogs': the storage of catalogs {first!r} and {second!r} (a root "
                "or an external location) is one, or one lies inside the other, so a table of "
                "one could reach the other's data: give each catalog places of its own, or set "
                "catalogs_nested_roots to serve them anyway")


def _root_place(root: str) -> StorageLocation:
    local = local_directory(root)
    return resolve_stored(os.path.realpath(local) if local is not None else root)
