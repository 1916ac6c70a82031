"""The unity backend and lance-namespace-impls' `UnityNamespace` on one Unity Catalog, both ways.

The server runs on the Unity fixture and is driven over HTTP by the official client
(`lance_namespace.connect("rest", ...)`); impls talks to the same fixture directly. Tables are
written by pylance through either side, and rows are compared cell for cell. Where impls
itself cannot do a step, a test says so by asserting the failure.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import lance
import lance_namespace
import pyarrow as pa
import pytest
from lance_namespace import (
    AlterTableDropColumnsRequest,
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
    LanceNamespace,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceNotEmptyError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from lance_namespace_impls.rest_client import InternalException, InvalidInputException
from lance_namespace_impls.unity import UnityNamespace as ImplsUnityNamespace
from unitycatalog.client import ApiClient, CatalogsApi, Configuration
from unitycatalog.client.models import CreateCatalog

from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.unity_stand_in import UnityStandIn, running_unity_stand_in

API = "/api/2.1/unity-catalog"


@pytest.fixture(scope="module")
def unity() -> Iterator[UnityStandIn]:
    with running_unity_stand_in() as fixture:
        yield fixture


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("unity-interop-root")


@pytest.fixture(scope="module")
def server(unity: UnityStandIn, root: Path) -> Iterator[str]:
    """The adapter on the same Unity and storage root; no metadata cache, so what impls
    changes is seen at once (with it, within `metadata_cache_ttl`)."""
    properties = {"endpoint": unity.url, "root": str(root)}
    with running_server("unity", properties, metadata_cache=False) as url:
        yield url


@pytest.fixture
def rest(server: str) -> LanceNamespace:
    return lance_namespace.connect("rest", {"uri": server})


@pytest.fixture
def impls(unity: UnityStandIn, root: Path) -> Iterator[ImplsUnityNamespace]:
    namespace = ImplsUnityNamespace(**{"unity.endpoint": unity.url, "unity.root": str(root)})
    yield namespace
    namespace.close()


@pytest.fixture
def catalog(unity: UnityStandIn) -> str:
    """A fresh catalog per test: the fixture pages listings by 3, which impls does not follow."""
    name = f"cat_{uuid.uuid4().hex[:8]}"

    async def create() -> None:
        async with ApiClient(Configuration(host=f"{unity.url}{API}")) as client:
            await CatalogsApi(client).create_catalog(CreateCatalog(name=name))

    asyncio.run(create())
    return name


def unity_table(unity: UnityStandIn, *names: str) -> dict[str, Any]:
    response = httpx.get(f"{unity.url}{API}/tables/{'.'.join(names)}")
    response.raise_for_status()
    return response.json()


def read_rows(namespace: LanceNamespace, table_id: list[str]) -> pa.Table:
    return lance.dataset(namespace_client=namespace, table_id=table_id).to_table()


def test_namespaces_impls_creates_are_the_servers_and_properties_round_trip(
    rest: LanceNamespace, impls: ImplsUnityNamespace, server: str, catalog: str
) -> None:
    properties = {"owner": "alice", "comment": "nightly loads"}
    impls.create_namespace(CreateNamespaceRequest(id=[catalog, "imp"], properties=properties))

    assert rest.list_namespaces(ListNamespacesRequest(id=[catalog])).namespaces == ["imp"]
    described = rest.describe_namespace(DescribeNamespaceRequest(id=[catalog, "imp"]))
    assert described.properties == properties

    altered = httpx.post(
        f"{server}/AlterNamespace",
        json={"id": [catalog, "imp"], "set_properties": {"owner": "bob"}},
    )
    assert altered.status_code == 200, altered.text
    read_back = impls.describe_namespace(DescribeNamespaceRequest(id=[catalog, "imp"]))
    assert read_back.properties == {"owner": "bob", "comment": "nightly loads"}


def test_namespaces_the_server_creates_are_impls(
    rest: LanceNamespace, impls: ImplsUnityNamespace, catalog: str
) -> None:
    properties = {"owner": "bob", "location": "s3://bucket/sales"}
    rest.create_namespace(CreateNamespaceRequest(id=[catalog, "srv"], properties=properties))

    assert catalog in impls.list_namespaces(ListNamespacesRequest(id=[])).namespaces
    assert impls.list_namespaces(ListNamespacesRequest(id=[catalog])).namespaces == ["srv"]
    described = impls.describe_namespace(DescribeNamespaceRequest(id=[catalog, "srv"]))
    assert described.properties == properties


def test_tables_impls_writes_are_listed_described_read_and_written_by_the_server(
    rest: LanceNamespace, impls: ImplsUnityNamespace, unity: UnityStandIn, catalog: str
) -> None:
    impls.create_namespace(CreateNamespaceRequest(id=[catalog, "imp"]))
    written, declared = [catalog, "imp", "written"], [catalog, "imp", "declared"]
    rows, more = sample_table(5), sample_table(3, start=5)
    lance.write_dataset(rows, namespace_client=impls, table_id=written, mode="create")
    impls.declare_table(DeclareTableRequest(id=declared))

    assert rest.list_tables(ListTablesRequest(id=[catalog, "imp"])).tables == [
        "declared", "written"
    ]
    with_data = ListTablesRequest(id=[catalog, "imp"], include_declared=False)
    assert rest.list_tables(with_data).tables == ["written"]
    described = rest.describe_table(DescribeTableRequest(id=written))
    theirs = impls.describe_table(DescribeTableRequest(id=written))
    assert described.location == theirs.location
    assert described.properties == {"table_type": "lance", "managed_by": "catalog"}
    assert rest.count_table_rows(CountTableRowsRequest(id=written)).count == 5
    assert read_rows(rest, written).to_pylist() == rows.to_pylist()

    # The server writes into both; impls reads every row back, and the placeholder column
    # impls declared is replaced by the columns of the data.
    assert unity_table(unity, *declared)["columns"][0]["name"] == "__placeholder_id"
    rest.insert_into_table(InsertIntoTableRequest(id=written), arrow_stream(more))
    rest.insert_into_table(InsertIntoTableRequest(id=declared), arrow_stream(rows))
    assert read_rows(impls, written).to_pylist() == rows.to_pylist() + more.to_pylist()
    assert read_rows(impls, declared).to_pylist() == rows.to_pylist()
    columns = unity_table(unity, *declared)["columns"]
    assert [column["name"] for column in columns] == ["id", "name", "vector"]
    assert impls.describe_table(DescribeTableRequest(id=declared)).properties == {
        "table_type": "lance", "managed_by": "catalog"
    }
    # A schema change made through the server reaches Unity's columns too.
    rest.alter_table_drop_columns(AlterTableDropColumnsRequest(id=declared, columns=["vector"]))
    assert [column["name"] for column in unity_table(unity, *declared)["columns"]] == [
        "id", "name"
    ]


def test_tables_the_server_writes_read_through_impls(
    rest: LanceNamespace, impls: ImplsUnityNamespace, catalog: str
) -> None:
    rest.create_namespace(CreateNamespaceRequest(id=[catalog, "srv"]))
    created, declared = [catalog, "srv", "created"], [catalog, "srv", "declared"]
    rows = sample_table(4)
    rest.create_table(CreateTableRequest(id=created), arrow_stream(rows))
    rest.declare_table(DeclareTableRequest(id=declared))

    listing = impls.list_tables(ListTablesRequest(id=[catalog, "srv"]))
    assert listing.tables == ["created", "declared"]
    with_data = ListTablesRequest(id=[catalog, "srv"], include_declared=False)
    assert impls.list_tables(with_data).tables == ["created"]
    theirs = impls.describe_table(DescribeTableRequest(id=created))
    assert theirs.location == rest.describe_table(DescribeTableRequest(id=created)).location
    assert theirs.properties == {"table_type": "lance"}
    assert read_rows(impls, created).to_pylist() == rows.to_pylist()

    # pylance writes the first data of the server's declared table through impls.
    lance.write_dataset(rows, namespace_client=impls, table_id=declared, mode="append")
    assert rest.count_table_rows(CountTableRowsRequest(id=declared)).count == 4
    assert read_rows(rest, declared).to_pylist() == rows.to_pylist()


def test_deregister_either_way_leaves_the_data(
    rest: LanceNamespace, impls: ImplsUnityNamespace, catalog: str
) -> None:
    rest.create_namespace(CreateNamespaceRequest(id=[catalog, "s"]))
    by_server, by_impls = [catalog, "s", "by_server"], [catalog, "s", "by_impls"]
    rows = sample_table(3)
    location = rest.create_table(CreateTableRequest(id=by_server), arrow_stream(rows)).location
    theirs = lance.write_dataset(rows, namespace_client=impls, table_id=by_impls, mode="create")

    impls.deregister_table(DeregisterTableRequest(id=by_server))
    with pytest.raises(TableNotFoundError):
        rest.describe_table(DescribeTableRequest(id=by_server))
    rest.deregister_table(DeregisterTableRequest(id=by_impls))
    assert impls.list_tables(ListTablesRequest(id=[catalog, "s"])).tables == []
    assert lance.dataset(location).count_rows() == 3
    assert lance.dataset(theirs.uri).count_rows() == 3


def test_drop_deletes_only_data_the_server_owns(
    rest: LanceNamespace, impls: ImplsUnityNamespace, unity: UnityStandIn, catalog: str,
    tmp_path: Path,
) -> None:
    elsewhere = ImplsUnityNamespace(
        **{"unity.endpoint": unity.url, "unity.root": str(tmp_path / "elsewhere")}
    )
    impls.create_namespace(CreateNamespaceRequest(id=[catalog, "d"]))
    inside, outside = [catalog, "d", "inside"], [catalog, "d", "outside"]
    rows = sample_table(3)
    in_root = lance.write_dataset(rows, namespace_client=impls, table_id=inside, mode="create")
    out = lance.write_dataset(rows, namespace_client=elsewhere, table_id=outside, mode="create")
    with pytest.raises(UnsupportedOperationError):  # impls cannot drop a table in Unity
        impls.drop_table(DropTableRequest(id=outside))

    rest.drop_table(DropTableRequest(id=outside))
    rest.drop_table(DropTableRequest(id=inside))
    assert impls.list_tables(ListTablesRequest(id=[catalog, "d"])).tables == []
    assert lance.dataset(out.uri).count_rows() == 3  # outside the server's root: kept
    assert not Path(in_root.uri).exists()  # inside it: the table's own data is deleted
    elsewhere.close()


def test_what_impls_cannot_do_and_the_server_can(
    rest: LanceNamespace, impls: ImplsUnityNamespace, catalog: str
) -> None:
    rest.create_namespace(CreateNamespaceRequest(id=[catalog, "full"]))
    names = ["t1", "t2", "t3", "t4"]
    for name in names:
        table_id = [catalog, "full", name]
        rest.create_table(CreateTableRequest(id=table_id), arrow_stream(sample_table(1)))

    # impls reads one page of a listing: the fixture, like Unity, pages by its own size.
    assert len(impls.list_tables(ListTablesRequest(id=[catalog, "full"])).tables) == 3
    assert rest.list_tables(ListTablesRequest(id=[catalog, "full"])).tables == names
    # impls describes only schemas; the server describes catalogs too.
    with pytest.raises(InvalidInputException):
        impls.describe_namespace(DescribeNamespaceRequest(id=[catalog]))
    assert rest.describe_namespace(DescribeNamespaceRequest(id=[catalog])).properties == {}
    # A schema that still holds tables: impls reports an internal error, the server code 3.
    with pytest.raises(InternalException, match="FAILED_PRECONDITION"):
        impls.drop_namespace(DropNamespaceRequest(id=[catalog, "full"]))
    with pytest.raises(NamespaceNotEmptyError):
        rest.drop_namespace(DropNamespaceRequest(id=[catalog, "full"]))
