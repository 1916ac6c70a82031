"""The unity backend against the Unity Catalog protocol fixture, called directly from Python.

The fixture itself is driven with the official `unitycatalog-client` SDK first.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    InvalidInputError,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceAlreadyExistsError,
    NamespaceExistsRequest,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    RegisterTableRequest,
    RenameTableRequest,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from unitycatalog.client import (
    ApiClient,
    CatalogsApi,
    Configuration,
    SchemasApi,
    TablesApi,
)
from unitycatalog.client.exceptions import BadRequestException, NotFoundException
from unitycatalog.client.models import (
    ColumnInfo,
    ColumnTypeName,
    CreateCatalog,
    CreateSchema,
    CreateTable,
    DataSourceFormat,
    TableType,
    UpdateCatalog,
    UpdateSchema,
)

from backends.core.settings import ConfigurationError
from backends.guard import GuardedNamespace
from backends.unity import UnityNamespace, unity_columns
from tests.support.common import unique
from tests.support.unity_stand_in import UnityStandIn

Factory = Callable[..., UnityNamespace]


@pytest.fixture(autouse=True)
def clean_control(unity: UnityStandIn) -> Iterator[None]:
    unity.control.reset()
    unity.state.legacy_already_exists = False
    yield
    unity.control.reset()


@pytest.fixture
def make_namespace(unity: UnityStandIn, tmp_path: Path) -> Iterator[Factory]:
    created: list[UnityNamespace] = []

    def factory(**overrides: str) -> UnityNamespace:
        # A generous read timeout: a loaded machine must not time out ordinary calls.
        properties = {
            "endpoint": unity.url, "root": str(tmp_path / "root"), "client.read-timeout-ms": "15000"
        }
        namespace = UnityNamespace(**{**properties, **overrides})
        created.append(namespace)
        return namespace

    yield factory
    for namespace in created:
        namespace.close()


@pytest.fixture
def ns(make_namespace: Factory) -> UnityNamespace:
    return make_namespace()


def run_sdk(unity: UnityStandIn, action: Callable[[ApiClient], Any]) -> Any:
    """Run one coroutine of the official (asyncio) SDK against the fixture."""

    async def main() -> Any:
        configuration = Configuration(host=f"{unity.url}/api/2.1/unity-catalog")
        async with ApiClient(configuration) as client:
            return await action(client)

    return asyncio.run(main())


@pytest.fixture
def catalog(unity: UnityStandIn) -> str:
    name = unique("cat")
    run_sdk(unity, lambda client: CatalogsApi(client).create_catalog(CreateCatalog(name=name)))
    return name


@pytest.fixture
def schema(ns: UnityNamespace, catalog: str) -> list[str]:
    identifier = [catalog, "sch"]
    ns.create_namespace(CreateNamespaceRequest(id=identifier))
    return identifier


def write_lance(location: str, table: pa.Table | None = None) -> None:
    lance.write_dataset(table if table is not None else pa.table({"id": [1, 2, 3]}), location)


# Configuration


def test_configuration_defaults(unity: UnityStandIn) -> None:
    namespace = UnityNamespace(endpoint=unity.url)
    assert namespace.client.settings.connect_timeout_ms == 10_000
    assert namespace.client.settings.read_timeout_ms == 300_000
    assert namespace.client.settings.max_retries == 3
    assert namespace.root == "/tmp/lance"
    assert namespace.client.base_url == f"{unity.url}/api/2.1/unity-catalog"
    assert unity.url in namespace.namespace_id()
    namespace.close()
    with_path = UnityNamespace(endpoint=f"{unity.url}/api/2.1/unity-catalog/")
    assert with_path.client.base_url == f"{unity.url}/api/2.1/unity-catalog"
    with_path.close()


@pytest.mark.parametrize(
    ("properties", "why"),
    [
        ({}, "missing required property 'endpoint'"),
        ({"endpoint": " "}, "missing required property 'endpoint'"),
        ({"endpoint": "http://h", "client.max-retries": "x"},
         "'client.max-retries' must be an integer, got 'x'"),
        ({"endpoint": "http://h", "client.read-timeout-ms": "-5"},
         "'client.read-timeout-ms' must be at least 1, got -5"),
    ],
)
def test_bad_configuration_is_rejected(properties: dict[str, str], why: str) -> None:
    with pytest.raises(ConfigurationError, match=why):
        UnityNamespace(**properties)


# The fixture, checked by the official SDK


def test_sdk_creates_lists_and_gets_catalogs_schemas_tables(
    unity: UnityStandIn, ns: UnityNamespace, tmp_path: Path
) -> None:
    name = unique("sdk")
    delta_column = ColumnInfo(
        name="n", type_name=ColumnTypeName.LONG, type_text="bigint", position=0
    )

    async def build(client: ApiClient) -> tuple[Any, ...]:
        catalogs, schemas, tables = CatalogsApi(client), SchemasApi(client), TablesApi(client)
        await catalogs.create_catalog(CreateCatalog(name=name, comment="made by the SDK"))
        await schemas.create_schema(
            CreateSchema(name="s", catalog_name=name, properties={"team": "ml"})
        )
        await tables.create_table(
            CreateTable(
                name="delta_table",
                catalog_name=name,
                schema_name="s",
                table_type=TableType.EXTERNAL,
                data_source_format=DataSourceFormat.DELTA,
                columns=[delta_column],
                storage_location=str(tmp_path / "delta"),
            )
        )
        listed_catalogs, token = [], None
        while True:  # the fixture returns at most 3 a page
            page = await catalogs.list_catalogs(page_token=token, max_results=2)
            listed_catalogs += [info.name for info in page.catalogs]
            token = page.next_page_token
            if not token:
                break
        listed_schemas = await schemas.list_schemas(catalog_name=name)
        schema_info = await schemas.get_schema(f"{name}.s")
        table_info = await tables.get_table(f"{name}.s.delta_table")
        return listed_catalogs, listed_schemas, schema_info, table_info

    listed_catalogs, listed_schemas, schema_info, table_info = run_sdk(unity, build)
    assert name in listed_catalogs and len(listed_catalogs) == len(set(listed_catalogs))
    assert [info.full_name for info in listed_schemas.schemas] == [f"{name}.s"]
    assert schema_info.properties == {"team": "ml"}
    assert table_info.columns[0].name == "n" and table_info.table_id

    # The backend sees what the SDK made, and ignores the non-Lance table.
    assert name in ns.list_namespaces(ListNamespacesRequest(id=[])).namespaces
    assert ns.describe_namespace(DescribeNamespaceRequest(id=[name, "s"])).properties == {
        "team": "ml"
    }
    assert ns.list_tables(ListTablesRequest(id=[name, "s"])).tables == []
    with pytest.raises(InvalidInputError, match=r"delta_table is not a Lance table"):
        ns.describe_table(DescribeTableRequest(id=[name, "s", "delta_table"]))
    with pytest.raises(InvalidInputError, match=r"delta_table is not a Lance table"):
        ns.deregister_table(DeregisterTableRequest(id=[name, "s", "delta_table"]))


def test_sdk_sees_a_registered_lance_table_with_its_columns(
    unity: UnityStandIn, ns: UnityNamespace, schema: list[str], tmp_path: Path
) -> None:
    location = str(tmp_path / "vectors")
    data = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "label": pa.array(["a", None], pa.string()),
            "vector": pa.array([[0.1, 0.2], [0.3, 0.4]], pa.list_(pa.float32(), 2)),
        }
    )
    write_lance(location, data)
    ns.register_table(RegisterTableRequest(id=[*schema, "vectors"], location=location))
    full_name = ".".join([*schema, "vectors"])

    async def read(client: ApiClient) -> tuple[Any, Any]:
        tables = TablesApi(client)
        listed = await tables.list_tables(catalog_name=schema[0], schema_name=schema[1])
        return listed, await tables.get_table(full_name)

    listed, table = run_sdk(unity, read)
    assert [info.name for info in listed.tables] == ["vectors"]
    assert table.table_type == TableType.EXTERNAL
    assert table.data_source_format == DataSourceFormat.TEXT
    assert table.storage_location == location
    assert table.properties == {"table_type": "lance"}
    columns = [(c.name, c.type_name, c.type_text, c.position, c.nullable) for c in table.columns]
    assert columns == [
        ("id", ColumnTypeName.LONG, "bigint", 0, True),
        ("label", ColumnTypeName.STRING, "string", 1, True),
        ("vector", ColumnTypeName.ARRAY, "array<float>", 2, True),
    ]
    assert json.loads(table.columns[2].type_json)["type"] == {
        "type": "array",
        "elementType": "float",
        "containsNull": True,
    }

    def get_missing(client: ApiClient) -> Any:
        return TablesApi(client).get_table(f"{schema[0]}.{schema[1]}.missing")

    with pytest.raises(NotFoundException, match=r"Table not found: .*\.sch\.missing"):
        run_sdk(unity, get_missing)


def test_sdk_updates_schemas_and_catalogs(unity: UnityStandIn) -> None:
    name = unique("upd")

    async def update(client: ApiClient) -> tuple[Any, ...]:
        catalogs, schemas, tables = CatalogsApi(client), SchemasApi(client), TablesApi(client)
        await catalogs.create_catalog(CreateCatalog(name=name, properties={"a": "1"}))
        await schemas.create_schema(
            CreateSchema(name="s", catalog_name=name, properties={"a": "1", "b": "2"})
        )
        await schemas.create_schema(CreateSchema(name="taken", catalog_name=name))
        await tables.create_table(
            CreateTable(
                name="t",
                catalog_name=name,
                schema_name="s",
                table_type=TableType.EXTERNAL,
                data_source_format=DataSourceFormat.TEXT,
                columns=[],
                storage_location="/tmp/nowhere",
            )
        )
        replaced = await schemas.update_schema(
            f"{name}.s", UpdateSchema(properties={"c": "3"}, comment="new comment")
        )
        kept = await schemas.update_schema(f"{name}.s", UpdateSchema(properties={}))
        renamed = await schemas.update_schema(f"{name}.s", UpdateSchema(new_name="s2"))
        moved_table = await tables.get_table(f"{name}.s2.t")
        catalog = await catalogs.update_catalog(name, UpdateCatalog(properties={"z": "9"}))
        return replaced, kept, renamed, moved_table, catalog

    replaced, kept, renamed, moved_table, catalog = run_sdk(unity, update)
    # A non-empty map replaces the properties; an empty one changes nothing.
    assert (replaced.properties, replaced.comment) == ({"c": "3"}, "new comment")
    assert kept.properties == {"c": "3"}
    assert (renamed.name, renamed.full_name, renamed.properties) == ("s2", f"{name}.s2", {"c": "3"})
    assert moved_table.schema_name == "s2"
    assert catalog.properties == {"z": "9"}

    failures: list[tuple[Callable[[ApiClient], Any], type[Exception], str]] = [
        (
            lambda client: SchemasApi(client).update_schema(
                f"{name}.missing", UpdateSchema(properties={"a": "1"})
            ),
            NotFoundException,
            rf"Schema not found: {name}\.missing",
        ),
        (
            lambda client: SchemasApi(client).update_schema(
                f"{name}.s2", UpdateSchema(new_name="taken")
            ),
            BadRequestException,
            "SCHEMA_ALREADY_EXISTS",
        ),
        (
            lambda client: SchemasApi(client).update_schema(
                f"{name}.s2", UpdateSchema(new_name="a.b")
            ),
            BadRequestException,
            "Name cannot contain a period",
        ),
        (
            lambda client: CatalogsApi(client).update_catalog(
                f"{name}_missing", UpdateCatalog(comment="x")
            ),
            NotFoundException,
            f"Catalog not found: {name}_missing",
        ),
    ]
    for action, error, why in failures:
        with pytest.raises(error, match=why):
            run_sdk(unity, action)


def test_sdk_sees_a_renamed_lance_table_as_it_was(
    unity: UnityStandIn, ns: UnityNamespace, schema: list[str], tmp_path: Path
) -> None:
    location = str(tmp_path / "renamed")
    write_lance(location)
    ns.register_table(RegisterTableRequest(id=[*schema, "before"], location=location))
    ns.rename_table(RenameTableRequest(id=[*schema, "before"], new_table_name="after"))

    async def read(client: ApiClient) -> Any:
        return await TablesApi(client).get_table(".".join([*schema, "after"]))

    table = run_sdk(unity, read)
    assert (table.name, table.storage_location) == ("after", location)
    assert table.properties == {"table_type": "lance"}
    assert [(column.name, column.type_name) for column in table.columns] == [
        ("id", ColumnTypeName.LONG)
    ]
    with pytest.raises(NotFoundException, match=r"Table not found: .*\.sch\.before"):
        run_sdk(unity, lambda client: TablesApi(client).get_table(".".join([*schema, "before"])))


# Namespaces


def test_catalog_and_schema_listing_follow_server_pages(
    unity: UnityStandIn, ns: UnityNamespace
) -> None:
    prefix = f"p{uuid.uuid4().hex[:6]}"
    names = [f"{prefix}_{index}" for index in range(5)]
    for name in names:
        run_sdk(
            unity,
            lambda client, name=name: CatalogsApi(client).create_catalog(CreateCatalog(name=name)),
        )
        ns.create_namespace(CreateNamespaceRequest(id=[names[0], name]))
    unity.control.reset()
    listed = ns.list_namespaces(ListNamespacesRequest(id=[])).namespaces
    assert [name for name in listed if name.startswith(prefix)] == names
    assert len(unity.control.requests_to("/catalogs", "GET")) >= 2  # 3 a page at most
    assert ns.list_namespaces(ListNamespacesRequest(id=[names[0]])).namespaces == names

    seen, token = [], None
    while True:
        page = ns.list_namespaces(ListNamespacesRequest(id=[names[0]], limit=2, page_token=token))
        seen += page.namespaces
        token = page.page_token
        if not token:
            break
    assert seen == names
    schema_listings = unity.control.requests_to("/schemas", "GET")
    assert all(entry.query["catalog_name"] == names[0] for entry in schema_listings)


def test_schema_lifecycle(ns: UnityNamespace, catalog: str) -> None:
    created = ns.create_namespace(CreateNamespaceRequest(id=[catalog, "s1"], properties={"a": "1"}))
    assert created.properties == {"a": "1"}
    assert ns.list_namespaces(ListNamespacesRequest(id=[catalog])).namespaces == ["s1"]
    assert ns.list_namespaces(ListNamespacesRequest(id=[catalog, "s1"])).namespaces == []
    assert ns.describe_namespace(DescribeNamespaceRequest(id=[catalog, "s1"])).properties == {
        "a": "1"
    }
    assert ns.describe_namespace(DescribeNamespaceRequest(id=[catalog])).properties == {}
    ns.namespace_exists(NamespaceExistsRequest(id=[catalog, "s1"]))
    ns.namespace_exists(NamespaceExistsRequest(id=[catalog]))
    ns.namespace_exists(NamespaceExistsRequest(id=[]))  # the root always exists
    ns.drop_namespace(DropNamespaceRequest(id=[catalog, "s1"]))
    with pytest.raises(NamespaceNotFoundError, match=r"404: NOT_FOUND: Schema not found: .*\.s1"):
        ns.namespace_exists(NamespaceExistsRequest(id=[catalog, "s1"]))
    with pytest.raises(NamespaceNotFoundError, match=r"404: NOT_FOUND: Schema not found: .*\.s1"):
        ns.drop_namespace(DropNamespaceRequest(id=[catalog, "s1"]))
    ns.drop_namespace(DropNamespaceRequest(id=[catalog, "s1"], mode="Skip"))


@pytest.mark.parametrize("legacy", [False, True])
def test_create_schema_modes(
    unity: UnityStandIn, ns: UnityNamespace, schema: list[str], legacy: bool
) -> None:
    unity.state.legacy_already_exists = legacy  # 409 ALREADY_EXISTS or 400 SCHEMA_ALREADY_EXISTS
    with pytest.raises(NamespaceAlreadyExistsError, match="Schema already exists"):
        ns.create_namespace(CreateNamespaceRequest(id=schema))
    kept = ns.create_namespace(
        CreateNamespaceRequest(id=schema, mode="ExistOk", properties={"b": "2"})
    )
    assert kept.properties == {}
    replaced = ns.create_namespace(
        CreateNamespaceRequest(id=schema, mode="overwrite", properties={"b": "2"})
    )
    assert replaced.properties == {"b": "2"}


def test_missing_catalogs_and_schemas(ns: UnityNamespace, catalog: str) -> None:
    with pytest.raises(NamespaceNotFoundError, match="Catalog not found: no_such_catalog"):
        ns.create_namespace(CreateNamespaceRequest(id=["no_such_catalog", "s"]))
    with pytest.raises(NamespaceNotFoundError, match="Catalog not found: no_such_catalog"):
        ns.list_namespaces(ListNamespacesRequest(id=["no_such_catalog"]))
    with pytest.raises(NamespaceNotFoundError, match="Catalog not found: no_such_catalog"):
        ns.describe_namespace(DescribeNamespaceRequest(id=["no_such_catalog"]))
    with pytest.raises(NamespaceNotFoundError, match=rf"Schema not found: {catalog}\.missing"):
        ns.describe_namespace(DescribeNamespaceRequest(id=[catalog, "missing"]))
    with pytest.raises(NamespaceNotFoundError, match=rf"Schema not found: {catalog}\.missing"):
        ns.list_tables(ListTablesRequest(id=[catalog, "missing"]))
    with pytest.raises(NamespaceNotFoundError, match=rf"Schema not found: {catalog}\.missing"):
        ns.list_namespaces(ListNamespacesRequest(id=[catalog, "missing"]))


def test_drop_schema_is_restrict_only(ns: UnityNamespace, schema: list[str]) -> None:
    ns.declare_table(DeclareTableRequest(id=[*schema, "t"]))
    with pytest.raises(NamespaceNotEmptyError, match="Cannot delete schema with tables"):
        ns.drop_namespace(DropNamespaceRequest(id=schema))
    with pytest.raises(UnsupportedOperationError, match="only drops schemas RESTRICT"):
        ns.drop_namespace(DropNamespaceRequest(id=schema, behavior="CASCADE"))
    ns.describe_table(DescribeTableRequest(id=[*schema, "t"]))  # still there
    ns.deregister_table(DeregisterTableRequest(id=[*schema, "t"]))
    ns.drop_namespace(DropNamespaceRequest(id=schema))


UNITY_NAMES = "Unity names use only letters, digits"
SCHEMA_ID = "a Unity namespace identifier is catalog or catalog.schema, got"


@pytest.mark.parametrize(
    ("identifier", "why"),
    [(["c"], SCHEMA_ID), (["c", "s", "x"], SCHEMA_ID), (["c", "a.b"], UNITY_NAMES),
     (["c", "a b"], UNITY_NAMES), (["c", "a/b"], "must not contain '/'"),
     (["c", ""], "must not be empty"), (["c", "é"], UNITY_NAMES)],
)
def test_bad_schema_identifiers_are_invalid_input(
    ns: UnityNamespace, identifier: list[str], why: str
) -> None:
    # Names are validated by the guard the server puts every loaded backend behind.
    ns = GuardedNamespace(ns)
    with pytest.raises(InvalidInputError, match=why):
        ns.create_namespace(CreateNamespaceRequest(id=identifier))
    with pytest.raises(InvalidInputError, match=why):
        ns.drop_namespace(DropNamespaceRequest(id=identifier))


TABLE_ID = "a Unity table identifier is catalog.schema.table, got"


@pytest.mark.parametrize(
    ("identifier", "why"),
    [(["c", "s"], TABLE_ID), (["c", "s", "t", "u"], TABLE_ID), (["c", "s", "t.u"], UNITY_NAMES),
     (["c", "s", ".."], r"must not be '\.\.'"), ([], "table identifier must not be empty")],
)
def test_bad_table_identifiers_are_invalid_input(
    ns: UnityNamespace, identifier: list[str], why: str
) -> None:
    # Names are validated by the guard the server puts every loaded backend behind.
    ns = GuardedNamespace(ns)
    with pytest.raises(InvalidInputError, match=why):
        ns.declare_table(DeclareTableRequest(id=identifier))
    with pytest.raises(InvalidInputError, match=why):
        ns.describe_table(DescribeTableRequest(id=identifier))


# Tables


def test_a_declared_table_is_an_external_lance_entry_without_columns(
    unity: UnityStandIn, make_namespace: Factory, schema: list[str], tmp_path: Path
) -> None:
    """How Unity stores a declared table and what the backend adds to it (the operations
    themselves: tests/contract/test_registration.py)."""
    ns = make_namespace(**{"storage.access_key_id": "key"})
    declared = ns.declare_table(DeclareTableRequest(id=[*schema, "t"], properties={"o": "me"}))
    assert declared.location == f"{tmp_path}/root/{schema[0]}/{schema[1]}/t"
    assert declared.storage_options == {"access_key_id": "key"}
    assert declared.properties == {"o": "me", "table_type": "lance"}
    stored = unity.state.tables[(schema[0], schema[1], "t")]
    assert stored["table_type"] == "EXTERNAL" and stored["data_source_format"] == "TEXT"
    assert stored["columns"] == []  # nothing written yet, so no columns
    described = ns.describe_table(DescribeTableRequest(id=[*schema, "t"]))
    assert described.storage_options == {"access_key_id": "key"}
    assert described.properties == {"o": "me", "table_type": "lance"}


def test_declare_at_a_location_with_data_gets_columns(
    unity: UnityStandIn, ns: UnityNamespace, schema: list[str], tmp_path: Path
) -> None:
    location = str(tmp_path / "existing")
    write_lance(location)
    declared = ns.declare_table(DeclareTableRequest(id=[*schema, "t"], location=location))
    assert declared.location == location
    columns = unity.state.tables[(schema[0], schema[1], "t")]["columns"]
    assert [(column["name"], column["type_name"]) for column in columns] == [("id", "LONG")]


def test_register_table(
    unity: UnityStandIn, ns: UnityNamespace, schema: list[str], tmp_path: Path
) -> None:
    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    write_lance(first)
    write_lance(second, pa.table({"name": ["x"]}))
    registered = ns.register_table(
        RegisterTableRequest(id=[*schema, "r"], location=first, properties={"k": "v"})
    )
    assert registered.location == first
    assert registered.properties == {"k": "v", "table_type": "lance"}
    with pytest.raises(TableAlreadyExistsError, match=r"Table already exists: .*\.sch\.r"):
        ns.register_table(RegisterTableRequest(id=[*schema, "r"], location=first))
    ns.register_table(RegisterTableRequest(id=[*schema, "r"], location=second, mode="Overwrite"))
    assert ns.describe_table(DescribeTableRequest(id=[*schema, "r"])).location == second
    columns = unity.state.tables[(schema[0], schema[1], "r")]["columns"]
    assert [column["name"] for column in columns] == ["name"]
    with pytest.raises(
        InvalidInputError, match="no Lance table at " + re.escape(str(tmp_path / "none"))
    ):
        ns.register_table(RegisterTableRequest(id=[*schema, "x"], location=str(tmp_path / "none")))
    assert (schema[0], schema[1], "x") not in unity.state.tables


@pytest.mark.parametrize("legacy", [False, True])
def test_table_errors(
    unity: UnityStandIn, ns: UnityNamespace, schema: list[str], legacy: bool
) -> None:
    unity.state.legacy_already_exists = legacy
    ns.declare_table(DeclareTableRequest(id=[*schema, "t"]))
    with pytest.raises(TableAlreadyExistsError, match=r"Table already exists: .*\.sch\.t"):
        ns.declare_table(DeclareTableRequest(id=[*schema, "t"]))
    with pytest.raises(NamespaceNotFoundError, match=r"Schema not found: .*\.missing"):
        ns.declare_table(DeclareTableRequest(id=[schema[0], "missing", "t"]))
    with pytest.raises(TableNotFoundError, match=r"Table not found: .*\.sch\.missing"):
        ns.describe_table(DescribeTableRequest(id=[*schema, "missing"]))
    with pytest.raises(TableNotFoundError, match=r"Table not found: .*\.sch\.missing"):
        ns.deregister_table(DeregisterTableRequest(id=[*schema, "missing"]))


def test_lance_tables_need_external_type_and_property(
    unity: UnityStandIn, ns: UnityNamespace, schema: list[str], tmp_path: Path
) -> None:
    def create(name: str, table_type: TableType, properties: dict[str, str]) -> Callable:
        request = CreateTable(
            name=name,
            catalog_name=schema[0],
            schema_name=schema[1],
            table_type=table_type,
            data_source_format=DataSourceFormat.TEXT,
            columns=[],
            storage_location=str(tmp_path / name),
            properties=properties,
        )
        return lambda client: TablesApi(client).create_table(request)

    run_sdk(unity, create("managed", TableType.MANAGED, {"table_type": "lance"}))
    run_sdk(unity, create("upper", TableType.EXTERNAL, {"table_type": "LANCE"}))
    run_sdk(unity, create("plain", TableType.EXTERNAL, {}))
    assert ns.list_tables(ListTablesRequest(id=schema)).tables == ["upper"]
    with pytest.raises(InvalidInputError, match=r"sch\.managed is not a Lance table"):
        ns.describe_table(DescribeTableRequest(id=[*schema, "managed"]))


def test_list_tables_paging(unity: UnityStandIn, ns: UnityNamespace, schema: list[str]) -> None:
    for index in range(7):
        ns.declare_table(DeclareTableRequest(id=[*schema, f"t{index}"]))
    unity.control.reset()
    assert ns.list_tables(ListTablesRequest(id=schema)).tables == [
        f"t{index}" for index in range(7)
    ]
    tokens = [
        entry.query.get("page_token") for entry in unity.control.requests_to("/tables", "GET")
    ]
    assert tokens == [None, "t2", "t5"]  # the fixture returns 3 a page
    first = ns.list_tables(ListTablesRequest(id=schema, limit=4))
    assert first.tables == ["t0", "t1", "t2", "t3"] and first.page_token == "t3"
    rest = ns.list_tables(ListTablesRequest(id=schema, limit=4, page_token="t3"))
    assert rest.tables == ["t4", "t5", "t6"] and rest.page_token is None



# Arrow schema -> Unity columns


def test_unity_columns_cover_arrow_types() -> None:
    schema = pa.schema(
        [
            pa.field("flag", pa.bool_(), nullable=False),
            pa.field("tiny", pa.int8()),
            pa.field("small", pa.int16()),
            pa.field("medium", pa.int32()),
            pa.field("big", pa.int64()),
            pa.field("huge", pa.uint64()),
            pa.field("half", pa.float16()),
            pa.field("ratio", pa.float64()),
            pa.field("price", pa.decimal128(10, 2)),
            pa.field("text", pa.large_string()),
            pa.field("blob", pa.binary()),
            pa.field("day", pa.date32()),
            pa.field("at", pa.timestamp("us", tz="UTC")),
            pa.field("local", pa.timestamp("ms")),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("attrs", pa.map_(pa.string(), pa.int32())),
            pa.field("point", pa.struct([("x", pa.float32()), ("y", pa.float32())])),
            pa.field("category", pa.dictionary(pa.int32(), pa.string())),
            pa.field("clock", pa.time64("us")),
            pa.field("key", pa.uuid()),
        ]
    )
    columns = {column["name"]: column for column in unity_columns(schema)}
    expected = {
        "flag": ("BOOLEAN", "boolean", "boolean"),
        "tiny": ("BYTE", "tinyint", "byte"),
        "small": ("SHORT", "smallint", "short"),
        "medium": ("INT", "int", "integer"),
        "big": ("LONG", "bigint", "long"),
        "huge": ("DECIMAL", "decimal(20,0)", "decimal(20,0)"),
        "half": ("FLOAT", "float", "float"),
        "ratio": ("DOUBLE", "double", "double"),
        "price": ("DECIMAL", "decimal(10,2)", "decimal(10,2)"),
        "text": ("STRING", "string", "string"),
        "blob": ("BINARY", "binary", "binary"),
        "day": ("DATE", "date", "date"),
        "at": ("TIMESTAMP", "timestamp", "timestamp"),
        "local": ("TIMESTAMP_NTZ", "timestamp_ntz", "timestamp_ntz"),
        "tags": (
            "ARRAY",
            "array<string>",
            {"type": "array", "elementType": "string", "containsNull": True},
        ),
        "attrs": (
            "MAP",
            "map<string,int>",
            {"type": "map", "keyType": "string", "valueType": "integer", "valueContainsNull": True},
        ),
        "category": ("STRING", "string", "string"),
        "clock": ("USER_DEFINED_TYPE", "time64[us]", "time64[us]"),
        "key": ("BINARY", "binary", "binary"),
    }
    for name, (type_name, type_text, spark_type) in expected.items():
        column = columns[name]
        assert (column["type_name"], column["type_text"]) == (type_name, type_text), name
        assert json.loads(column["type_json"])["type"] == spark_type, name
        ColumnTypeName(column["type_name"])  # a value the Unity API accepts
    assert columns["point"]["type_text"] == "struct<x:float,y:float>"
    assert json.loads(columns["point"]["type_json"]) == {
        "name": "point",
        "type": {
            "type": "struct",
            "fields": [
                {"name": "x", "type": "float", "nullable": True, "metadata": {}},
                {"name": "y", "type": "float", "nullable": True, "metadata": {}},
            ],
        },
        "nullable": True,
        "metadata": {},
    }
    assert (columns["price"]["type_precision"], columns["price"]["type_scale"]) == (10, 2)
    assert columns["flag"]["nullable"] is False and columns["tiny"]["nullable"] is True
    assert [column["position"] for column in unity_columns(schema)] == list(range(len(schema)))
