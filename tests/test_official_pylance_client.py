"""The whole lifecycle through pylance's `lance.namespace.RestNamespace`."""

from __future__ import annotations

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lance.namespace import RestNamespace
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    DropTableRequest,
    InsertIntoTableRequest,
    InvalidInputError,
    ListNamespacesRequest,
    ListTablesRequest,
    ListTableVersionsRequest,
    NamespaceAlreadyExistsError,
    NamespaceExistsRequest,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    QueryTableRequest,
    RegisterTableRequest,
    TableAlreadyExistsError,
    TableExistsRequest,
    TableNotFoundError,
)
from lance_namespace_urllib3_client.models import QueryTableRequestVector

from tests.support.lance_data import arrow_stream, nearest_ids, read_arrow_file, sample_table


@pytest.fixture
def namespace(dir_server: str) -> RestNamespace:
    return RestNamespace(uri=dir_server)


def test_namespace_lifecycle(namespace: RestNamespace) -> None:
    namespace.create_namespace(CreateNamespaceRequest(id=["a"], properties={"owner": "ml"}))
    namespace.create_namespace(CreateNamespaceRequest(id=["a", "b"]))
    namespace.create_namespace(CreateNamespaceRequest(id=["a", "b", "c"], properties={"x": "1"}))
    assert namespace.list_namespaces(ListNamespacesRequest(id=[])).namespaces == ["a"]
    assert namespace.list_namespaces(ListNamespacesRequest(id=["a", "b"])).namespaces == ["c"]
    assert namespace.describe_namespace(
        DescribeNamespaceRequest(id=["a", "b", "c"])
    ).properties == {"x": "1"}
    namespace.namespace_exists(NamespaceExistsRequest(id=["a", "b"]))

    with pytest.raises(NamespaceNotFoundError, match=r"Namespace not found: a\$zz"):
        namespace.namespace_exists(NamespaceExistsRequest(id=["a", "zz"]))
    with pytest.raises(NamespaceAlreadyExistsError, match="Namespace already exists: a"):
        namespace.create_namespace(CreateNamespaceRequest(id=["a"]))
    with pytest.raises(
        NamespaceNotEmptyError, match=r"Namespace not empty: 'a' \(contains 2 child objects\)"
    ):
        namespace.drop_namespace(DropNamespaceRequest(id=["a"]))
    with pytest.raises(InvalidInputError, match="identifier part 'bad/name' must not contain '/'"):
        namespace.create_namespace(CreateNamespaceRequest(id=["a", "bad/name"]))
    existing = namespace.create_namespace(CreateNamespaceRequest(id=["a"], mode="ExistOk"))
    assert existing.properties == {"owner": "ml"}

    for identifier in (["a", "b", "c"], ["a", "b"], ["a"]):
        namespace.drop_namespace(DropNamespaceRequest(id=identifier))
    assert namespace.list_namespaces(ListNamespacesRequest(id=[])).namespaces == []


def test_table_lifecycle_and_lance_dataset_through_the_namespace(namespace: RestNamespace) -> None:
    namespace.create_namespace(CreateNamespaceRequest(id=["team"]))
    namespace.create_namespace(CreateNamespaceRequest(id=["team", "proj"]))
    table_id = ["team", "proj", "events"]
    first, second = sample_table(200), sample_table(20, start=200)
    assert namespace.create_table(CreateTableRequest(id=table_id), arrow_stream(first)).version == 1
    namespace.insert_into_table(InsertIntoTableRequest(id=table_id), arrow_stream(second))
    everything = pa.concat_tables([first, second])

    assert namespace.count_table_rows(CountTableRowsRequest(id=table_id)).count == 220
    dataset = lance.dataset(namespace_client=namespace, table_id=table_id)
    assert dataset.to_table().sort_by("id").equals(everything)

    query = second.column("vector")[0].as_py()
    result = namespace.query_table(
        QueryTableRequest(
            id=table_id,
            k=4,
            vector=QueryTableRequestVector(single_vector=query),
            filter="id < 100",
            prefilter=True,
        )
    )
    expected = nearest_ids(everything, query, 4, pc.less(everything["id"], 100))
    assert read_arrow_file(result.data).column("id").to_pylist() == expected

    detailed = namespace.describe_table(
        DescribeTableRequest(id=table_id, load_detailed_metadata=True)
    )
    assert detailed.version == 2
    assert [field.name for field in detailed.var_schema.fields] == ["id", "name", "vector"]
    versions = namespace.list_table_versions(ListTableVersionsRequest(id=table_id)).versions
    assert sorted(v.version for v in versions) == [1, 2]
    assert namespace.list_tables(ListTablesRequest(id=["team", "proj"])).tables == ["events"]

    with pytest.raises(TableAlreadyExistsError, match="Table already exists: events"):
        namespace.create_table(CreateTableRequest(id=table_id), arrow_stream(first))
    with pytest.raises(TableNotFoundError, match=r"table id 'team\$proj\$nope'"):
        namespace.table_exists(TableExistsRequest(id=["team", "proj", "nope"]))
    with pytest.raises(TableNotFoundError, match=r"table id 'team\$proj\$nope'"):
        namespace.count_table_rows(CountTableRowsRequest(id=["team", "proj", "nope"]))

    location = namespace.describe_table(DescribeTableRequest(id=table_id)).location
    namespace.deregister_table(DeregisterTableRequest(id=table_id))
    assert namespace.list_tables(ListTablesRequest(id=["team", "proj"])).tables == []
    # The directory backend registers locations relative to its root.
    relative = location.rstrip("/").rsplit("/", 1)[1]
    adopted = ["team", "proj", "events2"]  # data is adopted within its namespace
    namespace.register_table(RegisterTableRequest(id=adopted, location=relative))
    reopened = lance.dataset(namespace_client=namespace, table_id=adopted)
    assert reopened.count_rows() == 220


def test_declare_then_drop(namespace: RestNamespace) -> None:
    namespace.create_namespace(CreateNamespaceRequest(id=["d"]))
    declared = namespace.declare_table(DeclareTableRequest(id=["d", "later"]))
    assert declared.location
    namespace.table_exists(TableExistsRequest(id=["d", "later"]))
    namespace.insert_into_table(
        InsertIntoTableRequest(id=["d", "later"]), arrow_stream(sample_table(5))
    )
    assert namespace.count_table_rows(CountTableRowsRequest(id=["d", "later"])).count == 5
    namespace.drop_table(DropTableRequest(id=["d", "later"]))
    with pytest.raises(TableNotFoundError, match=r"table id 'd\$later'"):
        namespace.describe_table(DescribeTableRequest(id=["d", "later"]))
    namespace.drop_namespace(DropNamespaceRequest(id=["d"]))
