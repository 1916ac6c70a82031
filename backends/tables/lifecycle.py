"""Operations that involve the catalog as well as the data: CreateTable's declare-then-write,
DropTable's deregister-then-delete, RenameTable by re-registering, and ListAllTables by
walking every namespace. They call the backend's plain methods (`MetadataNamespace`)."""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from lance_namespace import (
    CreateTableRequest,
    CreateTableResponse,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeTableRequest,
    DescribeTableResponse,
    DropTableRequest,
    DropTableResponse,
    InvalidInputError,
    InvalidTableStateError,
    LanceNamespaceError,
    ListNamespacesRequest,
    ListTablesRequest,
    ListTablesResponse,
    RegisterTableRequest,
    RenameTableRequest,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from backends.core.arrow_schema import arrow_schema_to_json
from backends.core.modes import CreateMode
from backends.core.names import ID_DELIMITER, joined_id
from backends.core.paging import paginate
from backends.owner_record import read_record, write_record
from backends.tables.datasets import (
    TableLocation,
    checkout,
    has_data,
    latest_dataset,
    remove_data,
)
from backends.tables.writes import write_rows

if TYPE_CHECKING:
    from backends.base import MetadataNamespace
    from backends.sessions import SessionTables

logger = logging.getLogger(__name__)


def caller(request: Any) -> dict[str, Any]:
    """The identity and context of `request`, passed on to the backend calls it makes."""
    return {"identity": request.identity, "context": request.context}


def create_table(
    namespace: MetadataNamespace,
    request: CreateTableRequest,
    rows: pa.Table,
    mode: CreateMode,
    existing: TableLocation | None,
) -> CreateTableResponse:
    """Create (declare + first write), keep (exist_ok) or overwrite the table."""
    if existing is not None:
        if mode is CreateMode.CREATE:
            raise TableAlreadyExistsError(f"table {joined_id(request.id)} already exists")
        target = existing.with_options(request.storage_options)
        latest = latest_dataset(target) if mode is CreateMode.EXIST_OK else None
        if latest is not None:
            version = latest.version
        else:
            version = write_rows(rows, target, "overwrite", target).version
        return _created(existing, version)
    table = declare_new(namespace, request, request.properties, request.storage_options)
    target = table.with_options(request.storage_options)
    try:
        version = write_rows(rows, target, "create", target).version
    except BaseException:
        undeclare(namespace, request, target)
        raise
    return _created(table, version)


def declare_new(
    namespace: MetadataNamespace, request: Any, properties: dict[str, str] | None = None,
    storage_options: dict[str, str] | None = None,
) -> TableLocation:
    """Declare the new table of `request` (CreateTable, CloneTable) and say where its data
    goes. A Lance table already there (another table's, or one left behind), reached with the
    request's `storage_options` too, is never written over: the declaration is undone and the
    request refused."""
    declared = namespace.declare_table(
        DeclareTableRequest(id=request.id, properties=properties, **caller(request)))
    if not declared.location:
        raise InvalidTableStateError(f"the backend declared {request.id} without a location")
    table = namespace.opened_table(list(request.id or []), declared.location,
                               declared.storage_options, declared.properties)
    if has_data(table.with_options(storage_options)):
        undeclare(namespace, request, None)
        raise InvalidInputError(
            f"a Lance table already lies at the location of {joined_id(request.id)}; "
            "RegisterTable adopts it"
        )
    return table


def _created(table: TableLocation, version: int) -> CreateTableResponse:
    return CreateTableResponse(
        location=table.location,
        version=version,
        storage_options=table.storage_options or None,
        properties=table.properties or None,
    )


def drop_table(namespace: MetadataNamespace, request: DropTableRequest) -> DropTableResponse:
    """The entry, then the data. A table found by its data alone (a `dir` root table whose
    earlier drop was cut off) has no entry left: its data goes. Data the storage would not
    let go is answered 503 only while the table is still found by it (a retry finishes the
    drop); otherwise the drop took effect, and what is left is logged."""
    table = namespace.locate(request)
    with contextlib.suppress(TableNotFoundError):
        namespace.deregister_entry(DeregisterTableRequest(id=request.id, **caller(request)))
    if not remove_data(table):
        if namespace.table_found(request):
            raise ServiceUnavailableError(
                "the storage failed while the table's data was being deleted, and the table "
                "is still found by it: DropTable again")
        _mark_dropped(table)
    return DropTableResponse(id=request.id, location=table.location)


def _mark_dropped(table: TableLocation) -> None:
    """Mark the record of the data a drop could not delete as left by a dropped table, so a
    table created under its id deletes it first (`backends.location_checks`)."""
    try:
        record = read_record(table.location, table.options)
        if record is not None and table.key(record.owner) == table.key(table.id):
            write_record(table.location, table.options, replace(record, dropped=True))
    except LanceNamespaceError:
        logger.warning("the data table %s left could not be marked as a dropped table's",
                       joined_id(table.id))


def undeclare(namespace: MetadataNamespace, request: Any, table: TableLocation | None) -> None:
    """Undo a declaration whose first write failed (and what it wrote, `table`), so nothing
    is left half-created."""
    try:
        namespace.deregister_entry(DeregisterTableRequest(id=request.id, **caller(request)))
    except Exception:
        logger.exception("could not deregister %s after a failed write", request.id)
    if table is not None:
        remove_data(table)


def completed_description(
    described: DescribeTableResponse, request: DescribeTableRequest, tables: SessionTables
) -> DescribeTableResponse:
    """DescribeTable: the catalog entry `described`, completed as `request` asks from the
    dataset itself (opened once for both the declared check and the detailed metadata)."""
    if not described.location:
        return described
    # The spec's default is no table_uri; some catalogs' entries carry one anyway.
    if not request.with_table_uri:
        described.table_uri = None
    elif not described.table_uri:
        described.table_uri = described.location
    wants_declared = request.check_declared and described.is_only_declared is None
    wants_details = request.load_detailed_metadata and described.version is None
    if not (wants_declared or wants_details):
        return described
    table = tables.opened_table(list(request.id or []), described.location,
                            described.storage_options)
    latest = latest_dataset(table)
    if wants_declared:
        described.is_only_declared = latest is None
    if wants_details:
        dataset = checkout(table, latest, request.version, request.tag, request.branch)
        described.version = dataset.version
        described.var_schema = arrow_schema_to_json(dataset.lance_schema.to_pyarrow())
        described.table = table.id[-1]
        described.namespace = table.id[:-1]
    return described


def renamed_id(request: RenameTableRequest) -> list[str]:
    if not request.id:
        raise InvalidInputError("RenameTable needs the table's id")
    parent = request.id[:-1] if request.new_namespace_id is None else request.new_namespace_id
    return [*parent, request.new_table_name]


def rename_by_reregistering(
    namespace: MetadataNamespace,
    request: RenameTableRequest,
    table: TableLocation,
    registered_location: str | None,
) -> None:
    """Register the table's data under the new id, then deregister the old id; when that
    fails, the new registration is undone. The data stays where it is."""
    new_id = renamed_id(request)
    if new_id == list(request.id or []):
        raise InvalidInputError("RenameTable to the same id changes nothing")
    # Data is adopted (RegisterTable); a table without data yet is declared again.
    register, request_class = (
        (namespace.register_table, RegisterTableRequest)
        if has_data(table)
        else (namespace.declare_table, DeclareTableRequest)
    )
    register(request_class(
        id=new_id,
        location=registered_location,
        properties=table.properties or None,
        **caller(request),
    ))
    try:
        namespace.deregister_entry(DeregisterTableRequest(id=request.id, **caller(request)))
    except BaseException:
        namespace.deregister_entry(DeregisterTableRequest(id=new_id, **caller(request)))
        raise


def _children(namespace: MetadataNamespace, parent: list[str], request: Any) -> list[str]:
    return _every_page(
        lambda token: namespace.list_namespaces(
            ListNamespacesRequest(id=parent, page_token=token, **caller(request))
        ),
        "namespaces",
    )


def _tables(
    namespace: MetadataNamespace, parent: list[str], request: ListTablesRequest
) -> list[str]:
    return _every_page(
        lambda token: namespace.list_tables(
            ListTablesRequest(
                id=parent,
                page_token=token,
                include_declared=request.include_declared,
                **caller(request),
            )
        ),
        "tables",
    )


def _every_page(list_page: Callable[[str | None], Any], field: str) -> list[str]:
    """Every name of a paged listing; a level that cannot hold any answers nothing."""
    names: list[str] = []
    token: str | None = None
    while True:
        try:
            page = list_page(token)
        except (InvalidInputError, UnsupportedOperationError):
            return names
        names.extend(getattr(page, field) or [])
        token = page.page_token
        if not token:
            return names


def list_all_tables(
    namespace: MetadataNamespace,
    request: ListTablesRequest,
    delimiter: str = ID_DELIMITER,
    is_declared_only: Callable[[list[str]], bool] | None = None,
) -> ListTablesResponse:
    """Every table under `request.id` (the root by default), as ids joined with `delimiter`,
    sorted and paged; declared tables without data only when `include_declared` allows."""
    if not delimiter:
        raise InvalidInputError("delimiter must not be empty")
    found: list[str] = []
    pending = deque([list(request.id or [])])
    while pending:
        parent = pending.popleft()
        for name in _tables(namespace, parent, request):
            table_id = [*parent, name]
            if (
                request.include_declared is False
                and is_declared_only
                and is_declared_only(table_id)
            ):
                continue
            found.append(delimiter.join(table_id))
        pending.extend([*parent, child] for child in _children(namespace, parent, request))
    page, token = paginate(found, request.page_token, request.limit)
    return ListTablesResponse(tables=page, page_token=token)
