"""The iceberg backend through the real adapter, driven by pylance's official RestNamespace, on
Apache Iceberg's REST reference server; a catalog outage, which the real server cannot be made
to have, on the stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lance
import pytest
from lance.namespace import RestNamespace
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    DropTableRequest,
    InsertIntoTableRequest,
    InvalidInputError,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    RegisterTableRequest,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError

from tests.support.adapter import running_server
from tests.support.common import unique
from tests.support.iceberg_rest_server import IcebergRestServer
from tests.support.iceberg_stand_in import IcebergStandIn
from tests.support.lance_data import arrow_stream, sample_table


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("iceberg-lance-root")


@pytest.fixture(scope="module")
def adapter(iceberg_rest_server: IcebergRestServer, root: Path) -> Iterator[str]:
    properties = {
        "endpoint": iceberg_rest_server.url, "root": str(root), "client.read-timeout-ms": "2000",
        "warehouses": "wh",
    }
    with running_server("iceberg", properties) as url:
        yield url


@pytest.fixture
def client(adapter: str) -> RestNamespace:
    return RestNamespace(uri=adapter)


def test_create_table_with_data_lands_at_its_location_and_in_the_catalog(
    client: RestNamespace, iceberg_rest_server: IcebergRestServer, root: Path
) -> None:
    sales = unique("sales")  # the server is the session's: fresh names
    client.create_namespace(CreateNamespaceRequest(id=["wh", sales]))
    client.create_namespace(CreateNamespaceRequest(id=["wh", sales, "eu"]))
    table_id = ["wh", sales, "eu", "orders"]
    created = client.create_table(CreateTableRequest(id=table_id), arrow_stream(sample_table(50)))
    location = f"{root}/wh/{sales}/eu/orders"
    assert created.location == location
    assert lance.dataset(location).count_rows() == 50

    official = RestCatalog("official", uri=iceberg_rest_server.url, warehouse="wh")
    table = official.load_table((sales, "eu", "orders"))
    assert table.location() == location
    assert table.properties["table_type"] == "lance"
    assert [field.name for field in table.schema().fields] == ["dummy"]

    client.insert_into_table(InsertIntoTableRequest(id=table_id), arrow_stream(sample_table(5, 50)))
    assert client.count_table_rows(CountTableRowsRequest(id=table_id)).count == 55
    detailed = client.describe_table(DescribeTableRequest(id=table_id, load_detailed_metadata=True))
    assert detailed.location == location and detailed.version == 2
    assert [field.name for field in detailed.var_schema.fields] == ["id", "name", "vector"]
    assert client.list_tables(ListTablesRequest(id=["wh", sales, "eu"])).tables == ["orders"]
    assert client.list_namespaces(ListNamespacesRequest(id=["wh", sales])).namespaces == ["eu"]

    with pytest.raises(
        TableAlreadyExistsError, match=rf"table wh\${sales}\$eu\$orders already exists"
    ):
        client.create_table(CreateTableRequest(id=table_id), arrow_stream(sample_table(1)))
    with pytest.raises(NamespaceNotEmptyError, match=rf"Namespace {sales}\.eu is not empty"):
        client.drop_namespace(DropNamespaceRequest(id=["wh", sales, "eu"]))

    client.drop_table(DropTableRequest(id=table_id))
    with pytest.raises(NoSuchTableError, match=rf"Table does not exist: {sales}\.eu\.orders"):
        official.load_table((sales, "eu", "orders"))
    with pytest.raises(TableNotFoundError, match=rf"Table does not exist: {sales}\.eu\.orders"):
        client.describe_table(DescribeTableRequest(id=table_id))
    client.drop_namespace(DropNamespaceRequest(id=["wh", sales, "eu"]))
    with pytest.raises(
        NamespaceNotFoundError, match=rf"Namespace does not exist: {sales}\.eu"
    ):  # already gone
        client.drop_namespace(DropNamespaceRequest(id=["wh", sales, "eu"]))
    client.drop_namespace(DropNamespaceRequest(id=["wh", sales, "eu"], mode="Skip"))


def test_declare_register_deregister_through_the_adapter(
    client: RestNamespace, root: Path
) -> None:
    reg = unique("reg")
    client.create_namespace(CreateNamespaceRequest(id=["wh", reg]))
    declared = client.declare_table(DeclareTableRequest(id=["wh", reg, "later"]))
    assert declared.location == f"{root}/wh/{reg}/later"
    existing = str(root / "wh" / reg / "existing")  # the table's own path in the root
    lance.write_dataset(sample_table(7), existing)
    client.register_table(RegisterTableRequest(id=["wh", reg, "existing"], location=existing))
    assert client.count_table_rows(CountTableRowsRequest(id=["wh", reg, "existing"])).count == 7
    assert client.list_tables(ListTablesRequest(id=["wh", reg])).tables == ["existing", "later"]
    client.deregister_table(DeregisterTableRequest(id=["wh", reg, "existing"]))
    assert lance.dataset(existing).count_rows() == 7
    assert client.list_tables(ListTablesRequest(id=["wh", reg])).tables == ["later"]


def test_errors_reach_the_client_with_their_codes(client: RestNamespace) -> None:
    with pytest.raises(NamespaceNotFoundError, match="Namespace does not exist: nowhere"):
        client.list_tables(ListTablesRequest(id=["wh", "nowhere"]))
    with pytest.raises(TableNotFoundError, match=r"Table does not exist: nowhere\.t"):
        client.describe_table(DescribeTableRequest(id=["wh", "nowhere", "t"]))
    with pytest.raises(
        NamespaceNotFoundError, match="Namespace does not exist: nowhere"
    ):  # the reference server would make it
        client.declare_table(DeclareTableRequest(id=["wh", "nowhere", "t"]))
    with pytest.raises(
        InvalidInputError, match=r"table identifier is \[warehouse, namespace\.\.\., table\]"
    ):
        client.declare_table(DeclareTableRequest(id=["wh", "only_two"]))


def test_a_catalog_outage_reaches_the_client_as_code_17(
    iceberg: IcebergStandIn, root: Path
) -> None:
    """Fault injection: the stand-in answers 503 for longer than the retries last."""
    properties = {"endpoint": iceberg.url, "root": str(root), "client.read-timeout-ms": "2000"}
    with running_server("iceberg", properties) as url:
        iceberg.control.fail_next(10, 503, method="GET", path="/namespaces")
        with pytest.raises(
            ServiceUnavailableError, match="catalog returned HTTP 503: InjectedFault"
        ) as raised:
            RestNamespace(uri=url).list_namespaces(ListNamespacesRequest(id=["wh"]))
    iceberg.control.reset()
    assert raised.value.code == 17
