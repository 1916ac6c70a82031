"""The whole lifecycle through the official `lance-namespace-urllib3-client`."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import lance
import lance_namespace
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lance_namespace_urllib3_client import ApiClient, Configuration
from lance_namespace_urllib3_client.api import NamespaceApi, TableApi
from lance_namespace_urllib3_client.exceptions import (
    BadRequestException,
    ConflictException,
    NotFoundException,
)
from lance_namespace_urllib3_client.models import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    NamespaceExistsRequest,
    QueryTableRequest,
    QueryTableRequestColumns,
    QueryTableRequestVector,
    TableExistsRequest,
)

from tests.support.lance_data import arrow_stream, nearest_ids, read_arrow_file, sample_table


@pytest.fixture
def apis(dir_server: str) -> Iterator[tuple[NamespaceApi, TableApi]]:
    with ApiClient(Configuration(host=dir_server)) as client:
        yield NamespaceApi(client), TableApi(client)


STATUS_EXCEPTIONS = {400: BadRequestException, 404: NotFoundException, 409: ConflictException}


@contextlib.contextmanager
def raises_typed(error_type: type[lance_namespace.LanceNamespaceError], status: int):
    """The client raises the ApiException of the status; its ErrorResponse code names the typed
    error (the message is the server's, tested elsewhere)."""
    with pytest.raises(STATUS_EXCEPTIONS[status]) as caught:
        yield
    assert caught.value.status == status
    body = json.loads(caught.value.body)
    typed = lance_namespace.from_error_code(body["code"], body["error"])
    assert isinstance(typed, error_type), (type(typed), body)


def test_namespace_lifecycle(apis: tuple[NamespaceApi, TableApi]) -> None:
    namespaces, _ = apis
    namespaces.create_namespace("a", CreateNamespaceRequest(properties={"owner": "ml"}))
    namespaces.create_namespace("a$b", CreateNamespaceRequest())
    namespaces.create_namespace("a$b$c", CreateNamespaceRequest(properties={"tier": "gold"}))

    assert namespaces.list_namespaces("$").namespaces == ["a"]
    assert namespaces.list_namespaces("a").namespaces == ["b"]
    assert namespaces.list_namespaces("a.b", delimiter=".").namespaces == ["c"]
    described = namespaces.describe_namespace("a$b$c", DescribeNamespaceRequest())
    assert described.properties["tier"] == "gold"
    assert namespaces.describe_namespace("a", DescribeNamespaceRequest()).properties == {
        "owner": "ml"
    }
    namespaces.namespace_exists("a$b$c", NamespaceExistsRequest())

    with raises_typed(lance_namespace.NamespaceNotFoundError, 404):
        namespaces.namespace_exists("a$zz", NamespaceExistsRequest())
    with raises_typed(lance_namespace.NamespaceNotFoundError, 404):
        namespaces.describe_namespace("nope", DescribeNamespaceRequest())
    with raises_typed(lance_namespace.NamespaceAlreadyExistsError, 409):
        namespaces.create_namespace("a$b", CreateNamespaceRequest())
    with raises_typed(lance_namespace.NamespaceNotEmptyError, 409):
        namespaces.drop_namespace("a", DropNamespaceRequest())
    with raises_typed(lance_namespace.InvalidInputError, 400):
        namespaces.create_namespace("a$..", CreateNamespaceRequest())

    for identifier in ("a$b$c", "a$b", "a"):
        namespaces.drop_namespace(identifier, DropNamespaceRequest())
    assert namespaces.list_namespaces("$").namespaces == []


def test_table_lifecycle(apis: tuple[NamespaceApi, TableApi]) -> None:
    namespaces, tables = apis
    namespaces.create_namespace("ml", CreateNamespaceRequest())
    namespaces.create_namespace("ml$vectors", CreateNamespaceRequest())
    first, second = sample_table(100), sample_table(50, start=100)
    created = tables.create_table("ml$vectors$items", arrow_stream(first))
    assert created.version == 1
    inserted = tables.insert_into_table("ml$vectors$items", arrow_stream(second))
    assert inserted.version == 2

    assert tables.count_table_rows("ml$vectors$items", CountTableRowsRequest()) == 150
    assert tables.count_table_rows(
        "ml$vectors$items", CountTableRowsRequest(predicate="id >= 140")
    ) == 10

    all_rows = pa.concat_tables([first, second])
    scanned = read_arrow_file(
        tables.query_table(
            "ml$vectors$items",
            QueryTableRequest(k=1000, vector=QueryTableRequestVector()),
        )
    )
    assert scanned.sort_by("id").equals(all_rows)

    query = first.column("vector")[3].as_py()
    hits = read_arrow_file(
        tables.query_table(
            "ml$vectors$items",
            QueryTableRequest(
                k=5,
                vector=QueryTableRequestVector(single_vector=query),
                vector_column="vector",
                filter="id % 2 = 0",
                prefilter=True,
                columns=QueryTableRequestColumns(column_names=["id", "name"]),
            ),
        )
    )
    expected = nearest_ids(all_rows, query, 5, pc.equal(pc.bit_wise_and(all_rows["id"], 1), 0))
    assert hits.column("id").to_pylist() == expected
    assert "vector" not in hits.column_names

    detailed = tables.describe_table(
        "ml$vectors$items", DescribeTableRequest(), load_detailed_metadata=True
    )
    assert detailed.version == 2
    assert [field.name for field in detailed.var_schema.fields] == ["id", "name", "vector"]
    assert detailed.var_schema.fields[2].type.type == "fixed_size_list"
    versions = tables.list_table_versions("ml$vectors$items").versions
    assert sorted(v.version for v in versions) == [1, 2]

    tables.table_exists("ml$vectors$items", TableExistsRequest())
    assert namespaces.list_tables("ml$vectors").tables == ["items"]
    with raises_typed(lance_namespace.TableAlreadyExistsError, 409):
        tables.create_table("ml$vectors$items", arrow_stream(first))
    with raises_typed(lance_namespace.TableNotFoundError, 404):
        tables.describe_table("ml$vectors$missing", DescribeTableRequest())
    with raises_typed(lance_namespace.TableNotFoundError, 404):
        tables.table_exists("ml$vectors$missing", TableExistsRequest())

    location = tables.describe_table("ml$vectors$items", DescribeTableRequest()).location
    tables.deregister_table("ml$vectors$items", DeregisterTableRequest())
    assert namespaces.list_tables("ml$vectors").tables == []
    assert lance.dataset(location).count_rows() == 150, "deregister must keep the data"


def test_paging_of_listings(apis: tuple[NamespaceApi, TableApi]) -> None:
    namespaces, tables = apis
    namespaces.create_namespace("p", CreateNamespaceRequest())
    for name in ("t3", "t1", "t2"):
        tables.create_table(f"p${name}", arrow_stream(sample_table(1)))
    seen, token = [], None
    while True:
        page = namespaces.list_tables("p", page_token=token, limit=2)
        assert len(page.tables) <= 2
        seen.extend(page.tables)
        token = page.page_token
        if not token:
            break
    assert seen == ["t1", "t2", "t3"]
