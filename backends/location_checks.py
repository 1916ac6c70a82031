"""The location checks of `backends.containment` put in front of the operations that place,
adopt, move, copy or delete a table's data: `checked(containment, name, call)` is the
operation `name` behind them (the guard applies it to the client's calls only)."""

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
    ServiceUnavailableError,
)

from backends.containment import Containment
from backends.core.external import admitting
from backends.core.lance_tables import open_lance_table
from backends.core.locations import StorageLocation
from backends.core.names import joined_id
from backends.ownership import table_gone
from backends.tables.datasets import TableLocation, remove_data
from backends.tables.lifecycle import renamed_id
from backends.tables.reach import check_adopted, check_no_links

if TYPE_CHECKING:
    from backends.base import MetadataNamespace

logger = logging.getLogger("lance_adapter")

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
    _claim_bases(containment, table_id, place, request)
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
    _claim_bases(containment, table_id, place, request)
    return _claimed(containment, table_id, place, declare, request)


def _claim_bases(containment: Containment, table_id: list[str], place: StorageLocation,
                 request: Any) -> None:
    """The data at `place` checked to reach only its own bytes and the extra bases the
    operator allows (`backends.tables.reach.check_adopted`), each recorded as the table's
    before the table is registered (a base another table's data is in, around or below:
    code 13)."""
    bases = check_adopted(table_id, place.uri, containment.namespace.root_storage_options(),
                          containment.external)
    for base in bases:
        outside = admitting(containment.external, table_id, base)
        assert outside is not None  # check_adopted admitted it there
        containment.records.claim_base(table_id, base, request, outside.prefix)


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
    handed = (bool(before) and table_gone(containment.namespace, new_id, request)
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
    renamed table's data): that data is adopted only by RegisterTable. Data a drop of the
    same id could not delete (its record says so) is deleted first."""
    home = containment.home(table_id)
    if home is None:
        return
    options = containment.namespace.root_storage_options()
    if open_lance_table(home.uri, options) is None or not table_gone(
        containment.namespace, table_id, request
    ):
        return  # a table already in the catalog: the backend answers that it exists
    if containment.records.left_by_drop(table_id, home.uri):
        _remove_left_data(table_id, home, options)  # what a drop of this id could not delete
        return
    raise InvalidInputError(
        f"a Lance table not registered as {joined_id(table_id)} lies at its own path; "
        "RegisterTable adopts it, or drop the table that keeps its data there"
    )


def _remove_left_data(table_id: list[str], home: StorageLocation,
                      options: dict[str, str]) -> None:
    """Delete what a drop of `table_id` could not, before a table of that id is created
    there; 503 / code 17 while the storage keeps it (nothing created)."""
    if not remove_data(TableLocation(id=list(table_id), location=home.uri,
                                     storage_options=options)):
        raise ServiceUnavailableError(
            "the data a dropped table of this id left at its path could not be deleted yet "
            "(the storage failed); retry")


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
