"""The `dir` backend's table operations that are pylance's native ones as they are, their
errors given the spec's codes by `_native` (see `backends.directory.backend.DirectoryBackend`)."""

from __future__ import annotations

from typing import Any

from lance_namespace import (
    AlterTableDropColumnsRequest,
    AlterTableDropColumnsResponse,
    AnalyzeTableQueryPlanRequest,
    CountTableRowsRequest,
    CountTableRowsResponse,
    CreateTableIndexRequest,
    CreateTableScalarIndexResponse,
    CreateTableTagRequest,
    CreateTableTagResponse,
    DeleteFromTableRequest,
    DeleteFromTableResponse,
    DeleteTableBranchRequest,
    DeleteTableBranchResponse,
    DeleteTableTagRequest,
    DeleteTableTagResponse,
    DescribeTableIndexStatsRequest,
    DescribeTableIndexStatsResponse,
    DropTableIndexRequest,
    DropTableIndexResponse,
    ExplainTableQueryPlanRequest,
    GetTableStatsRequest,
    GetTableStatsResponse,
    GetTableTagVersionRequest,
    GetTableTagVersionResponse,
    ListTableBranchesRequest,
    ListTableBranchesResponse,
    ListTableIndicesRequest,
    ListTableIndicesResponse,
    ListTableTagsRequest,
    ListTableTagsResponse,
    MergeInsertIntoTableRequest,
    MergeInsertIntoTableResponse,
    QueryTableRequest,
    QueryTableResponse,
    RestoreTableRequest,
    RestoreTableResponse,
    UpdateTableRequest,
    UpdateTableResponse,
    UpdateTableSchemaMetadataRequest,
    UpdateTableSchemaMetadataResponse,
    UpdateTableTagRequest,
    UpdateTableTagResponse,
)


class NativeTableOperations:
    """Mixed in before `DirectoryNamespace`, so these wrappers win over its methods."""

    def _native(self, name: str, *arguments: Any) -> Any:
        raise NotImplementedError

    def merge_insert_into_table(
        self, request: MergeInsertIntoTableRequest, request_data: bytes
    ) -> MergeInsertIntoTableResponse:
        return self._native("merge_insert_into_table", request, request_data)

    def update_table(self, request: UpdateTableRequest) -> UpdateTableResponse:
        return self._native("update_table", request)

    def delete_from_table(self, request: DeleteFromTableRequest) -> DeleteFromTableResponse:
        return self._native("delete_from_table", request)

    def count_table_rows(self, request: CountTableRowsRequest) -> CountTableRowsResponse:
        return self._native("count_table_rows", request)

    def query_table(self, request: QueryTableRequest) -> QueryTableResponse:
        return self._native("query_table", request)

    def create_table_scalar_index(
        self, request: CreateTableIndexRequest
    ) -> CreateTableScalarIndexResponse:
        return self._native("create_table_scalar_index", request)

    def list_table_indices(self, request: ListTableIndicesRequest) -> ListTableIndicesResponse:
        return self._native("list_table_indices", request)

    def describe_table_index_stats(
        self, request: DescribeTableIndexStatsRequest
    ) -> DescribeTableIndexStatsResponse:
        return self._native("describe_table_index_stats", request)

    def drop_table_index(self, request: DropTableIndexRequest) -> DropTableIndexResponse:
        return self._native("drop_table_index", request)

    def restore_table(self, request: RestoreTableRequest) -> RestoreTableResponse:
        return self._native("restore_table", request)

    def update_table_schema_metadata(
        self, request: UpdateTableSchemaMetadataRequest
    ) -> UpdateTableSchemaMetadataResponse:
        return self._native("update_table_schema_metadata", request)

    def get_table_stats(self, request: GetTableStatsRequest) -> GetTableStatsResponse:
        return self._native("get_table_stats", request)

    def explain_table_query_plan(self, request: ExplainTableQueryPlanRequest) -> str:
        return self._native("explain_table_query_plan", request)

    def analyze_table_query_plan(self, request: AnalyzeTableQueryPlanRequest) -> str:
        return self._native("analyze_table_query_plan", request)

    def alter_table_drop_columns(
        self, request: AlterTableDropColumnsRequest
    ) -> AlterTableDropColumnsResponse:
        return self._native("alter_table_drop_columns", request)

    def list_table_tags(self, request: ListTableTagsRequest) -> ListTableTagsResponse:
        return self._native("list_table_tags", request)

    def get_table_tag_version(
        self, request: GetTableTagVersionRequest
    ) -> GetTableTagVersionResponse:
        return self._native("get_table_tag_version", request)

    def create_table_tag(self, request: CreateTableTagRequest) -> CreateTableTagResponse:
        return self._native("create_table_tag", request)

    def update_table_tag(self, request: UpdateTableTagRequest) -> UpdateTableTagResponse:
        return self._native("update_table_tag", request)

    def delete_table_tag(self, request: DeleteTableTagRequest) -> DeleteTableTagResponse:
        return self._native("delete_table_tag", request)

    def list_table_branches(self, request: ListTableBranchesRequest) -> ListTableBranchesResponse:
        return self._native("list_table_branches", request)

    def delete_table_branch(self, request: DeleteTableBranchRequest) -> DeleteTableBranchResponse:
        return self._native("delete_table_branch", request)
