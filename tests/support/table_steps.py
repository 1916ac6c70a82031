"""The steps of a table's whole life, each calling table operations on any `LanceNamespace`
(a backend in Python or pylance's RestNamespace over HTTP) and checking each effect by reading
the table back with pylance at its location. `StepLayout` says where the table lives."""

from __future__ import annotations

import re
from dataclasses import dataclass
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

from tests.support.lance_data import arrow_stream, nearest_ids, read_arrow_file, sample_table
from tests.support.tables import location, read_back


@dataclass(frozen=True)
class StepLayout:
    """Where the steps' tables live: `namespace` holds the table (and a second one, `other`),
    `rename_target` is the namespace RenameTable moves it to; both exist beforehand."""

    namespace: list[str]
    rename_target: list[str]
    delimiter: str = "$"

    @property
    def table(self) -> list[str]:
        return [*self.namespace, "items"]

    @property
    def other(self) -> list[str]:
        return [*self.namespace, "other"]

    @property
    def renamed(self) -> list[str]:
        return [*self.rename_target, "renamed"]

    def joined(self, identifier: list[str]) -> str:
        return self.delimiter.join(identifier)

    def own_entries(self, listed: list[str]) -> list[str]:
        """The entries of a ListAllTables answer under this layout's namespaces."""
        prefixes = tuple(
            self.joined(ns) + self.delimiter for ns in (self.namespace, self.rename_target)
        )
        return [entry for entry in listed if entry.startswith(prefixes)]


def run_every_step(namespace: LanceNamespace, layout: StepLayout) -> None:
    """Every table operation once, in the order a table lives."""
    for step in (rows_and_writes, query, indexes, schema, history, stats_and_plans, catalog):
        step(namespace, layout)


def rows_and_writes(namespace: LanceNamespace, layout: StepLayout) -> None:
    table = layout.table
    created = namespace.create_table(CreateTableRequest(id=table), arrow_stream(sample_table(300)))
    assert created.version == 1
    assert read_back(namespace, table).to_table().equals(sample_table(300))

    inserted = namespace.insert_into_table(
        InsertIntoTableRequest(id=table), arrow_stream(sample_table(50, start=300))
    )
    assert (inserted.version, inserted.num_inserted_rows) == (2, 50)
    assert read_back(namespace, table).count_rows() == 350

    changes = sample_table(20, start=340, seed=99)  # ids 340..359: 10 match, 10 are new
    merged = namespace.merge_insert_into_table(
        MergeInsertIntoTableRequest(
            id=table, on=["id"], when_matched_update_all=True, when_not_matched_insert_all=True
        ),
        arrow_stream(changes),
    )
    assert (merged.num_updated_rows, merged.num_inserted_rows, merged.num_deleted_rows) == (
        10,
        10,
        0,
    )
    after_merge = read_back(namespace, table)
    assert merged.version == after_merge.version and after_merge.count_rows() == 360
    row = after_merge.to_table(filter="id = 345")
    assert (
        row["vector"].to_pylist()
        == changes.filter(pc.equal(changes["id"], 345))["vector"].to_pylist()
    )

    updated = namespace.update_table(
        UpdateTableRequest(id=table, predicate="id < 5", updates=[["name", "'changed'"]])
    )
    assert updated.updated_rows == 5
    names = read_back(namespace, table).to_table(filter="id < 6")["name"].to_pylist()
    assert sorted(names) == ["changed"] * 5 + ["row-5"]

    deleted = namespace.delete_from_table(DeleteFromTableRequest(id=table, predicate="id >= 355"))
    after_delete = read_back(namespace, table)
    assert deleted.version == after_delete.version and after_delete.count_rows() == 355

    counted = namespace.count_table_rows(CountTableRowsRequest(id=table, predicate="id < 10"))
    assert counted.count == after_delete.count_rows(filter="id < 10") == 10


def query(namespace: LanceNamespace, layout: StepLayout) -> None:
    table = layout.table
    everything = read_back(namespace, table).to_table()
    target = everything["vector"][77].as_py()
    hits = namespace.query_table(
        QueryTableRequest(id=table, k=4, vector=QueryTableRequestVector(single_vector=target))
    )
    assert read_arrow_file(hits.data)["id"].to_pylist() == nearest_ids(everything, target, 4)


def indexes(namespace: LanceNamespace, layout: StepLayout) -> None:
    table = layout.table
    namespace.create_table_index(
        CreateTableIndexRequest(
            id=table,
            column="vector",
            index_type="IVF_PQ",
            name="vec_idx",
            distance_type="l2",
            num_partitions=2,
            num_sub_vectors=4,
            num_bits=4,
        )
    )
    namespace.create_table_scalar_index(
        CreateTableIndexRequest(id=table, column="id", index_type="BTREE", name="id_idx")
    )
    namespace.create_table_index(
        CreateTableIndexRequest(id=table, column="name", index_type="BITMAP", name="name_idx")
    )
    dataset = read_back(namespace, table)
    on_disk = {index.name: index for index in dataset.describe_indices()}
    assert set(on_disk) == {"vec_idx", "id_idx", "name_idx"}
    # Built with the PQ parameters asked for (not the partitions: Lance trains at most one per
    # 256 rows, here one).
    pq = dataset.stats.index_stats("vec_idx")["indices"][0]["sub_index"]
    assert (pq["num_sub_vectors"], pq["nbits"]) == (4, 4)
    listed = namespace.list_table_indices(ListTableIndicesRequest(id=table)).indexes
    assert {(i.index_name, tuple(i.columns)) for i in listed} == {
        ("vec_idx", ("vector",)),
        ("id_idx", ("id",)),
        ("name_idx", ("name",)),
    }
    stats = namespace.describe_table_index_stats(
        DescribeTableIndexStatsRequest(id=table, index_name="vec_idx")
    )
    assert stats.num_indexed_rows == on_disk["vec_idx"].num_rows_indexed == 355
    assert stats.index_type == "IVF_PQ" and stats.num_unindexed_rows == 0

    namespace.drop_table_index(DropTableIndexRequest(id=table, index_name="name_idx"))
    remaining = {index.name for index in read_back(namespace, table).describe_indices()}
    assert remaining == {"vec_idx", "id_idx"}


def schema(namespace: LanceNamespace, layout: StepLayout) -> None:
    table = layout.table
    added = namespace.alter_table_add_columns(
        AlterTableAddColumnsRequest(
            id=table, new_columns=[AddColumnsEntry(name="doubled", expression="id * 2")]
        )
    )
    dataset = read_back(namespace, table)
    assert added.version == dataset.version
    doubled = dataset.to_table(columns=["id", "doubled"])
    assert doubled["doubled"].to_pylist() == [2 * i for i in doubled["id"].to_pylist()]

    namespace.alter_table_alter_columns(
        AlterTableAlterColumnsRequest(
            id=table, alterations=[AlterColumnsEntry(path="doubled", rename="twice")]
        )
    )
    namespace.alter_table_alter_columns(
        AlterTableAlterColumnsRequest(
            id=table, alterations=[AlterColumnsEntry(path="twice", data_type={"type": "int32"})]
        )
    )
    assert read_back(namespace, table).schema.field("twice").type == pa.int32()

    namespace.alter_table_drop_columns(AlterTableDropColumnsRequest(id=table, columns=["twice"]))
    assert read_back(namespace, table).schema.names == ["id", "name", "vector"]

    namespace.update_table_schema_metadata(
        UpdateTableSchemaMetadataRequest(id=table, metadata={"owner": "data-team"})
    )
    namespace.update_field_metadata(
        UpdateFieldMetadataRequest(
            id=table, updates=[UpdateFieldMetadataEntry(path="name", metadata={"unit": "text"})]
        )
    )
    dataset = read_back(namespace, table)
    assert dataset.schema.metadata[b"owner"] == b"data-team"
    assert dataset.schema.field("name").metadata[b"unit"] == b"text"


def history(namespace: LanceNamespace, layout: StepLayout) -> None:
    table = layout.table
    dataset = read_back(namespace, table)
    listed = namespace.list_table_versions(ListTableVersionsRequest(id=table)).versions
    assert [v.version for v in listed] == [v["version"] for v in dataset.versions()]
    assert all(not v.manifest_path.startswith("/") for v in listed)
    described = namespace.describe_table_version(DescribeTableVersionRequest(id=table, version=2))
    assert described.version.version == 2

    namespace.create_table_tag(CreateTableTagRequest(id=table, tag="first", version=1))
    assert read_back(namespace, table).tags.list()["first"]["version"] == 1
    namespace.update_table_tag(UpdateTableTagRequest(id=table, tag="first", version=2))
    tags = namespace.list_table_tags(ListTableTagsRequest(id=table)).tags
    assert {name: tag.version for name, tag in tags.items()} == {"first": 2}
    assert (
        namespace.get_table_tag_version(GetTableTagVersionRequest(id=table, tag="first")).version
        == 2
    )
    namespace.delete_table_tag(DeleteTableTagRequest(id=table, tag="first"))
    assert read_back(namespace, table).tags.list() == {}

    namespace.create_table_branch(CreateTableBranchRequest(id=table, name="exp", from_version=2))
    assert read_back(namespace, table).branches.list()["exp"]["parent_version"] == 2
    branches = namespace.list_table_branches(ListTableBranchesRequest(id=table)).branches
    assert set(branches) == {"exp"}
    on_branch = namespace.count_table_rows(CountTableRowsRequest(id=table, branch="exp"))
    assert on_branch.count == lance.dataset(dataset.uri, version=2).count_rows() == 350
    namespace.delete_table_branch(DeleteTableBranchRequest(id=table, name="exp"))
    assert read_back(namespace, table).branches.list() == {}

    deleted = namespace.batch_delete_table_versions(
        BatchDeleteTableVersionsRequest(
            id=table, ranges=[VersionRange(start_version=1, end_version=2)]
        )
    )
    assert deleted.deleted_count == 1
    assert 1 not in [v["version"] for v in read_back(namespace, table).versions()]

    latest = read_back(namespace, table).version
    namespace.restore_table(RestoreTableRequest(id=table, version=2))
    restored = read_back(namespace, table)
    assert restored.version == latest + 1
    assert restored.to_table().equals(lance.dataset(restored.uri, version=2).to_table())


def stats_and_plans(namespace: LanceNamespace, layout: StepLayout) -> None:
    table = layout.table
    dataset = read_back(namespace, table)
    stats = namespace.get_table_stats(GetTableStatsRequest(id=table))
    assert stats.num_rows == dataset.count_rows() == 350
    assert stats.fragment_stats.num_fragments == len(dataset.get_fragments())
    assert stats.total_bytes > 0

    query = QueryTableRequest(
        id=table,
        k=3,
        filter="id < 100",
        vector=QueryTableRequestVector(single_vector=[0.5] * 8),
    )
    plan = namespace.explain_table_query_plan(ExplainTableQueryPlanRequest(id=table, query=query))
    assert "< 100" in plan and "LanceRead" in plan, plan
    analysis = namespace.analyze_table_query_plan(
        AnalyzeTableQueryPlanRequest(**query.model_dump(exclude={"id"}), id=table)
    )
    assert "output_rows" in analysis, analysis


def catalog(namespace: LanceNamespace, layout: StepLayout) -> None:
    table, renamed = layout.table, layout.renamed
    rows = read_back(namespace, table).count_rows()
    data_location = location(namespace, table)
    namespace.rename_table(
        RenameTableRequest(
            id=table, new_table_name=renamed[-1], new_namespace_id=layout.rename_target
        )
    )
    with pytest.raises(TableNotFoundError, match=re.escape(table[-1])):
        namespace.table_exists(TableExistsRequest(id=table))
    assert read_back(namespace, renamed).count_rows() == rows
    assert location(namespace, renamed) == data_location, "renaming keeps the data in place"

    namespace.create_table(CreateTableRequest(id=layout.other), arrow_stream(sample_table(3)))
    every = namespace.list_all_tables(ListTablesRequest())
    assert layout.own_entries(every.tables) == sorted(
        [layout.joined(renamed), layout.joined(layout.other)]
    )

    deregistered = namespace.deregister_table(DeregisterTableRequest(id=renamed))
    assert namespace.list_tables(ListTablesRequest(id=layout.rename_target)).tables == []
    assert lance.dataset(data_location).count_rows() == rows, "deregistering keeps the data"
    # The data still lies in the first namespace's paths, recorded as the renamed table's: a
    # table of the namespace that last owned it adopts it (one of another namespace may not,
    # whatever path it lies in: tests/test_safety_ownership.py).
    adopted = [*layout.rename_target, "adopted"]
    namespace.register_table(RegisterTableRequest(id=adopted, location=deregistered.location))
    detailed = namespace.describe_table(
        DescribeTableRequest(id=adopted, load_detailed_metadata=True)
    )
    assert detailed.version == lance.dataset(data_location).version

    namespace.drop_table(DropTableRequest(id=adopted))
    with pytest.raises(TableNotFoundError, match="adopted"):
        namespace.table_exists(TableExistsRequest(id=adopted))
    assert not Path(data_location.removeprefix("file://")).exists(), "DropTable removes the data"
