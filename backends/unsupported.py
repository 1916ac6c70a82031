"""`UnsupportedOperations`: the operations no catalog backend can do here, each answering code 0
with its reason (`backends.capabilities.unsupported`); a backend that can do one overrides it."""

from __future__ import annotations

from lance_namespace import (
    AlterTransactionRequest,
    AlterTransactionResponse,
    BatchCommitTablesRequest,
    BatchCommitTablesResponse,
    BatchCreateTableVersionsRequest,
    BatchCreateTableVersionsResponse,
    CreateMaterializedViewRequest,
    CreateMaterializedViewResponse,
    CreateTableVersionRequest,
    CreateTableVersionResponse,
    DescribeTransactionRequest,
    DescribeTransactionResponse,
    RefreshMaterializedViewRequest,
    RefreshMaterializedViewResponse,
)

from backends.capabilities import unsupported
from backends.core.extensions import (
    AlterNamespaceRequest,
    AlterNamespaceResponse,
    AlterTableRequest,
    AlterTableResponse,
)

NO_TRANSACTIONS = "every operation of this adapter commits at once; there are no open transactions"
NO_MANIFEST_STORE = "the table's manifests are managed by Lance at its location, not by a store"
NO_JOBS = "it needs a job service (UDF backfills, materialized views) this adapter does not run"


class UnsupportedOperations:
    """The operations no catalog backend can do here, answering code 0 with the reason;
    a backend that can do one overrides it."""

    @unsupported("the catalog offers no way to change a namespace's properties here")
    def alter_namespace(self, request: AlterNamespaceRequest) -> AlterNamespaceResponse:
        raise NotImplementedError

    @unsupported("the catalog offers no way to change a table's properties here")
    def alter_table(self, request: AlterTableRequest) -> AlterTableResponse:
        raise NotImplementedError

    @unsupported(NO_TRANSACTIONS)
    def describe_transaction(
        self, request: DescribeTransactionRequest
    ) -> DescribeTransactionResponse:
        raise NotImplementedError

    @unsupported(NO_TRANSACTIONS)
    def alter_transaction(self, request: AlterTransactionRequest) -> AlterTransactionResponse:
        raise NotImplementedError

    @unsupported("pylance commits one table at a time; there is no atomic multi-table commit")
    def batch_commit_tables(self, request: BatchCommitTablesRequest) -> BatchCommitTablesResponse:
        raise NotImplementedError

    @unsupported(NO_JOBS)
    def create_materialized_view(
        self, request: CreateMaterializedViewRequest
    ) -> CreateMaterializedViewResponse:
        raise NotImplementedError

    @unsupported(NO_JOBS)
    def refresh_materialized_view(
        self, request: RefreshMaterializedViewRequest
    ) -> RefreshMaterializedViewResponse:
        raise NotImplementedError

    @unsupported(NO_MANIFEST_STORE)
    def create_table_version(
        self, request: CreateTableVersionRequest
    ) -> CreateTableVersionResponse:
        raise NotImplementedError

    @unsupported(NO_MANIFEST_STORE)
    def batch_create_table_versions(
        self, request: BatchCreateTableVersionsRequest
    ) -> BatchCreateTableVersionsResponse:
        raise NotImplementedError
