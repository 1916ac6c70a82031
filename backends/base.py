"""`MetadataNamespace`: the base class of backends whose catalog keeps only metadata.

A subclass implements its catalog calls: the namespace operations, `list_tables`,
`declare_table`, `register_table`, `deregister_table`, `table_exists` and `describe_table_entry`
(id -> location, storage options, properties); it tells the server what it needs through
`backends.hooks`. Every table operation is inherited: pylance does it at the table's location,
opened once per request. Operations nobody can do here answer code 0 naming the operation and
the backend (`@unsupported`); `list_operations` tells them apart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from lance import LanceDataset
from lance_namespace import (
    AlterTableAddColumnsRequest,
    AlterTableAddColumnsResponse,
    AlterTableAlterColumnsRequest,
    AlterTableAlterColumnsResponse,
    AlterTableBackfillColumnsRequest,
    AlterTableBackfillColumnsResponse,
    AlterTableDropColumnsRequest,
    AlterTableDropColumnsResponse,
    AnalyzeTableQueryPlanRequest,
    BatchDeleteTableVersionsRequest,
    BatchDeleteTableVersionsResponse,
    CountTableRowsRequest,
    CountTableRowsResponse,
    CreateTableBranchRequest,
    CreateTableBranchResponse,
    CreateTableIndexRequest,
    CreateTableIndexResponse,
    CreateTableRequest,
    CreateTableResponse,
    CreateTableScalarIndexResponse,
    CreateTableTagRequest,
    CreateTableTagResponse,
    DeleteFromTableRequest,
    DeleteFromTableResponse,
    DeleteTableBranchRequest,
    DeleteTableBranchResponse,
    DeleteTableTagRequest,
    DeleteTableTagResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeTableIndexStatsRequest,
    DescribeTableIndexStatsResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DescribeTableVersionRequest,
    DescribeTableVersionResponse,
    DropTableIndexRequest,
    DropTableIndexResponse,
    DropTableRequest,
    DropTableResponse,
    ExplainTableQueryPlanRequest,
    GetTableStatsRequest,
    GetTableStatsResponse,
    GetTableTagVersionRequest,
    GetTableTagVersionResponse,
    InsertIntoTableRequest,
    InsertIntoTableResponse,
    InvalidInputError,
    InvalidTableStateError,
    LanceNamespace,
    ListTableBranchesRequest,
    ListTableBranchesResponse,
    ListTableIndicesRequest,
    ListTableIndicesResponse,
    ListTablesRequest,
    ListTablesResponse,
    ListTableTagsRequest,
    ListTableTagsResponse,
    ListTableVersionsRequest,
    ListTableVersionsResponse,
    MergeInsertIntoTableRequest,
    MergeInsertIntoTableResponse,
    QueryTableRequest,
    QueryTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    RestoreTableRequest,
    RestoreTableResponse,
    TableExistsRequest,
    TableExistsResponse,
    TableNotFoundError,
    UpdateFieldMetadataRequest,
    UpdateFieldMetadataResponse,
    UpdateTableRequest,
    UpdateTableResponse,
    UpdateTableSchemaMetadataRequest,
    UpdateTableSchemaMetadataResponse,
    UpdateTableTagRequest,
    UpdateTableTagResponse,
)

from backends.capabilities import list_operations, unsupported
from backends.clones import CloneTables
from backends.containment import holds_other_tables
from backends.core.arrow_answers import ArrowFileAnswer
from backends.core.extensions import ListOperationsRequest, ListOperationsResponse
from backends.core.locations import resolve_stored
from backends.core.modes import CreateMode, WriteMode, parse_mode
from backends.core.names import ID_DELIMITER, joined_id
from backends.core.operations import IDEMPOTENCY_KEY, traits_of
from backends.hooks import ServerHooks
from backends.layouts import TableLayout
from backends.sessions import SessionTables
from backends.tables import history, indexes, lifecycle, reads, schema, updates, writes
from backends.tables.bodies import arrow_rows, read_arrow_stream
from backends.tables.datasets import (
    TableLocation,
    checkout,
    has_data,
    latest_dataset,
    open_dataset,
)
from backends.tables.lifecycle import caller
from backends.unsupported import NO_JOBS, UnsupportedOperations

_Response = TypeVar("_Response")
logger = logging.getLogger("lance_adapter")


class MetadataNamespace(CloneTables, SessionTables, UnsupportedOperations, ServerHooks,
                        LanceNamespace):
    """A catalog backend, put behind its one guard by `backends.load_namespace`
    (`backends.guard.GuardedNamespace`); inside, operations call each other as plain methods."""

    # -- hooks for subclasses ----------------------------------------------------------------

    def served_operation(self, name: str) -> Callable[..., Any]:
        """The method that serves the operation `name` (the guard calls it)."""
        return getattr(self, name)

    def honours(self, name: str, trait: str) -> bool:
        """Whether this backend's `name` acts on its boolean trait (`streamed_body`, `keyed`)."""
        return bool(getattr(traits_of(name), trait))

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        """The catalog's entry of the table: location, storage options, properties."""
        return LanceNamespace.describe_table(self, request)

    def table_entry_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        """TableNotFoundError unless the catalog holds the table (TableExists's catalog part)."""
        return LanceNamespace.table_exists(self, request)

    def registers_anywhere(self) -> bool:
        """Whether the catalog keeps a table's location as it is given, so that a table may
        be registered outside the root, in an operator's external location."""
        return True

    def backend_name(self) -> str:
        """How code-0 messages name this backend (a class name: no addresses or paths)."""
        return type(self).__name__

    def storage_root(self) -> str | None:
        """Where this backend keeps table data; client-named locations must lie inside it
        (`backends.containment`). None: a plug-in that names no root is not checked."""
        return None

    def table_layout(self) -> TableLayout:
        """Where the tables this backend creates go (`backends.layouts`): each id's own path
        under `storage_root`."""
        return TableLayout()

    def holds_other_tables(self, location: str) -> bool:
        """Whether keys for all of `location` could reach other tables' own paths
        (`backends.containment.holds_other_tables`); the credential vendor asks."""
        root = self.storage_root()
        return root is not None and holds_other_tables(root, self.table_layout(), location)

    def deregister_entry(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        """The catalog's part of DropTable and RenameTable: the entry removed (the client's
        DeregisterTable may refuse what these may do)."""
        return self.deregister_table(request)

    def root_storage_options(self) -> dict[str, str]:
        """The storage options of the backend's own storage (its root)."""
        return {}

    def own_location(self, table_id: list[str]) -> str:
        """Where a table the server creates goes: the id's own path under the storage root,
        its names escaped once where Lance would read them otherwise."""
        home = self.table_layout().home(table_id)
        root = self.storage_root()
        if home is None or root is None:
            raise InvalidInputError(
                f"table {joined_id(table_id)} has no own path in this backend's layout"
            )
        return resolve_stored(root).child(*home).uri

    def registered_location(self, table: TableLocation) -> str | None:
        """The location RegisterTable takes for `table`'s data (rename re-registers it); None:
        the renamed table is declared at its new id's own path."""
        return table.location

    # -- resolving a table -------------------------------------------------------------------

    def locate(self, request: Any) -> TableLocation:
        """Where the table of `request` keeps its data, from the catalog."""
        entry = self.describe_table_entry(DescribeTableRequest(id=request.id, **caller(request)))
        if not entry.location:
            raise InvalidTableStateError(f"table {joined_id(request.id)} has no location")
        return self.opened_table(list(request.id or []), entry.location, entry.storage_options,
                             entry.properties)

    def open(self, request: Any, version: int | None = None) -> LanceDataset:
        """The table's dataset at `version` of the request's branch: one open per request."""
        return open_dataset(self.locate(request), version, branch=getattr(request, "branch", None))

    def table_found(self, request: Any) -> bool:
        """Whether TableExists finds the table of `request` (as its caller)."""
        try:
            self.table_exists(TableExistsRequest(id=request.id, **caller(request)))
        except TableNotFoundError:
            return False
        return True

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        """The catalog's entry, and the version asked for (if any) in the table's data."""
        self.table_entry_exists(request)
        if request.version is not None:
            self.open(request, request.version)
        return TableExistsResponse()

    # -- describe ----------------------------------------------------------------------------

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        """The catalog entry, completed as the request asks from the dataset itself (opened
        once for both the declared check and the detailed metadata)."""
        entry = self.describe_table_entry(request)
        return lifecycle.completed_description(entry, request, self)

    # -- lifecycle ---------------------------------------------------------------------------

    def create_table(self, request: CreateTableRequest, request_data: bytes) -> CreateTableResponse:
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        rows = read_arrow_stream(request_data)
        existing = self.locate(request) if self.table_found(request) else None
        created = lifecycle.create_table(self, request, rows, mode, existing)
        return self._rows_written(request, created)

    def drop_table(self, request: DropTableRequest) -> DropTableResponse:
        return lifecycle.drop_table(self, request)

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        table = self.locate(request)
        lifecycle.rename_by_reregistering(self, request, table, self.registered_location(table))
        return RenameTableResponse()

    def list_all_tables(
        self, request: ListTablesRequest, delimiter: str = ID_DELIMITER
    ) -> ListTablesResponse:
        def declared_only(table_id: list[str]) -> bool:
            return not has_data(self.locate(DescribeTableRequest(id=table_id, **caller(request))))

        return lifecycle.list_all_tables(self, request, delimiter, declared_only)

    def list_operations(self, request: ListOperationsRequest) -> ListOperationsResponse:
        return list_operations(self, request)

    # -- rows --------------------------------------------------------------------------------

    def insert_into_table(self, request: InsertIntoTableRequest,
                          request_data: bytes) -> InsertIntoTableResponse:
        mode = parse_mode(request.mode, WriteMode, WriteMode.APPEND)
        rows = arrow_rows(request_data)
        table = self.locate(request)
        latest = latest_dataset(table)
        dataset = None if latest is None else checkout(table, latest, branch=request.branch)
        key = (request.context or {}).get(IDEMPOTENCY_KEY)
        return self._rows_written(request, writes.insert_rows(
            table, dataset, rows, mode, key, request.branch))

    def merge_insert_into_table(
        self, request: MergeInsertIntoTableRequest, request_data: bytes
    ) -> MergeInsertIntoTableResponse:
        rows = read_arrow_stream(request_data)
        table, dataset, key = self._write_target(request)
        return self._rows_written(request, writes.merge_insert(table, dataset, request, rows, key))

    def update_table(self, request: UpdateTableRequest) -> UpdateTableResponse:
        table, dataset, key = self._write_target(request)
        return self._rows_written(request, updates.update_rows(table, dataset, request, key))

    def delete_from_table(self, request: DeleteFromTableRequest) -> DeleteFromTableResponse:
        table, dataset, key = self._write_target(request)
        return self._rows_written(request, updates.delete_rows(table, dataset, request, key))

    def _write_target(self, request: Any) -> tuple[TableLocation, LanceDataset, str | None]:
        """The table a write of rows changes, opened at its branch's latest version, and the
        write's idempotency key (if any)."""
        table = self.locate(request)
        dataset = open_dataset(table, branch=request.branch)
        return table, dataset, (request.context or {}).get(IDEMPOTENCY_KEY)

    def rows_written(self, table_id: list[str]) -> None:
        """Called after every write of rows through the server (create, insert, merge,
        update, delete): a catalog that records whether a table has data (impls' `empty_table`
        marker) updates it here. Nothing by default."""

    def _rows_written(self, request: Any, response: _Response) -> _Response:
        """`response` to a write of rows, whose commit took effect: a catalog that fails to
        take note is logged, never answered as a failure a client would retry (writing the
        rows twice); the next write takes note again."""
        try:
            self.rows_written(list(request.id or []))
        except Exception as error:
            logger.warning("rows were written to table %s, but the catalog could not record "
                           "that it has data: %s", joined_id(request.id), error)
        return response

    def count_table_rows(self, request: CountTableRowsRequest) -> CountTableRowsResponse:
        return reads.count_rows(self.open(request, request.version), request)

    def query_table(self, request: QueryTableRequest) -> QueryTableResponse:
        return QueryTableResponse(data=self.stream_query_table(request).to_bytes())

    def stream_query_table(self, request: QueryTableRequest) -> ArrowFileAnswer:
        """QueryTable's rows as they are read: what the server answers with (traits)."""
        return reads.query(self.open(request, request.version), request)

    def explain_table_query_plan(self, request: ExplainTableQueryPlanRequest) -> str:
        dataset = self.open(request, request.query.version)
        return reads.query_plan(dataset, request.query, False, bool(request.verbose))

    def analyze_table_query_plan(self, request: AnalyzeTableQueryPlanRequest) -> str:
        return reads.query_plan(self.open(request, request.version), request, True, False)

    def get_table_stats(self, request: GetTableStatsRequest) -> GetTableStatsResponse:
        return reads.table_stats(self.open(request))

    # -- indexes -----------------------------------------------------------------------------

    def create_table_index(self, request: CreateTableIndexRequest) -> CreateTableIndexResponse:
        indexes.create_index(self.open(request), request, scalar_only=False)
        return CreateTableIndexResponse()

    def create_table_scalar_index(
        self, request: CreateTableIndexRequest
    ) -> CreateTableScalarIndexResponse:
        indexes.create_index(self.open(request), request, scalar_only=True)
        return CreateTableScalarIndexResponse()

    def list_table_indices(self, request: ListTableIndicesRequest) -> ListTableIndicesResponse:
        return indexes.list_indices(self.open(request, request.version), request)

    def describe_table_index_stats(
        self, request: DescribeTableIndexStatsRequest
    ) -> DescribeTableIndexStatsResponse:
        return indexes.index_stats(self.open(request, request.version), request.index_name)

    def drop_table_index(self, request: DropTableIndexRequest) -> DropTableIndexResponse:
        indexes.drop_index(self.open(request), request)
        return DropTableIndexResponse()

    # -- versions, tags, branches ------------------------------------------------------------

    def list_table_versions(self, request: ListTableVersionsRequest) -> ListTableVersionsResponse:
        return history.list_versions(self.open(request), request)

    def describe_table_version(
        self, request: DescribeTableVersionRequest
    ) -> DescribeTableVersionResponse:
        return history.describe_version(self.open(request), request.version)

    def batch_delete_table_versions(
        self, request: BatchDeleteTableVersionsRequest
    ) -> BatchDeleteTableVersionsResponse:
        return history.delete_versions(self.open(request), request)

    def restore_table(self, request: RestoreTableRequest) -> RestoreTableResponse:
        history.restore(self.open(request, request.version))
        return RestoreTableResponse()

    def list_table_tags(self, request: ListTableTagsRequest) -> ListTableTagsResponse:
        return history.list_tags(self.open(request), request)

    def get_table_tag_version(
        self, request: GetTableTagVersionRequest
    ) -> GetTableTagVersionResponse:
        return history.tag_version(self.open(request), request.tag)

    def create_table_tag(self, request: CreateTableTagRequest) -> CreateTableTagResponse:
        history.create_tag(self.open(request), request)
        return CreateTableTagResponse()

    def update_table_tag(self, request: UpdateTableTagRequest) -> UpdateTableTagResponse:
        history.update_tag(self.open(request), request)
        return UpdateTableTagResponse()

    def delete_table_tag(self, request: DeleteTableTagRequest) -> DeleteTableTagResponse:
        history.delete_tag(self.open(request), request.tag)
        return DeleteTableTagResponse()

    def create_table_branch(self, request: CreateTableBranchRequest) -> CreateTableBranchResponse:
        history.create_branch(self.open(request), request)
        return CreateTableBranchResponse()

    def list_table_branches(self, request: ListTableBranchesRequest) -> ListTableBranchesResponse:
        return history.list_branches(self.open(request), request)

    def delete_table_branch(self, request: DeleteTableBranchRequest) -> DeleteTableBranchResponse:
        history.delete_branch(self.open(request), request.name)
        return DeleteTableBranchResponse()

    # -- schema ------------------------------------------------------------------------------

    def alter_table_add_columns(
        self, request: AlterTableAddColumnsRequest
    ) -> AlterTableAddColumnsResponse:
        return AlterTableAddColumnsResponse(version=schema.add_columns(self.open(request), request))

    def alter_table_alter_columns(
        self, request: AlterTableAlterColumnsRequest
    ) -> AlterTableAlterColumnsResponse:
        version = schema.alter_columns(self.open(request), request)
        return AlterTableAlterColumnsResponse(version=version)

    def alter_table_drop_columns(
        self, request: AlterTableDropColumnsRequest
    ) -> AlterTableDropColumnsResponse:
        version = schema.drop_columns(self.open(request), request)
        return AlterTableDropColumnsResponse(version=version)

    @unsupported(NO_JOBS)
    def alter_table_backfill_columns(
        self, request: AlterTableBackfillColumnsRequest
    ) -> AlterTableBackfillColumnsResponse:
        raise NotImplementedError

    def update_table_schema_metadata(
        self, request: UpdateTableSchemaMetadataRequest
    ) -> UpdateTableSchemaMetadataResponse:
        metadata = schema.update_schema_metadata(self.open(request), request.metadata)
        return UpdateTableSchemaMetadataResponse(metadata=metadata)

    def update_field_metadata(
        self, request: UpdateFieldMetadataRequest
    ) -> UpdateFieldMetadataResponse:
        return schema.update_field_metadata(self.open(request), request)
