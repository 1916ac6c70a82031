"""RenameTable, AlterNamespace, AlterTable and ListAllTables of the iceberg backend, against
Apache Iceberg's REST reference server over loopback HTTP; ListAllTables over several warehouses
(each its own prefix, which the reference server's single catalog cannot have) on the stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    DeclareTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    InvalidInputError,
    ListTablesRequest,
    NamespaceNotFoundError,
    RegisterTableRequest,
    RenameTableRequest,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from backends.core.extensions import AlterNamespaceRequest, AlterTableRequest
from backends.guard import GuardedNamespace
from backends.iceberg import IcebergNamespace
from tests.support.common import unique
from tests.support.iceberg_rest_server import IcebergRestServer
from tests.support.iceberg_stand_in import running_iceberg_stand_in


@pytest.fixture
def ns(iceberg_rest_server: IcebergRestServer, tmp_path: Path) -> Iterator[IcebergNamespace]:
    namespace = IcebergNamespace(endpoint=iceberg_rest_server.url, root=str(tmp_path / "root"))
    yield namespace
    namespace.close()


def new_namespace(ns: IcebergNamespace, properties: dict[str, str] | None = None) -> list[str]:
    identifier = ["wh", unique("db")]
    ns.create_namespace(CreateNamespaceRequest(id=identifier, properties=properties))
    return identifier


def register_with_data(ns: IcebergNamespace, table_id: list[str], location: Path) -> None:
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), str(location))
    ns.register_table(RegisterTableRequest(id=table_id, location=str(location)))


def set_by_callers(properties: dict[str, str]) -> dict[str, str]:
    """A namespace's properties less `location`, which the reference server's JdbcCatalog adds
    to every namespace (its default location in the warehouse) and the backend passes on."""
    assert properties["location"].startswith("file:/")
    return {key: value for key, value in properties.items() if key != "location"}


def tables_of(ns: IcebergNamespace, namespace: list[str], **options: object) -> list[str]:
    return ns.list_tables(ListTablesRequest(id=namespace, **options)).tables


# RenameTable


def test_rename_keeps_the_location_and_the_data(ns: IcebergNamespace, tmp_path: Path) -> None:
    db = new_namespace(ns)
    location = tmp_path / "data" / "old"
    register_with_data(ns, [*db, "old"], location)

    ns.rename_table(RenameTableRequest(id=[*db, "old"], new_table_name="new"))

    described = ns.describe_table(DescribeTableRequest(id=[*db, "new"]))
    assert described.location == str(location)
    assert described.properties["table_type"] == "lance"
    assert lance.dataset(described.location).to_table()["id"].to_pylist() == [1, 2, 3]
    with pytest.raises(TableNotFoundError, match=r"Table does not exist: db_\w+\.old"):
        ns.describe_table(DescribeTableRequest(id=[*db, "old"]))
    assert tables_of(ns, db) == ["new"]


def test_rename_across_namespaces(ns: IcebergNamespace, tmp_path: Path) -> None:
    source, target = new_namespace(ns), new_namespace(ns)
    ns.create_namespace(CreateNamespaceRequest(id=[*target, "inner"]))
    location = tmp_path / "moved"
    register_with_data(ns, [*source, "t"], location)

    request = RenameTableRequest(
        id=[*source, "t"], new_table_name="moved", new_namespace_id=[*target, "inner"]
    )
    ns.rename_table(request)

    assert tables_of(ns, source) == []
    assert tables_of(ns, [*target, "inner"]) == ["moved"]
    moved = ns.describe_table(DescribeTableRequest(id=[*target, "inner", "moved"]))
    assert moved.location == str(location)
    assert lance.dataset(moved.location).count_rows() == 3


def test_rename_errors_change_nothing(
    iceberg_rest_server: IcebergRestServer, ns: IcebergNamespace, tmp_path: Path
) -> None:
    db = new_namespace(ns)
    ns.declare_table(DeclareTableRequest(id=[*db, "a"]))
    ns.declare_table(DeclareTableRequest(id=[*db, "b"]))

    def rename(**fields: object) -> None:  # as the server calls it, behind the guard
        request = RenameTableRequest(**{"id": [*db, "a"], "new_table_name": "c", **fields})
        GuardedNamespace(ns).rename_table(request)

    with pytest.raises(TableNotFoundError, match=rf"Table does not exist: {db[1]}\.missing"):
        rename(id=[*db, "missing"])
    with pytest.raises(TableAlreadyExistsError, match=rf"Table already exists: {db[1]}\.b"):
        rename(new_table_name="b")
    with pytest.raises(TableAlreadyExistsError, match=rf"table {db[1]}\.a exists"):
        rename(new_table_name="a")
    with pytest.raises(NamespaceNotFoundError, match="Namespace does not exist: no_such_namespace"):
        rename(new_namespace_id=["wh", "no_such_namespace"])
    for bad_name, why in (("", "new_table_name must not be empty"),
                          ("x/y", "new_table_name 'x/y' must not contain '/'"),
                          ("..", r"new_table_name must not be '\.\.'"),
                          ("tab\x01", "must not contain control or format characters")):
        with pytest.raises(InvalidInputError, match=why):
            rename(new_table_name=bad_name)
    with pytest.raises(
        InvalidInputError, match=r"table identifier is \[warehouse, namespace\.\.\., table\]"
    ):
        rename(new_namespace_id=["wh"])  # a warehouse holds no tables
    with pytest.raises(UnsupportedOperationError, match=r"rename_table.*iceberg"):
        rename(new_namespace_id=["other", "db"])

    catalog = RestCatalog("official", uri=iceberg_rest_server.url, warehouse="wh")
    catalog.create_table((db[1], "plain"), Schema(NestedField(1, "n", LongType())))
    with pytest.raises(InvalidInputError, match=rf"table wh\.{db[1]}\.plain is not a Lance table"):
        rename(id=[*db, "plain"])
    assert tables_of(ns, db) == ["a", "b"]
    assert catalog.table_exists((db[1], "plain"))


# AlterNamespace


def test_alter_namespace_sets_and_unsets(ns: IcebergNamespace) -> None:
    db = new_namespace(ns, {"owner": "ml", "tier": "gold", "keep": "1"})

    altered = ns.alter_namespace(
        AlterNamespaceRequest(
            id=db, set_properties={"tier": "silver", "new": "x"}, unset_properties=["owner"]
        )
    )

    expected = {"tier": "silver", "new": "x", "keep": "1"}
    assert set_by_callers(altered.properties) == expected
    described = ns.describe_namespace(DescribeNamespaceRequest(id=db)).properties
    assert set_by_callers(described) == expected
    emptied = ns.alter_namespace(
        AlterNamespaceRequest(id=db, unset_properties=["tier", "new", "keep", "never_set"])
    )
    assert set_by_callers(emptied.properties) == {}
    described = ns.describe_namespace(DescribeNamespaceRequest(id=db)).properties
    assert set_by_callers(described) == {}


def test_alter_namespace_errors_change_nothing(ns: IcebergNamespace) -> None:
    db = new_namespace(ns, {"a": "1"})
    with pytest.raises(InvalidInputError, match="both set and unset"):
        ns.alter_namespace(
            AlterNamespaceRequest(id=db, set_properties={"a": "2"}, unset_properties=["a"])
        )
    with pytest.raises(InvalidInputError, match="property keys must be non-empty strings, got ''"):
        ns.alter_namespace(AlterNamespaceRequest(id=db, set_properties={"": "x"}))
    with pytest.raises(NamespaceNotFoundError, match="Namespace does not exist: missing"):
        ns.alter_namespace(AlterNamespaceRequest(id=["wh", "missing"], set_properties={"a": "1"}))
    with pytest.raises(UnsupportedOperationError, match=r"alter_namespace.*iceberg"):
        ns.alter_namespace(AlterNamespaceRequest(id=["wh"], set_properties={"a": "1"}))
    described = ns.describe_namespace(DescribeNamespaceRequest(id=db)).properties
    assert set_by_callers(described) == {"a": "1"}


# AlterTable


def test_alter_table_sets_and_unsets(ns: IcebergNamespace) -> None:
    db = new_namespace(ns)
    table_id = [*db, "t"]
    ns.declare_table(DeclareTableRequest(id=table_id, properties={"owner": "ml", "stale": "y"}))

    altered = ns.alter_table(
        AlterTableRequest(id=table_id, set_properties={"owner": "ops"}, unset_properties=["stale"])
    )

    described = ns.describe_table(DescribeTableRequest(id=table_id)).properties
    assert altered.properties == described
    assert described["owner"] == "ops" and described["table_type"] == "lance"
    assert "stale" not in described
    assert tables_of(ns, db) == ["t"]


def test_alter_table_never_touches_the_lance_marker(ns: IcebergNamespace) -> None:
    db = new_namespace(ns)
    table_id = [*db, "t"]
    ns.declare_table(DeclareTableRequest(id=table_id, properties={"owner": "ml"}))
    before = ns.describe_table(DescribeTableRequest(id=table_id)).properties

    for change in (
        {"unset_properties": ["table_type"]},
        {"set_properties": {"table_type": "iceberg"}},
        {"set_properties": {"owner": "ops", "TABLE_TYPE": "lance"}},
    ):
        with pytest.raises(InvalidInputError, match="Lance table"):
            ns.alter_table(AlterTableRequest(id=table_id, **change))

    assert ns.describe_table(DescribeTableRequest(id=table_id)).properties == before
    assert tables_of(ns, db) == ["t"]


def test_alter_table_errors(iceberg_rest_server: IcebergRestServer, ns: IcebergNamespace) -> None:
    db = new_namespace(ns)
    with pytest.raises(TableNotFoundError, match=rf"Table does not exist: {db[1]}\.missing"):
        ns.alter_table(AlterTableRequest(id=[*db, "missing"], set_properties={"a": "1"}))
    catalog = RestCatalog("official", uri=iceberg_rest_server.url, warehouse="wh")
    catalog.create_table((db[1], "plain"), Schema(NestedField(1, "n", LongType())))
    with pytest.raises(InvalidInputError, match=rf"table wh\.{db[1]}\.plain is not a Lance table"):
        ns.alter_table(AlterTableRequest(id=[*db, "plain"], set_properties={"a": "1"}))
    assert "a" not in catalog.load_table((db[1], "plain")).properties


# ListTables / ListAllTables


def test_list_tables_without_declared_tables(ns: IcebergNamespace, tmp_path: Path) -> None:
    db = new_namespace(ns)
    ns.declare_table(DeclareTableRequest(id=[*db, "declared"]))
    register_with_data(ns, [*db, "with_data"], tmp_path / "with_data")

    assert tables_of(ns, db) == ["declared", "with_data"]
    assert tables_of(ns, db, include_declared=True) == ["declared", "with_data"]
    assert tables_of(ns, db, include_declared=False) == ["with_data"]


def test_list_all_tables_pages_over_every_namespace(tmp_path: Path) -> None:
    (tmp_path / "catalog").mkdir()
    with running_iceberg_stand_in(tmp_path / "catalog", warehouses=("w1", "w2")) as fixture:
        ns = IcebergNamespace(
            endpoint=fixture.url, root=str(tmp_path / "root"), warehouses="w1, w2"
        )
        for namespace in (["w1", "a"], ["w1", "a", "nested"], ["w1", "b"], ["w2", "c"]):
            ns.create_namespace(CreateNamespaceRequest(id=namespace))
        for table_id in (["w1", "a", "t1"], ["w1", "a", "nested", "t2"], ["w1", "b", "t3"]):
            register_with_data(ns, table_id, tmp_path / "_".join(table_id))
        ns.declare_table(DeclareTableRequest(id=["w2", "c", "declared"]))
        catalog = RestCatalog("official", uri=fixture.url, warehouse="w1")
        catalog.create_table(("b", "plain"), Schema(NestedField(1, "n", LongType())))

        pages, token = [], None
        while True:
            page = ns.list_all_tables(ListTablesRequest(limit=2, page_token=token))
            pages.append(page.tables)
            token = page.page_token
            if not token:
                break
        assert pages == [["w1$a$nested$t2", "w1$a$t1"], ["w1$b$t3", "w2$c$declared"]]

        with_data = ns.list_all_tables(ListTablesRequest(include_declared=False)).tables
        assert with_data == ["w1$a$nested$t2", "w1$a$t1", "w1$b$t3"]
        scoped = ns.list_all_tables(ListTablesRequest(id=["w1", "a"])).tables
        assert scoped == ["w1$a$nested$t2", "w1$a$t1"]
        with pytest.raises(NamespaceNotFoundError, match="Namespace missing does not exist"):
            ns.list_all_tables(ListTablesRequest(id=["w1", "missing"]))
        ns.close()

        unconfigured = IcebergNamespace(endpoint=fixture.url)
        with pytest.raises(UnsupportedOperationError, match=r"list_all_tables.*warehouses"):
            unconfigured.list_all_tables(ListTablesRequest())
        assert unconfigured.list_all_tables(ListTablesRequest(id=["w2"])).tables == [
            "w2$c$declared"
        ]
        unconfigured.close()
