"""The iceberg backend and lance-namespace-impls' `IcebergNamespace` on one Iceberg REST
Catalog, both ways.

The server runs on the Iceberg fixture and is driven over HTTP by the official client
(`lance_namespace.connect("rest", ...)`); impls talks to the same fixture directly. Tables are
written by pylance through either side, and rows are compared cell for cell. Where impls
itself cannot do a step, a test says so by asserting the failure.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import lance
import lance_namespace
import pyarrow as pa
import pytest
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
    LanceNamespace,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceNotEmptyError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from lance_namespace_impls.iceberg import IcebergNamespace as ImplsIcebergNamespace
from lance_namespace_impls.rest_client import InternalException, NamespaceNotFoundException

from tests.support.adapter import running_server
from tests.support.iceberg_stand_in import IcebergStandIn, running_iceberg_stand_in
from tests.support.lance_data import arrow_stream, sample_table

WAREHOUSE = "wh"


@pytest.fixture(scope="module")
def iceberg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IcebergStandIn]:
    with running_iceberg_stand_in(tmp_path_factory.mktemp("iceberg-interop")) as fixture:
        yield fixture


@pytest.fixture(autouse=True)
def prefix_in_defaults(iceberg: IcebergStandIn) -> Iterator[None]:
    """impls reads a warehouse's prefix only from `/v1/config`'s `defaults`."""
    iceberg.state.prefix_style = "defaults"
    yield
    iceberg.state.prefix_style = "overrides"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("iceberg-interop-root")


@pytest.fixture(scope="module")
def server(iceberg: IcebergStandIn, root: Path) -> Iterator[str]:
    """The adapter on the same catalog and storage root; no metadata cache, so what impls
    changes is seen at once (with it, within `metadata_cache_ttl`)."""
    properties = {"endpoint": iceberg.url, "root": str(root), "warehouses": WAREHOUSE}
    with running_server("iceberg", properties, metadata_cache=False) as url:
        yield url


@pytest.fixture
def rest(server: str) -> LanceNamespace:
    return lance_namespace.connect("rest", {"uri": server})


@pytest.fixture
def impls(iceberg: IcebergStandIn, root: Path) -> Iterator[ImplsIcebergNamespace]:
    namespace = ImplsIcebergNamespace(endpoint=iceberg.url, root=str(root))
    yield namespace
    namespace.close()


@pytest.fixture
def name() -> str:
    """A fresh top-level namespace name per test."""
    return f"ns_{uuid.uuid4().hex[:8]}"


def read_rows(namespace: LanceNamespace, table_id: list[str]) -> pa.Table:
    return lance.dataset(namespace_client=namespace, table_id=table_id).to_table()


def test_namespaces_impls_creates_are_the_servers_and_properties_round_trip(
    rest: LanceNamespace, impls: ImplsIcebergNamespace, server: str, name: str
) -> None:
    properties = {"owner": "alice", "comment": "nightly loads"}
    impls.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name], properties=properties))
    impls.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name, "nested"]))

    assert name in rest.list_namespaces(ListNamespacesRequest(id=[WAREHOUSE])).namespaces
    nested = rest.list_namespaces(ListNamespacesRequest(id=[WAREHOUSE, name]))
    assert nested.namespaces == ["nested"]
    described = rest.describe_namespace(DescribeNamespaceRequest(id=[WAREHOUSE, name]))
    assert described.properties == properties

    altered = httpx.post(
        f"{server}/AlterNamespace",
        json={"id": [WAREHOUSE, name], "set_properties": {"owner": "bob"},
              "unset_properties": ["comment"]},
    )
    assert altered.status_code == 200, altered.text
    read_back = impls.describe_namespace(DescribeNamespaceRequest(id=[WAREHOUSE, name]))
    assert read_back.properties == {"owner": "bob"}


def test_namespaces_the_server_creates_are_impls(
    rest: LanceNamespace, impls: ImplsIcebergNamespace, name: str
) -> None:
    properties = {"owner": "bob", "location": "s3://bucket/sales"}
    rest.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name], properties=properties))
    rest.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name, "deep"]))

    # impls names each namespace it lists in full, joined with '.'.
    listed = impls.list_namespaces(ListNamespacesRequest(id=[WAREHOUSE])).namespaces
    assert f"{WAREHOUSE}.{name}" in listed
    children = impls.list_namespaces(ListNamespacesRequest(id=[WAREHOUSE, name]))
    assert children.namespaces == [f"{WAREHOUSE}.{name}.deep"]
    described = impls.describe_namespace(DescribeNamespaceRequest(id=[WAREHOUSE, name]))
    assert described.properties == properties


def test_tables_impls_writes_are_listed_described_read_and_written_by_the_server(
    rest: LanceNamespace, impls: ImplsIcebergNamespace, name: str
) -> None:
    impls.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name]))
    impls.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name, "sub"]))
    written, declared = [WAREHOUSE, name, "written"], [WAREHOUSE, name, "declared"]
    nested = [WAREHOUSE, name, "sub", "nested"]
    rows, more = sample_table(5), sample_table(3, start=5)
    lance.write_dataset(rows, namespace_client=impls, table_id=written, mode="create")
    lance.write_dataset(rows, namespace_client=impls, table_id=nested, mode="create")
    impls.declare_table(DeclareTableRequest(id=declared))

    listing = rest.list_tables(ListTablesRequest(id=[WAREHOUSE, name])).tables
    assert sorted(listing) == ["declared", "written"]
    with_data = ListTablesRequest(id=[WAREHOUSE, name], include_declared=False)
    assert rest.list_tables(with_data).tables == ["written"]
    assert rest.list_tables(ListTablesRequest(id=[WAREHOUSE, name, "sub"])).tables == ["nested"]
    described = rest.describe_table(DescribeTableRequest(id=written))
    assert described.location == impls.describe_table(DescribeTableRequest(id=written)).location
    assert described.properties == {"table_type": "lance"}
    assert rest.count_table_rows(CountTableRowsRequest(id=written)).count == 5
    assert read_rows(rest, written).to_pylist() == rows.to_pylist()
    assert read_rows(rest, nested).to_pylist() == rows.to_pylist()

    rest.insert_into_table(InsertIntoTableRequest(id=written), arrow_stream(more))
    rest.insert_into_table(InsertIntoTableRequest(id=declared), arrow_stream(rows))
    assert read_rows(impls, written).to_pylist() == rows.to_pylist() + more.to_pylist()
    assert read_rows(impls, declared).to_pylist() == rows.to_pylist()


def test_tables_the_server_writes_read_through_impls(
    rest: LanceNamespace, impls: ImplsIcebergNamespace, name: str
) -> None:
    rest.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name]))
    rest.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name, "deep"]))
    created, declared = [WAREHOUSE, name, "created"], [WAREHOUSE, name, "declared"]
    nested = [WAREHOUSE, name, "deep", "nested"]
    rows = sample_table(4)
    rest.create_table(CreateTableRequest(id=created), arrow_stream(rows))
    rest.create_table(CreateTableRequest(id=nested), arrow_stream(rows))
    rest.declare_table(DeclareTableRequest(id=declared))

    listing = impls.list_tables(ListTablesRequest(id=[WAREHOUSE, name]))
    assert listing.tables == ["created", "declared"]
    with_data = ListTablesRequest(id=[WAREHOUSE, name], include_declared=False)
    assert impls.list_tables(with_data).tables == ["created"]
    theirs = impls.describe_table(DescribeTableRequest(id=created))
    assert theirs.location == rest.describe_table(DescribeTableRequest(id=created)).location
    assert theirs.properties == {"table_type": "lance"}
    assert read_rows(impls, created).to_pylist() == rows.to_pylist()
    assert read_rows(impls, nested).to_pylist() == rows.to_pylist()

    # pylance writes the first data of the server's declared table through impls.
    lance.write_dataset(rows, namespace_client=impls, table_id=declared, mode="append")
    assert rest.count_table_rows(CountTableRowsRequest(id=declared)).count == 4
    assert read_rows(rest, declared).to_pylist() == rows.to_pylist()


def test_deregister_either_way_leaves_the_data(
    rest: LanceNamespace, impls: ImplsIcebergNamespace, name: str
) -> None:
    rest.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name]))
    by_server, by_impls = [WAREHOUSE, name, "by_server"], [WAREHOUSE, name, "by_impls"]
    rows = sample_table(3)
    location = rest.create_table(CreateTableRequest(id=by_server), arrow_stream(rows)).location
    theirs = lance.write_dataset(rows, namespace_client=impls, table_id=by_impls, mode="create")

    impls.deregister_table(DeregisterTableRequest(id=by_server))
    with pytest.raises(TableNotFoundError):
        rest.describe_table(DescribeTableRequest(id=by_server))
    rest.deregister_table(DeregisterTableRequest(id=by_impls))
    assert impls.list_tables(ListTablesRequest(id=[WAREHOUSE, name])).tables == []
    assert lance.dataset(location).count_rows() == 3
    assert lance.dataset(theirs.uri).count_rows() == 3


def test_drop_deletes_only_data_the_server_owns(
    rest: LanceNamespace, impls: ImplsIcebergNamespace, iceberg: IcebergStandIn, name: str,
    tmp_path: Path,
) -> None:
    elsewhere = ImplsIcebergNamespace(endpoint=iceberg.url, root=str(tmp_path / "elsewhere"))
    impls.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name]))
    inside, outside = [WAREHOUSE, name, "inside"], [WAREHOUSE, name, "outside"]
    rows = sample_table(3)
    in_root = lance.write_dataset(rows, namespace_client=impls, table_id=inside, mode="create")
    out = lance.write_dataset(rows, namespace_client=elsewhere, table_id=outside, mode="create")
    with pytest.raises(UnsupportedOperationError):  # impls cannot drop an Iceberg table
        impls.drop_table(DropTableRequest(id=outside))

    rest.drop_table(DropTableRequest(id=outside))
    rest.drop_table(DropTableRequest(id=inside))
    assert impls.list_tables(ListTablesRequest(id=[WAREHOUSE, name])).tables == []
    assert lance.dataset(out.uri).count_rows() == 3  # outside the server's root: kept
    assert not Path(in_root.uri).exists()  # inside it: the table's own data is deleted
    elsewhere.close()


def test_what_impls_cannot_do_and_the_server_can(
    rest: LanceNamespace, impls: ImplsIcebergNamespace, iceberg: IcebergStandIn, name: str
) -> None:
    rest.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name]))
    rest.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name, "a"]))
    rest.create_namespace(CreateNamespaceRequest(id=[WAREHOUSE, name, "a", "b"]))
    rest.create_table(CreateTableRequest(id=[WAREHOUSE, name, "t"]), arrow_stream(sample_table(1)))

    # impls encodes a nested parent twice, so it cannot list below two levels.
    with pytest.raises(InternalException, match="NoSuchNamespaceException"):
        impls.list_namespaces(ListNamespacesRequest(id=[WAREHOUSE, name, "a"]))
    listed = rest.list_namespaces(ListNamespacesRequest(id=[WAREHOUSE, name, "a"]))
    assert listed.namespaces == ["b"]
    # A namespace that still holds a table: impls reports an internal error, the server code 3.
    with pytest.raises(InternalException, match="not empty"):
        impls.drop_namespace(DropNamespaceRequest(id=[WAREHOUSE, name]))
    with pytest.raises(NamespaceNotEmptyError):
        rest.drop_namespace(DropNamespaceRequest(id=[WAREHOUSE, name]))
    # A catalog that sends the warehouse prefix in `overrides` (where the spec lets it win):
    # impls ignores it and finds no namespace; the server follows it.
    iceberg.state.prefix_style = "overrides"
    fresh = ImplsIcebergNamespace(endpoint=iceberg.url)
    with pytest.raises(NamespaceNotFoundException):
        fresh.describe_namespace(DescribeNamespaceRequest(id=[WAREHOUSE, name]))
    fresh.close()
    assert rest.list_tables(ListTablesRequest(id=[WAREHOUSE, name])).tables == ["t"]
