"""Data operations on a backend that keeps only metadata, served by the adapter with pylance."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from lance.namespace import RestNamespace
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DescribeTableRequest,
    DropTableRequest,
    InsertIntoTableRequest,
    InvalidInputError,
    ListTablesRequest,
    ListTableVersionsRequest,
    QueryTableRequest,
    TableAlreadyExistsError,
    TableExistsRequest,
    TableNotFoundError,
    TableSchemaValidationError,
)
from lance_namespace_urllib3_client.models import QueryTableRequestVector

from backends import load_namespace
from backends.base import MetadataNamespace
from backends.plugin import PluginNamespace
from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, nearest_ids, read_arrow_file, sample_table
from tests.support.plugin_stand_ins import MetadataOnlyNamespace

STAND_IN = "tests.support.plugin_stand_ins.MetadataOnlyNamespace"
TABLE = ["cat", "items"]


@pytest.fixture
def namespace(data_root: Path) -> Iterator[RestNamespace]:
    with running_server(STAND_IN, {"root": str(data_root)}) as url:
        client = RestNamespace(uri=url)
        client.create_namespace(CreateNamespaceRequest(id=["cat"]))
        yield client


def test_the_stand_in_has_no_data_operations_of_its_own(data_root: Path) -> None:
    completed = load_namespace(STAND_IN, {"root": str(data_root)})
    assert isinstance(completed.backend, PluginNamespace)
    table_operations = {"create_table", "insert_into_table", "count_table_rows", "query_table"}
    assert table_operations <= set(vars(MetadataNamespace))
    assert not table_operations & set(vars(MetadataOnlyNamespace))


def test_create_insert_count_query_through_the_adapter(namespace: RestNamespace) -> None:
    first, second = sample_table(60), sample_table(40, start=60)
    created = namespace.create_table(CreateTableRequest(id=TABLE), arrow_stream(first))
    assert created.version == 1
    location = namespace.describe_table(DescribeTableRequest(id=TABLE)).location
    assert lance.dataset(location).to_table().equals(first), "data lands at the declared location"

    inserted = namespace.insert_into_table(InsertIntoTableRequest(id=TABLE), arrow_stream(second))
    assert (inserted.version, inserted.num_inserted_rows) == (2, 40)
    everything = pa.concat_tables([first, second])
    assert namespace.count_table_rows(CountTableRowsRequest(id=TABLE)).count == 100
    assert namespace.count_table_rows(
        CountTableRowsRequest(id=TABLE, predicate="id < 10")
    ).count == 10
    assert namespace.count_table_rows(CountTableRowsRequest(id=TABLE, version=1)).count == 60

    query = everything.column("vector")[77].as_py()
    hits = namespace.query_table(
        QueryTableRequest(
            id=TABLE, k=3, vector=QueryTableRequestVector(single_vector=query),
            filter="id >= 50", prefilter=True,
        )
    )
    expected = nearest_ids(everything, query, 3, pa.compute.greater_equal(everything["id"], 50))
    assert read_arrow_file(hits.data).column("id").to_pylist() == expected
    scan = namespace.query_table(QueryTableRequest(id=TABLE, k=0, vector=QueryTableRequestVector()))
    assert read_arrow_file(scan.data).sort_by("id").equals(everything)

    reader = lance.dataset(namespace_client=namespace, table_id=TABLE)
    assert reader.to_table().sort_by("id").equals(everything)


def test_detailed_metadata_and_versions(namespace: RestNamespace) -> None:
    namespace.create_table(CreateTableRequest(id=TABLE), arrow_stream(sample_table(5)))
    for start in (5, 10, 15):
        namespace.insert_into_table(
            InsertIntoTableRequest(id=TABLE), arrow_stream(sample_table(5, start=start))
        )
    detailed = namespace.describe_table(
        DescribeTableRequest(id=TABLE, load_detailed_metadata=True, with_table_uri=True)
    )
    assert detailed.version == 4
    assert detailed.table == "items" and detailed.namespace == ["cat"]
    assert [f.name for f in detailed.var_schema.fields] == ["id", "name", "vector"]
    assert detailed.var_schema.fields[2].type.length == 8
    assert detailed.table_uri

    pages, token = [], None
    while True:
        page = namespace.list_table_versions(
            ListTableVersionsRequest(id=TABLE, limit=3, page_token=token, descending=True)
        )
        pages.append([v.version for v in page.versions])
        token = page.page_token
        if not token:
            break
    assert pages == [[4, 3, 2], [1]]
    location = detailed.location.removeprefix("file://")
    for version in (1, 4):
        first_page = namespace.list_table_versions(ListTableVersionsRequest(id=TABLE)).versions
        manifest = next(v for v in first_page if v.version == version).manifest_path
        assert not manifest.startswith("/"), "a manifest path relative to the table"
        assert (Path(location) / manifest).is_file(), manifest
    assert Path(location).is_dir()


def test_create_modes_and_drop(namespace: RestNamespace, data_root: Path) -> None:
    namespace.create_table(CreateTableRequest(id=TABLE), arrow_stream(sample_table(4)))
    with pytest.raises(TableAlreadyExistsError, match=r"table cat\$items already exists"):
        namespace.create_table(CreateTableRequest(id=TABLE), arrow_stream(sample_table(9)))
    kept = namespace.create_table(
        CreateTableRequest(id=TABLE, mode="exist_ok"), arrow_stream(sample_table(9))
    )
    assert kept.version == 1
    assert namespace.count_table_rows(CountTableRowsRequest(id=TABLE)).count == 4
    namespace.create_table(
        CreateTableRequest(id=TABLE, mode="overwrite"), arrow_stream(sample_table(9))
    )
    assert namespace.count_table_rows(CountTableRowsRequest(id=TABLE)).count == 9

    location = Path(
        namespace.describe_table(DescribeTableRequest(id=TABLE)).location.removeprefix("file://")
    )
    assert location.is_dir()
    namespace.drop_table(DropTableRequest(id=TABLE))
    assert not location.exists(), "DropTable removes the data"
    with pytest.raises(TableNotFoundError, match=r"Table not found: table id 'cat\$items'"):
        namespace.table_exists(TableExistsRequest(id=TABLE))


def test_a_failed_first_write_leaves_no_table(namespace: RestNamespace, data_root: Path) -> None:
    # Nulls in a column the data's own schema declares non-nullable: Lance's writer refuses
    # them while it writes (a column type it cannot store is refused before, at the door).
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    unwritable = pa.Table.from_arrays([pa.array([1, None])], schema=schema)
    before = {p.name for p in data_root.iterdir()}
    refused = "'id' is declared as non-nullable but contains null"
    with pytest.raises(InvalidInputError, match=refused):
        namespace.create_table(CreateTableRequest(id=TABLE), arrow_stream(unwritable))
    with pytest.raises(TableNotFoundError, match=r"Table not found: table id 'cat\$items'"):
        namespace.table_exists(TableExistsRequest(id=TABLE))
    assert namespace.list_tables(ListTablesRequest(id=["cat"])).tables == []
    leftovers = {p.name for p in data_root.iterdir()} - before
    assert not [name for name in leftovers if "items" in name]


def test_appending_a_different_schema_is_a_schema_error(namespace: RestNamespace) -> None:
    namespace.create_table(CreateTableRequest(id=TABLE), arrow_stream(sample_table(3)))
    other = pa.table({"other": pa.array([1.5])})
    with pytest.raises(
        TableSchemaValidationError, match=r"different schema: .*missing=\[\], unexpected=\[other\]"
    ):
        namespace.insert_into_table(InsertIntoTableRequest(id=TABLE), arrow_stream(other))
    assert namespace.count_table_rows(CountTableRowsRequest(id=TABLE)).count == 3
