"""Every table operation once, with valid input, on a backend whose table operations are all
generic (the metadata-only plug-in) and on the `dir` backend; each effect is checked by reading
the table back with pylance at its location."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lance_namespace import (
    AlterTableAddColumnsRequest,
    AlterTableAlterColumnsRequest,
    AlterTableDropColumnsRequest,
    AnalyzeTableQueryPlanRequest,
    BatchDeleteTableVersionsRequest,
    CountTableRowsRequest,
    CreateTableBranchRequest,
    CreateTableIndexRequest,
    CreateTableRequest,
    CreateTableTagRequest,
    DeleteFromTableRequest,
    DeleteTableBranchRequest,
    DeleteTableTagRequest,
    DeregisterTableRequest,
    DescribeTableIndexStatsRequest,
    DescribeTableRequest,
    DescribeTableVersionRequest,
    DropTableIndexRequest,
    DropTableRequest,
    ExplainTableQueryPlanRequest,
    GetTableStatsRequest,
    GetTableTagVersionRequest,
    InsertIntoTableRequest,
    LanceNamespace,
    ListTableBranchesRequest,
    ListTableIndicesRequest,
    ListTablesRequest,
    ListTableTagsRequest,
    ListTableVersionsRequest,
    MergeInsertIntoTableRequest,
    QueryTableRequest,
    RegisterTableRequest,
    RenameTableRequest,
    RestoreTableRequest,
    TableExistsRequest,
    TableNotFoundError,
    UpdateFieldMetadataRequest,
    UpdateTableRequest,
    UpdateTableSchemaMetadataRequest,
    UpdateTableTagRequest,
)
from lance_namespace_urllib3_client.models import (
    AddColumnsEntry,
    AlterColumnsEntry,
    QueryTableRequestVector,
    UpdateFieldMetadataEntry,
    VersionRange,
)

from tests.lance_data import arrow_stream, nearest_ids, read_arrow_file, sample_table
from tests.table_operations_support import BACKENDS, backend, location, read_back

TABLE = ["cat", "sub", "items"]


@pytest.fixture(params=sorted(BACKENDS))
def namespace(request: pytest.FixtureRequest, data_root: Path) -> LanceNamespace:
    return backend(request.param, data_root)


def _rows_and_writes(namespace: LanceNamespace) -> None:
    created = namespace.create_table(CreateTableRequest(id=TABLE), arrow_stream(sample_table(300)))
    assert created.version == 1
    assert read_back(namespace, TABLE).to_table().equals(sample_table(300))

    inserted = namespace.insert_into_table(
        InsertIntoTableRequest(id=TABLE), arrow_stream(sample_table(50, start=300))
    )
    assert (inserted.version, inserted.num_inserted_rows) == (2, 50)
    assert read_back(namespace, TABLE).count_rows() == 350

    changes = sample_table(20, start=340, seed=99)  # ids 340..359: 10 match, 10 are new
    merged = namespace.merge_insert_into_table(
        MergeInsertIntoTableRequest(
            id=TABLE, on=["id"], when_matched_update_all=True, when_not_matched_insert_all=True
        ),
        arrow_stream(changes),
    )
    assert (merged.num_updated_rows, merged.num_inserted_rows, merged.num_deleted_rows) == (
        10,
        10,
        0,
    )
    after_merge = read_back(namespace, TABLE)
    assert merged.version == after_merge.version and after_merge.count_rows() == 360
    row = after_merge.to_table(filter="id = 345")
    assert (
        row["vector"].to_pylist()
        == changes.filter(pc.equal(changes["id"], 345))["vector"].to_pylist()
    )

    updated = namespace.update_table(
        UpdateTableRequest(id=TABLE, predicate="id < 5", updates=[["name", "'changed'"]])
    )
    assert updated.updated_rows == 5
    names = read_back(namespace, TABLE).to_table(filter="id < 6")["name"].to_pylist()
    assert sorted(names) == ["changed"] * 5 + ["row-5"]

    deleted = namespace.delete_from_table(DeleteFromTableRequest(id=TABLE, predicate="id >= 355"))
    after_delete = read_back(namespace, TABLE)
    assert deleted.version == after_delete.version and after_delete.count_rows() == 355

    counted = namespace.count_table_rows(CountTableRowsRequest(id=TABLE, predicate="id < 10"))
    assert counted.count == after_delete.count_rows(filter="id < 10") == 10


def _query(namespace: LanceNamespace) -> None:
    everything = read_back(namespace, TABLE).to_table()
    target = everything["vector"][77].as_py()
    hits = namespace.query_table(
        QueryTableRequest(id=TABLE, k=4, vector=QueryTableRequestVector(single_vector=target))
    )
    assert read_arrow_file(hits.data)["id"].to_pylist() == nearest_ids(everything, target, 4)


def _indexes(namespace: LanceNamespace) -> None:
    namespace.create_table_index(
        CreateTableIndexRequest(
            id=TABLE,
            column="vector",
            index_type="IVF_PQ",
            name="vec_idx",
            distance_type="l2",
            num_partitions=2,
            num_sub_vectors=2,
        )
    )
    namespace.create_table_scalar_index(
        CreateTableIndexRequest(id=TABLE, column="id", index_type="BTREE", name="id_idx")
    )
    namespace.create_table_index(
        CreateTableIndexRequest(id=TABLE, column="name", index_type="BITMAP", name="name_idx")
    )
    on_disk = {index.name: index for index in read_back(namespace, TABLE).describe_indices()}
    assert set(on_disk) == {"vec_idx", "id_idx", "name_idx"}
    listed = namespace.list_table_indices(ListTableIndicesRequest(id=TABLE)).indexes
    assert {(i.index_name, tuple(i.columns)) for i in listed} == {
        ("vec_idx", ("vector",)),
        ("id_idx", ("id",)),
        ("name_idx", ("name",)),
    }
    stats = namespace.describe_table_index_stats(
        DescribeTableIndexStatsRequest(id=TABLE, index_name="vec_idx")
    )
    assert stats.num_indexed_rows == on_disk["vec_idx"].num_rows_indexed == 355
    assert stats.index_type == "IVF_PQ" and stats.num_unindexed_rows == 0

    namespace.drop_table_index(DropTableIndexRequest(id=TABLE, index_name="name_idx"))
    remaining = {index.name for index in read_back(namespace, TABLE).describe_indices()}
    assert remaining == {"vec_idx", "id_idx"}


def _schema(namespace: LanceNamespace) -> None:
    added = namespace.alter_table_add_columns(
        AlterTableAddColumnsRequest(
            id=TABLE, new_columns=[AddColumnsEntry(name="doubled", expression="id * 2")]
        )
    )
    dataset = read_back(namespace, TABLE)
    assert added.version == dataset.version
    doubled = dataset.to_table(columns=["id", "doubled"])
    assert doubled["doubled"].to_pylist() == [2 * i for i in doubled["id"].to_pylist()]

    namespace.alter_table_alter_columns(
        AlterTableAlterColumnsRequest(
            id=TABLE, alterations=[AlterColumnsEntry(path="doubled", rename="twice")]
        )
    )
    namespace.alter_table_alter_columns(
        AlterTableAlterColumnsRequest(
            id=TABLE, alterations=[AlterColumnsEntry(path="twice", data_type={"type": "int32"})]
        )
    )
    assert read_back(namespace, TABLE).schema.field("twice").type == pa.int32()

    namespace.alter_table_drop_columns(AlterTableDropColumnsRequest(id=TABLE, columns=["twice"]))
    assert read_back(namespace, TABLE).schema.names == ["id", "name", "vector"]

    namespace.update_table_schema_metadata(
        UpdateTableSchemaMetadataRequest(id=TABLE, metadata={"owner": "data-team"})
    )
    namespace.update_field_metadata(
        UpdateFieldMetadataRequest(
            id=TABLE, updates=[UpdateFieldMetadataEntry(path="name", metadata={"unit": "text"})]
        )
    )
    dataset = read_back(namespace, TABLE)
    assert dataset.schema.metadata[b"owner"] == b"data-team"
    assert dataset.schema.field("name").metadata[b"unit"] == b"text"


def _history(namespace: LanceNamespace) -> None:
    dataset = read_back(namespace, TABLE)
    listed = namespace.list_table_versions(ListTableVersionsRequest(id=TABLE)).versions
    assert [v.version for v in listed] == [v["version"] for v in dataset.versions()]
    assert all(not v.manifest_path.startswith("/") for v in listed)
    described = namespace.describe_table_version(DescribeTableVersionRequest(id=TABLE, version=2))
    assert described.version.version == 2

    namespace.create_table_tag(CreateTableTagRequest(id=TABLE, tag="first", version=1))
    assert read_back(namespace, TABLE).tags.list()["first"]["version"] == 1
    namespace.update_table_tag(UpdateTableTagRequest(id=TABLE, tag="first", version=2))
    tags = namespace.list_table_tags(ListTableTagsRequest(id=TABLE)).tags
    assert {name: tag.version for name, tag in tags.items()} == {"first": 2}
    assert (
        namespace.get_table_tag_version(GetTableTagVersionRequest(id=TABLE, tag="first")).version
        == 2
    )
    namespace.delete_table_tag(DeleteTableTagRequest(id=TABLE, tag="first"))
    assert read_back(namespace, TABLE).tags.list() == {}

    namespace.create_table_branch(CreateTableBranchRequest(id=TABLE, name="exp", from_version=2))
    assert read_back(namespace, TABLE).branches.list()["exp"]["parent_version"] == 2
    branches = namespace.list_table_branches(ListTableBranchesRequest(id=TABLE)).branches
    assert set(branches) == {"exp"}
    on_branch = namespace.count_table_rows(CountTableRowsRequest(id=TABLE, branch="exp"))
    assert on_branch.count == lance.dataset(dataset.uri, version=2).count_rows() == 350
    namespace.delete_table_branch(DeleteTableBranchRequest(id=TABLE, name="exp"))
    assert read_back(namespace, TABLE).branches.list() == {}

    deleted = namespace.batch_delete_table_versions(
        BatchDeleteTableVersionsRequest(
            id=TABLE, ranges=[VersionRange(start_version=1, end_version=2)]
        )
    )
    assert deleted.deleted_count == 1
    assert 1 not in [v["version"] for v in read_back(namespace, TABLE).versions()]

    latest = read_back(namespace, TABLE).version
    namespace.restore_table(RestoreTableRequest(id=TABLE, version=2))
    restored = read_back(namespace, TABLE)
    assert restored.version == latest + 1
    assert restored.to_table().equals(lance.dataset(restored.uri, version=2).to_table())


def _stats_and_plans(namespace: LanceNamespace) -> None:
    dataset = read_back(namespace, TABLE)
    stats = namespace.get_table_stats(GetTableStatsRequest(id=TABLE))
    assert stats.num_rows == dataset.count_rows() == 350
    assert stats.fragment_stats.num_fragments == len(dataset.get_fragments())
    assert stats.total_bytes > 0

    query = QueryTableRequest(
        id=TABLE,
        k=3,
        filter="id < 100",
        vector=QueryTableRequestVector(single_vector=[0.5] * 8),
    )
    plan = namespace.explain_table_query_plan(ExplainTableQueryPlanRequest(id=TABLE, query=query))
    assert "< 100" in plan and "LanceRead" in plan, plan
    analysis = namespace.analyze_table_query_plan(
        AnalyzeTableQueryPlanRequest(**query.model_dump(exclude={"id"}), id=TABLE)
    )
    assert "output_rows" in analysis, analysis


def _catalog(namespace: LanceNamespace) -> None:
    rows = read_back(namespace, TABLE).count_rows()
    data_location = location(namespace, TABLE)
    renamed = ["cat", "renamed"]
    namespace.rename_table(
        RenameTableRequest(id=TABLE, new_table_name="renamed", new_namespace_id=["cat"])
    )
    with pytest.raises(TableNotFoundError):
        namespace.table_exists(TableExistsRequest(id=TABLE))
    assert read_back(namespace, renamed).count_rows() == rows
    assert location(namespace, renamed) == data_location, "renaming keeps the data in place"

    namespace.create_table(
        CreateTableRequest(id=["cat", "sub", "other"]), arrow_stream(sample_table(3))
    )
    every = namespace.list_all_tables(ListTablesRequest())
    assert every.tables == ["cat$renamed", "cat$sub$other"]

    deregistered = namespace.deregister_table(DeregisterTableRequest(id=renamed))
    assert namespace.list_tables(ListTablesRequest(id=["cat"])).tables == []
    assert lance.dataset(data_location).count_rows() == rows, "deregistering keeps the data"
    namespace.register_table(RegisterTableRequest(id=renamed, location=deregistered.location))
    detailed = namespace.describe_table(
        DescribeTableRequest(id=renamed, load_detailed_metadata=True)
    )
    assert detailed.version == lance.dataset(data_location).version

    namespace.drop_table(DropTableRequest(id=renamed))
    with pytest.raises(TableNotFoundError):
        namespace.table_exists(TableExistsRequest(id=renamed))
    assert not Path(data_location.removeprefix("file://")).exists(), "DropTable removes the data"


def test_every_table_operation_once(namespace: LanceNamespace) -> None:
    _rows_and_writes(namespace)
    _query(namespace)
    _indexes(namespace)
    _schema(namespace)
    _history(namespace)
    _stats_and_plans(namespace)
    _catalog(namespace)
