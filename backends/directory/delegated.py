"""The operations `DirectoryBackend` hands to pylance's native `DirectoryNamespace`, one
method each: as they are (`Pylance.as_is`: DescribeNamespace, NamespaceExists, DescribeTransaction),
or with their errors given the spec's codes and the generic operation for a request the native
one would not honour in full or a table its lookup misses (`_delegated`: listing and
dropping indexes, tags, branch listing and deletion, restore,
dropping columns and schema metadata), each after the one checked open of the table
(`backends.tables.reach`: natively a table is opened as its files say).
`backends.directory.native` says what the native operations ignore. Counts are the generic
operation's: it opens the table through the worker's remembered latest versions
(`backends.tables.latest`), where the native count lists every version the table keeps. So
are the writes of rows (insert, merge, update, delete): they open the table the same way, and
inserts' and merges' commits are marked, so that a lost answer is read back and a keyed retry
recognised (`backends.tables.writes`)."""

from __future__ import annotations

from typing import Any

from lance_namespace import (
    AlterTableDropColumnsRequest,
    AlterTableDropColumnsResponse,
    CreateTableTagRequest,
    CreateTableTagResponse,
    DeleteTableBranchRequest,
    DeleteTableBranchResponse,
    DeleteTableTagRequest,
    DeleteTableTagResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTransactionRequest,
    DescribeTransactionResponse,
    DropTableIndexRequest,
    DropTableIndexResponse,
    GetTableTagVersionRequest,
    GetTableTagVersionResponse,
    ListTableBranchesRequest,
    ListTableBranchesResponse,
    ListTableIndicesRequest,
    ListTableIndicesResponse,
    ListTableTagsRequest,
    ListTableTagsResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    RestoreTableRequest,
    RestoreTableResponse,
    UpdateTableSchemaMetadataRequest,
    UpdateTableSchemaMetadataResponse,
    UpdateTableTagRequest,
    UpdateTableTagResponse,
)


class NativeOperations:
    """The delegated operations; the class mixing it in defines `_pylance` (a
    `backends.directory.pylance.Pylance`) and `_delegated`."""

    _pylance: Any
    _delegated: Any

    # -- as they are --------------------------------------------------------------------------

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        return self._pylance.as_is("describe_namespace", request)

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        return self._pylance.as_is("namespace_exists", request)

    def describe_transaction(
        self, request: DescribeTransactionRequest
    ) -> DescribeTransactionResponse:
        return self._pylance.as_is("describe_transaction", request)

    # -- their errors translated, the generic operation as the fallback -----------------------

    def list_table_indices(self, request: ListTableIndicesRequest) -> ListTableIndicesResponse:
        return self._delegated("list_table_indices", request)

    def drop_table_index(self, request: DropTableIndexRequest) -> DropTableIndexResponse:
        return self._delegated("drop_table_index", request)

    def restore_table(self, request: RestoreTableRequest) -> RestoreTableResponse:
        return self._delegated("restore_table", request)

    def update_table_schema_metadata(
        self, request: UpdateTableSchemaMetadataRequest
    ) -> UpdateTableSchemaMetadataResponse:
        return self._delegated("update_table_schema_metadata", request)

    def alter_table_drop_columns(
        self, request: AlterTableDropColumnsRequest
    ) -> AlterTableDropColumnsResponse:
        return self._delegated("alter_table_drop_columns", request)

    def list_table_tags(self, request: ListTableTagsRequest) -> ListTableTagsResponse:
        return self._delegated("list_table_tags", request)

    def get_table_tag_version(
        self, request: GetTableTagVersionRequest
    ) -> GetTableTagVersionResponse:
        return self._delegated("get_table_tag_version", request)

    def create_table_tag(self, request: CreateTableTagRequest) -> CreateTableTagResponse:
        return self._delegated("create_table_tag", request)

    def update_table_tag(self, request: UpdateTableTagRequest) -> UpdateTableTagResponse:
        return self._delegated("update_table_tag", request)

    def delete_table_tag(self, request: DeleteTableTagRequest) -> DeleteTableTagResponse:
        return self._delegated("delete_table_tag", request)

    def list_table_branches(self, request: ListTableBranchesRequest) -> ListTableBranchesResponse:
        return self._delegated("list_table_branches", request)

    def delete_table_branch(self, request: DeleteTableBranchRequest) -> DeleteTableBranchResponse:
        return self._delegated("delete_table_branch", request)
