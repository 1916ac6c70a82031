"""The unity backend through the real adapter, driven by pylance's official RestNamespace."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance
import pytest
from lance.namespace import RestNamespace
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    DropTableRequest,
    InvalidInputError,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    RegisterTableRequest,
    TableNotFoundError,
    UnauthenticatedError,
)
from unitycatalog.client import ApiClient, CatalogsApi, Configuration, TablesApi
from unitycatalog.client.models import ColumnTypeName, CreateCatalog

from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.unity_stand_in import UnityStandIn


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("unity-lance-root")


@pytest.fixture(scope="module")
def adapter(unity: UnityStandIn, root: Path) -> Iterator[str]:
    properties = {"endpoint": unity.url, "root": str(root), "client.read-timeout-ms": "2000"}
    with running_server("unity", properties) as url:
        yield url


@pytest.fixture
def client(adapter: str, unity: UnityStandIn) -> RestNamespace:
    unity.control.reset()
    return RestNamespace(uri=adapter)


def sdk(unity: UnityStandIn, call: Any) -> Any:
    async def main() -> Any:
        configuration = Configuration(host=f"{unity.url}/api/2.1/unity-catalog")
        async with ApiClient(configuration) as api_client:
            return await call(api_client)

    return asyncio.run(main())


@pytest.fixture(scope="module")
def catalog(unity: UnityStandIn) -> str:
    sdk(unity, lambda api: CatalogsApi(api).create_catalog(CreateCatalog(name="lakehouse")))
    return "lakehouse"


def test_create_table_with_data_lands_at_its_location_and_in_unity(
    client: RestNamespace, unity: UnityStandIn, catalog: str, root: Path
) -> None:
    assert catalog in client.list_namespaces(ListNamespacesRequest(id=[])).namespaces
    client.create_namespace(CreateNamespaceRequest(id=[catalog, "ml"], properties={"o": "me"}))
    assert client.describe_namespace(DescribeNamespaceRequest(id=[catalog, "ml"])).properties == {
        "o": "me"
    }
    table_id = [catalog, "ml", "events"]
    created = client.create_table(CreateTableRequest(id=table_id), arrow_stream(sample_table(30)))
    location = f"{root}/{catalog}/ml/events"
    assert created.location == location
    assert lance.dataset(location).count_rows() == 30

    table = sdk(unity, lambda api: TablesApi(api).get_table(f"{catalog}.ml.events"))
    assert table.storage_location == location
    assert table.properties["table_type"] == "lance"
    # Declared before the data was written, then registered again with the data's columns.
    assert [column.name for column in table.columns] == ["id", "name", "vector"]
    assert [column.type_name for column in table.columns][:2] == ["LONG", "STRING"]

    assert client.count_table_rows(CountTableRowsRequest(id=table_id)).count == 30
    detailed = client.describe_table(DescribeTableRequest(id=table_id, load_detailed_metadata=True))
    assert detailed.version == 1
    assert [field.name for field in detailed.var_schema.fields] == ["id", "name", "vector"]
    assert client.list_tables(ListTablesRequest(id=[catalog, "ml"])).tables == ["events"]
    with pytest.raises(NamespaceNotEmptyError, match="Cannot delete schema with tables"):
        client.drop_namespace(DropNamespaceRequest(id=[catalog, "ml"]))

    client.drop_table(DropTableRequest(id=table_id))
    assert client.list_tables(ListTablesRequest(id=[catalog, "ml"])).tables == []
    with pytest.raises(TableNotFoundError, match=rf"Table not found: {catalog}\.ml\.events"):
        client.describe_table(DescribeTableRequest(id=table_id))
    client.drop_namespace(DropNamespaceRequest(id=[catalog, "ml"]))


def test_register_through_the_adapter_fills_unity_columns(
    client: RestNamespace, unity: UnityStandIn, catalog: str, root: Path
) -> None:
    client.create_namespace(CreateNamespaceRequest(id=[catalog, "reg"]))
    location = str(root / catalog / "reg" / "vectors")  # the table's own path in the root
    lance.write_dataset(sample_table(4), location)
    client.register_table(RegisterTableRequest(id=[catalog, "reg", "vectors"], location=location))
    table = sdk(unity, lambda api: TablesApi(api).get_table(f"{catalog}.reg.vectors"))
    assert [(c.name, c.type_name, c.position) for c in table.columns] == [
        ("id", ColumnTypeName.LONG, 0),
        ("name", ColumnTypeName.STRING, 1),
        ("vector", ColumnTypeName.ARRAY, 2),
    ]
    assert client.count_table_rows(CountTableRowsRequest(id=[catalog, "reg", "vectors"])).count == 4
    client.deregister_table(DeregisterTableRequest(id=[catalog, "reg", "vectors"]))
    assert lance.dataset(location).count_rows() == 4


def test_errors_reach_the_client_with_their_codes(
    client: RestNamespace, unity: UnityStandIn, catalog: str
) -> None:
    with pytest.raises(NamespaceNotFoundError, match="Catalog not found: no_such_catalog"):
        client.list_namespaces(ListNamespacesRequest(id=["no_such_catalog"]))
    # The official client puts the space in the route as `+`: what differs is the route.
    with pytest.raises(
        InvalidInputError, match=r"request body names \[.*'bad name'\], the route names"
    ):
        client.create_namespace(CreateNamespaceRequest(id=[catalog, "bad name"]))
    with pytest.raises(
        InvalidInputError, match=r"identifier is catalog or catalog\.schema, got \[.*'a', 'b'\]"
    ):
        client.list_tables(ListTablesRequest(id=[catalog, "a", "b"]))
    unity.control.required_token = "not-configured"
    with pytest.raises(
        UnauthenticatedError, match="401: NotAuthorizedException: missing or invalid token"
    ) as raised:
        client.list_namespaces(ListNamespacesRequest(id=[]))
    assert raised.value.code == 16
