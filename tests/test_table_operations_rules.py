"""The rules around the table operations: modes in every official spelling, the spec's error
codes for bad input (and nothing changed), ListOperations computed from the backend, code-0
answers naming operation and backend, RenameTable undone on failure, ListAllTables paging."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from lance_namespace import (
    AlterTableBackfillColumnsRequest,
    AlterTableDropColumnsRequest,
    BatchCommitTablesRequest,
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableIndexRequest,
    CreateTableRequest,
    CreateTableTagRequest,
    CreateTableVersionRequest,
    DeclareTableRequest,
    DeleteFromTableRequest,
    DeregisterTableRequest,
    DescribeTransactionRequest,
    DropTableIndexRequest,
    GetTableTagVersionRequest,
    InsertIntoTableRequest,
    InvalidInputError,
    LanceNamespace,
    LanceNamespaceError,
    ListTablesRequest,
    RenameTableRequest,
    RestoreTableRequest,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableBranchNotFoundError,
    TableColumnNotFoundError,
    TableExistsRequest,
    TableIndexNotFoundError,
    TableNotFoundError,
    TableSchemaValidationError,
    TableTagAlreadyExistsError,
    TableTagNotFoundError,
    TableVersionNotFoundError,
    UnsupportedOperationError,
)

from backends.capabilities import list_operations
from backends.core.extensions import AlterNamespaceRequest, AlterTableRequest, ListOperationsRequest
from backends.guard import GuardedNamespace
from backends.plugin import PluginNamespace
from tests.support.lance_data import arrow_stream, sample_table, tree_snapshot
from tests.support.plugin_stand_ins import MetadataOnlyNamespace, RecordingNamespace
from tests.support.tables import BACKENDS, backend, read_back

TABLE = ["cat", "items"]


@pytest.fixture(params=sorted(BACKENDS))
def namespace(request: pytest.FixtureRequest, data_root: Path) -> LanceNamespace:
    return backend(request.param, data_root)


def _count(namespace: LanceNamespace, table_id: list[str] = TABLE) -> int:
    return namespace.count_table_rows(CountTableRowsRequest(id=table_id)).count


def test_create_modes_in_every_spelling(namespace: LanceNamespace) -> None:
    namespace.create_table(CreateTableRequest(id=TABLE), arrow_stream(sample_table(100)))
    for spelling in ("exist_ok", "ExistOk", "EXIST_OK", "exist-ok", "existok"):
        found = namespace.create_table(
            CreateTableRequest(id=TABLE, mode=spelling), arrow_stream(sample_table(1))
        )
        assert found.version == 1, f"{spelling} answers the existing table's version"
        assert read_back(namespace, TABLE).count_rows() == 100, f"{spelling} keeps the data"
    for spelling in ("create", "Create", "CREATE"):
        with pytest.raises(
            TableAlreadyExistsError, match=r"already exists: items|cat\$items already exists"
        ) as refused:
            namespace.create_table(
                CreateTableRequest(id=TABLE, mode=spelling), arrow_stream(sample_table(1))
            )
        assert refused.value.code == 5, spelling
    for rows, spelling in enumerate(("overwrite", "Overwrite", "OVERWRITE"), start=2):
        namespace.create_table(
            CreateTableRequest(id=TABLE, mode=spelling), arrow_stream(sample_table(rows))
        )
        assert read_back(namespace, TABLE).count_rows() == rows, spelling


def test_unknown_modes_are_invalid_input_and_change_nothing(
    namespace: LanceNamespace, data_root: Path
) -> None:
    namespace.create_table(CreateTableRequest(id=TABLE), arrow_stream(sample_table(100)))
    before = tree_snapshot(data_root)
    for spelling in ("ExistsOk", "replace", "", "exist ok"):
        with pytest.raises(
            InvalidInputError, match=f"mode must be one of create, .*, got '{spelling}'"
        ) as refused:
            namespace.create_table(
                CreateTableRequest(id=TABLE, mode=spelling), arrow_stream(sample_table(1))
            )
        assert refused.value.code == 13, spelling
        with pytest.raises(
            InvalidInputError, match=f"one of append, overwrite, got '{spelling or 'bogus'}'"
        ) as refused:
            namespace.insert_into_table(
                InsertIntoTableRequest(id=TABLE, mode=spelling or "bogus"),
                arrow_stream(sample_table(1)),
            )
        assert refused.value.code == 13, spelling
    assert tree_snapshot(data_root) == before
    for spelling in ("Append", "APPEND", "append"):
        namespace.insert_into_table(
            InsertIntoTableRequest(id=TABLE, mode=spelling), arrow_stream(sample_table(1))
        )
    assert _count(namespace) == 103


# (case, the error, a regex of its message from either backend, the call)
BAD_REQUESTS: list[tuple[str, type[LanceNamespaceError], str, Any]] = [
    (
        "unknown column in a filter",
        InvalidInputError,
        r"no column named nope|No field named nope",
        lambda n: n.count_table_rows(CountTableRowsRequest(id=TABLE, predicate="nope > 1")),
    ),
    (
        "bad SQL",
        InvalidInputError,
        r"Error parsing statement",
        lambda n: n.delete_from_table(DeleteFromTableRequest(id=TABLE, predicate="id >>> 1")),
    ),
    (
        "no predicate",
        InvalidInputError,
        r"requires a non-empty predicate|needs a predicate",
        lambda n: n.delete_from_table(DeleteFromTableRequest(id=TABLE, predicate=" ")),
    ),
    (
        "not an Arrow stream",
        InvalidInputError,
        r"(Invalid|not an) Arrow IPC stream",
        lambda n: n.insert_into_table(InsertIntoTableRequest(id=TABLE), b"not arrow"),
    ),
    (
        "another schema",
        TableSchemaValidationError,
        r"different schema: .*unexpected=\[other\]",
        lambda n: n.insert_into_table(
            InsertIntoTableRequest(id=TABLE), arrow_stream(pa.table({"other": [1.5]}))
        ),
    ),
    (
        "unknown index type",
        InvalidInputError,
        r"index_type must be one of .*, got 'NOPE'",
        lambda n: n.create_table_index(
            CreateTableIndexRequest(id=TABLE, column="id", index_type="NOPE")
        ),
    ),
    (
        "missing column",
        TableColumnNotFoundError,
        "Column nope does not exist in the dataset",
        lambda n: n.alter_table_drop_columns(
            AlterTableDropColumnsRequest(id=TABLE, columns=["nope"])
        ),
    ),
    (
        "missing index",
        TableIndexNotFoundError,
        r"index 'nope'|index not found: name=nope",
        lambda n: n.drop_table_index(DropTableIndexRequest(id=TABLE, index_name="nope")),
    ),
    (
        "missing tag",
        TableTagNotFoundError,
        r"tag 'nope'|tag nope does not exist",
        lambda n: n.get_table_tag_version(GetTableTagVersionRequest(id=TABLE, tag="nope")),
    ),
    (
        "existing tag",
        TableTagAlreadyExistsError,
        r"tag 'v1'|tag v1 already exists",
        lambda n: n.create_table_tag(CreateTableTagRequest(id=TABLE, tag="v1", version=1)),
    ),
    (
        "missing version",
        TableVersionNotFoundError,
        r"_versions/99\.manifest was not found",
        lambda n: n.restore_table(RestoreTableRequest(id=TABLE, version=99)),
    ),
    (
        "missing branch",
        TableBranchNotFoundError,
        r"branch 'nope' not found|branch nope does not exist",
        lambda n: n.count_table_rows(CountTableRowsRequest(id=TABLE, branch="nope")),
    ),
    (
        "missing table",
        TableNotFoundError,
        r"table id 'cat\$nope'",
        lambda n: n.count_table_rows(CountTableRowsRequest(id=["cat", "nope"])),
    ),
]


@pytest.mark.parametrize(
    ("case", "error", "why", "call"), BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS]
)
def test_bad_input_gets_the_spec_error_and_changes_nothing(
    namespace: LanceNamespace, data_root: Path, case: str, error: type, why: str, call: Any
) -> None:
    namespace.create_table(CreateTableRequest(id=TABLE), arrow_stream(sample_table(10)))
    namespace.create_table_tag(CreateTableTagRequest(id=TABLE, tag="v1", version=1))
    before = tree_snapshot(data_root)
    with pytest.raises(error, match=why) as refused:
        call(namespace)
    assert refused.value.code == error.code, f"{case}: {refused.value}"
    assert tree_snapshot(data_root) == before


class _WithoutRegister(MetadataOnlyNamespace):
    register_table = LanceNamespace.register_table


def test_list_operations_is_computed_from_the_backend(data_root: Path) -> None:
    request = ListOperationsRequest()
    plugin = GuardedNamespace(PluginNamespace(_WithoutRegister(root=str(data_root))))
    operations = plugin.list_operations(request).operations
    assert "RegisterTable" not in operations
    assert {"CreateTable", "DeregisterTable", "RenameTable", "ListAllTables"} <= set(operations)
    assert not {"AlterNamespace", "DescribeTransaction", "CreateTableVersion"} & set(operations)
    full = backend("metadata-only", data_root).list_operations(request).operations
    assert set(full) - set(operations) == {"RegisterTable"}

    directory = backend("dir", data_root / "dir").list_operations(request).operations
    assert {"RenameTable", "ListAllTables", "UpdateFieldMetadata", "DescribeTransaction"} <= set(
        directory
    )
    assert not {"AlterTableBackfillColumns", "CreateMaterializedView", "AlterTable"} & set(
        directory
    )
    recording = list_operations(RecordingNamespace(), request).operations
    assert recording == [
        "DescribeNamespace", "DescribeTable", "ListNamespaces", "ListOperations", "ListTables"
    ]


CODE_ZERO_CALLS: list[tuple[str, Any]] = [
    ("AlterNamespace", lambda n: n.alter_namespace(AlterNamespaceRequest(id=["cat"]))),
    ("AlterTable", lambda n: n.alter_table(AlterTableRequest(id=TABLE))),
    ("BatchCommitTables", lambda n: n.batch_commit_tables(BatchCommitTablesRequest(operations=[]))),
    (
        "AlterTableBackfillColumns",
        lambda n: n.alter_table_backfill_columns(
            AlterTableBackfillColumnsRequest(id=TABLE, column="id")
        ),
    ),
]


@pytest.mark.parametrize(
    ("operation", "call"), CODE_ZERO_CALLS, ids=[c[0] for c in CODE_ZERO_CALLS]
)
def test_code_zero_names_the_operation_and_the_backend(
    namespace: LanceNamespace, operation: str, call: Any
) -> None:
    with pytest.raises(
        UnsupportedOperationError, match=f"{operation} is not supported by the"
    ) as refused:
        call(namespace)
    assert refused.value.code == 0
    plugin = isinstance(namespace.backend, PluginNamespace)
    name = "MetadataOnlyNamespace" if plugin else "Directory"
    assert operation in str(refused.value) and name in str(refused.value)


def test_generic_code_zero_for_transactions_and_manifests(data_root: Path) -> None:
    plugin = backend("metadata-only", data_root)
    for operation, call in (
        (
            "DescribeTransaction",
            lambda: plugin.describe_transaction(DescribeTransactionRequest(id=[*TABLE, "t1"])),
        ),
        (
            "CreateTableVersion",
            lambda: plugin.create_table_version(
                CreateTableVersionRequest(id=TABLE, version=2, manifest_path="m")
            ),
        ),
    ):
        with pytest.raises(UnsupportedOperationError, match=operation):
            call()


class _FailingDeregister(MetadataOnlyNamespace):
    def deregister_table(self, request: DeregisterTableRequest) -> Any:
        if request.id == TABLE:
            raise ServiceUnavailableError("the catalog is down")
        return self.catalog.deregister_table(request)


def test_rename_is_undone_when_the_old_id_cannot_be_removed(data_root: Path) -> None:
    plugin = GuardedNamespace(PluginNamespace(_FailingDeregister(root=str(data_root))))
    plugin.create_namespace(CreateNamespaceRequest(id=["cat"]))
    plugin.create_table(CreateTableRequest(id=TABLE), arrow_stream(sample_table(5)))
    with pytest.raises(ServiceUnavailableError, match="the catalog is down"):
        plugin.rename_table(RenameTableRequest(id=TABLE, new_table_name="renamed"))
    plugin.table_exists(TableExistsRequest(id=TABLE))
    with pytest.raises(TableNotFoundError, match=r"table id 'cat\$renamed'"):
        plugin.table_exists(TableExistsRequest(id=["cat", "renamed"]))
    assert plugin.list_tables(ListTablesRequest(id=["cat"])).tables == ["items"]
    assert read_back(plugin, TABLE).count_rows() == 5, "the data stays under the old id"


def test_list_all_tables_walks_pages_and_honours_include_declared(
    namespace: LanceNamespace,
) -> None:
    for table_id in (["cat", "a"], ["cat", "sub", "b"], ["cat", "sub", "c"], ["cat", "d"]):
        namespace.create_table(CreateTableRequest(id=table_id), arrow_stream(sample_table(2)))
    namespace.declare_table(DeclareTableRequest(id=["cat", "sub", "declared"]))
    everything = ["cat$a", "cat$d", "cat$sub$b", "cat$sub$c", "cat$sub$declared"]
    assert namespace.list_all_tables(ListTablesRequest()).tables == everything

    pages, token = [], None
    while True:
        page = namespace.list_all_tables(ListTablesRequest(limit=2, page_token=token))
        pages.append(page.tables)
        token = page.page_token
        if not token:
            break
    assert pages == [everything[:2], everything[2:4], everything[4:]]

    with_data = namespace.list_all_tables(
        ListTablesRequest(id=["cat", "sub"], include_declared=False)
    )
    assert with_data.tables == ["cat$sub$b", "cat$sub$c"]
    dotted = namespace.list_all_tables(ListTablesRequest(id=["cat", "sub"]), delimiter=".")
    assert dotted.tables == ["cat.sub.b", "cat.sub.c", "cat.sub.declared"]


def test_a_version_range_as_wide_as_the_integers_is_not_expanded(data_root) -> None:
    """BatchDeleteTableVersions tests versions against the ranges; it never lists a range."""
    from lance_namespace import BatchDeleteTableVersionsRequest, CreateTableRequest
    from lance_namespace_urllib3_client.models import VersionRange

    from tests.support.lance_data import arrow_stream, sample_table
    from tests.support.tables import backend, read_back

    namespace = backend("metadata-only", data_root)
    table = ["cat", "wide"]
    namespace.create_table(CreateTableRequest(id=table), arrow_stream(sample_table(3)))
    namespace.create_table(CreateTableRequest(id=table, mode="overwrite"),
                           arrow_stream(sample_table(4)))
    deleted = namespace.batch_delete_table_versions(BatchDeleteTableVersionsRequest(
        id=table, ranges=[VersionRange(start_version=0, end_version=2)]
    ))
    assert deleted.deleted_count == 1
    with pytest.raises(
        InvalidInputError, match="the latest version 2 cannot be deleted"
    ) as refused:
        namespace.batch_delete_table_versions(BatchDeleteTableVersionsRequest(
            id=table, ranges=[VersionRange(start_version=0, end_version=2**63 - 1)]
        ))
    assert refused.value.code == 13  # it covers the latest version
    assert read_back(namespace, table).count_rows() == 4


def test_deleting_a_version_a_tag_names_is_refused_until_the_tag_goes(
    namespace: LanceNamespace,
) -> None:
    from lance_namespace import (
        BatchDeleteTableVersionsRequest,
        DeleteTableTagRequest,
        InvalidTableStateError,
    )
    from lance_namespace_urllib3_client.models import VersionRange

    namespace.create_table(CreateTableRequest(id=TABLE), arrow_stream(sample_table(3)))
    for rows in (4, 5):
        namespace.create_table(CreateTableRequest(id=TABLE, mode="overwrite"),
                               arrow_stream(sample_table(rows)))
    namespace.create_table_tag(CreateTableTagRequest(id=TABLE, tag="kept", version=1))
    first = BatchDeleteTableVersionsRequest(
        id=TABLE, ranges=[VersionRange(start_version=1, end_version=2)])
    with pytest.raises(InvalidTableStateError, match="named by a tag: delete the tag first"):
        namespace.batch_delete_table_versions(first)
    namespace.delete_table_tag(DeleteTableTagRequest(id=TABLE, tag="kept"))
    assert namespace.batch_delete_table_versions(first).deleted_count == 1
