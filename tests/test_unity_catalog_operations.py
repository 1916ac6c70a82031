"""RenameTable, AlterNamespace, AlterTable and ListAllTables of the unity backend, against the
Unity Catalog protocol fixture over loopback HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
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
    PermissionDeniedError,
    RegisterTableRequest,
    RenameTableRequest,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from backends.core.extensions import AlterNamespaceRequest, AlterTableRequest, ListOperationsRequest
from backends.guard import GuardedNamespace
from backends.unity import UnityNamespace
from tests.support.common import unique
from tests.support.unity_stand_in import API, UnityStandIn, running_unity_stand_in


@pytest.fixture
def ns(unity: UnityStandIn, tmp_path: Path) -> Iterator[UnityNamespace]:
    unity.control.reset()
    namespace = UnityNamespace(endpoint=unity.url, root=str(tmp_path / "root"))
    yield namespace
    namespace.close()


def new_catalog(url: str, properties: dict[str, str] | None = None) -> str:
    name = unique("cat")
    body = {"name": name, "properties": properties or {}}
    httpx.post(f"{url}{API}/catalogs", json=body).raise_for_status()
    return name


def new_schema(ns: UnityNamespace, url: str, properties: dict[str, str] | None = None) -> list[str]:
    schema = [new_catalog(url), "sch"]
    ns.create_namespace(CreateNamespaceRequest(id=schema, properties=properties))
    return schema


def register_with_data(ns: UnityNamespace, table_id: list[str], location: Path) -> None:
    lance.write_dataset(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}), str(location))
    ns.register_table(RegisterTableRequest(id=table_id, location=str(location)))


def tables_of(ns: UnityNamespace, schema: list[str], **options: object) -> list[str]:
    return ns.list_tables(ListTablesRequest(id=schema, **options)).tables


# RenameTable


def test_rename_keeps_the_entry_and_the_data(
    unity: UnityStandIn, ns: UnityNamespace, tmp_path: Path
) -> None:
    schema = new_schema(ns, unity.url)
    location = tmp_path / "old"
    register_with_data(ns, [*schema, "old"], location)
    before = unity.state.tables[(*schema, "old")]

    ns.rename_table(RenameTableRequest(id=[*schema, "old"], new_table_name="new"))

    described = ns.describe_table(DescribeTableRequest(id=[*schema, "new"]))
    assert described.location == str(location)
    assert described.properties == {"table_type": "lance"}
    assert lance.dataset(described.location).to_table()["name"].to_pylist() == ["a", "b", "c"]
    with pytest.raises(TableNotFoundError, match=r"Table not found: .*\.sch\.old"):
        ns.describe_table(DescribeTableRequest(id=[*schema, "old"]))
    assert tables_of(ns, schema) == ["new"]
    after = unity.state.tables[(*schema, "new")]
    kept = ("columns", "data_source_format", "table_type", "storage_location", "properties")
    assert {key: after[key] for key in kept} == {key: before[key] for key in kept}


def test_rename_across_schemas_and_catalogs(
    unity: UnityStandIn, ns: UnityNamespace, tmp_path: Path
) -> None:
    source = new_schema(ns, unity.url)
    sibling = [source[0], "sibling"]
    ns.create_namespace(CreateNamespaceRequest(id=sibling))
    elsewhere = new_schema(ns, unity.url)
    location = tmp_path / "t"
    register_with_data(ns, [*source, "t"], location)

    ns.rename_table(
        RenameTableRequest(id=[*source, "t"], new_table_name="t", new_namespace_id=sibling)
    )
    assert (tables_of(ns, source), tables_of(ns, sibling)) == ([], ["t"])
    ns.rename_table(
        RenameTableRequest(id=[*sibling, "t"], new_table_name="far", new_namespace_id=elsewhere)
    )
    assert (tables_of(ns, sibling), tables_of(ns, elsewhere)) == ([], ["far"])
    moved = ns.describe_table(DescribeTableRequest(id=[*elsewhere, "far"]))
    assert moved.location == str(location)
    assert lance.dataset(moved.location).count_rows() == 3


def test_rename_errors_change_nothing(
    unity: UnityStandIn, ns: UnityNamespace, tmp_path: Path
) -> None:
    schema = new_schema(ns, unity.url)
    ns.declare_table(DeclareTableRequest(id=[*schema, "a"]))
    ns.declare_table(DeclareTableRequest(id=[*schema, "b"]))
    plain = {
        "name": "plain",
        "catalog_name": schema[0],
        "schema_name": schema[1],
        "table_type": "EXTERNAL",
        "data_source_format": "DELTA",
        "columns": [],
        "storage_location": str(tmp_path / "delta"),
    }
    httpx.post(f"{unity.url}{API}/tables", json=plain).raise_for_status()

    def rename(**fields: object) -> None:
        request = {"id": [*schema, "a"], "new_table_name": "c", **fields}
        GuardedNamespace(ns).rename_table(RenameTableRequest(**request))  # as the server does

    with pytest.raises(TableNotFoundError, match=r"Table not found: .*\.sch\.missing"):
        rename(id=[*schema, "missing"])
    for taken, why in (("b", r"Table already exists: .*\.sch\.b"),
                       ("a", r"table .*\.sch\.a already exists"),  # the table itself
                       ("plain", r"Table already exists: .*\.sch\.plain")):
        with pytest.raises(TableAlreadyExistsError, match=why):
            rename(new_table_name=taken)
    with pytest.raises(NamespaceNotFoundError, match=r"Schema not found: .*\.no_such_schema"):
        rename(new_namespace_id=[schema[0], "no_such_schema"])
    with pytest.raises(NamespaceNotFoundError, match="Catalog not found: no_such_catalog"):
        rename(new_namespace_id=["no_such_catalog", "sch"])
    for bad_name, why in (("", "new_table_name must not be empty"),
                          ("a.b", "Unity names use only letters, digits"),
                          ("with space", "Unity names use only letters, digits"),
                          ("x/y", "new_table_name 'x/y' must not contain '/'")):
        with pytest.raises(InvalidInputError, match=why):
            rename(new_table_name=bad_name)
    with pytest.raises(
        InvalidInputError, match=r"catalog or catalog\.schema, got \['cat_[0-9a-f]+'\]"
    ):
        rename(new_namespace_id=[schema[0]])
    with pytest.raises(InvalidInputError, match=r"sch\.plain is not a Lance table"):
        rename(id=[*schema, "plain"])  # not a Lance table

    assert tables_of(ns, schema) == ["a", "b"]
    assert sorted(key[2] for key in unity.state.tables if key[:2] == tuple(schema)) == [
        "a",
        "b",
        "plain",
    ]


def test_rename_undoes_the_new_entry_when_the_old_cannot_go(
    unity: UnityStandIn, ns: UnityNamespace
) -> None:
    schema = new_schema(ns, unity.url)
    ns.declare_table(DeclareTableRequest(id=[*schema, "old"], properties={"k": "v"}))
    unity.control.fail_next(1, 403, method="DELETE", path=".".join([*schema, "old"]))

    with pytest.raises(PermissionDeniedError, match="403: InjectedFault"):
        ns.rename_table(RenameTableRequest(id=[*schema, "old"], new_table_name="new"))

    assert ns.describe_table(DescribeTableRequest(id=[*schema, "old"])).properties["k"] == "v"
    with pytest.raises(TableNotFoundError, match=r"Table not found: .*\.sch\.new"):
        ns.describe_table(DescribeTableRequest(id=[*schema, "new"]))
    assert tables_of(ns, schema) == ["old"]


# AlterNamespace


def test_alter_schema_sets_and_unsets(unity: UnityStandIn, ns: UnityNamespace) -> None:
    schema = new_schema(ns, unity.url, {"owner": "ml", "tier": "gold", "keep": "1"})

    altered = ns.alter_namespace(
        AlterNamespaceRequest(
            id=schema, set_properties={"tier": "silver", "new": "x"}, unset_properties=["owner"]
        )
    )

    expected = {"tier": "silver", "new": "x", "keep": "1"}
    assert altered.properties == expected
    assert ns.describe_namespace(DescribeNamespaceRequest(id=schema)).properties == expected
    unchanged = ns.alter_namespace(AlterNamespaceRequest(id=schema, unset_properties=["absent"]))
    assert unchanged.properties == expected
    assert len(unity.control.requests_to("/schemas/", "PATCH")) == 1


def test_alter_catalog_sets_and_unsets(unity: UnityStandIn, ns: UnityNamespace) -> None:
    catalog = new_catalog(unity.url, {"a": "1", "b": "2"})
    altered = ns.alter_namespace(
        AlterNamespaceRequest(id=[catalog], set_properties={"c": "3"}, unset_properties=["a"])
    )
    assert altered.properties == {"b": "2", "c": "3"}
    assert (
        ns.describe_namespace(DescribeNamespaceRequest(id=[catalog])).properties
        == altered.properties
    )


def test_alter_namespace_errors_change_nothing(unity: UnityStandIn, ns: UnityNamespace) -> None:
    schema = new_schema(ns, unity.url, {"only": "1"})
    with pytest.raises(UnsupportedOperationError, match=r"alter_namespace.*unity.*every property"):
        ns.alter_namespace(AlterNamespaceRequest(id=schema, unset_properties=["only"]))
    with pytest.raises(InvalidInputError, match="both set and unset"):
        ns.alter_namespace(
            AlterNamespaceRequest(id=schema, set_properties={"a": "1"}, unset_properties=["a"])
        )
    with pytest.raises(NamespaceNotFoundError, match=r"Schema not found: .*\.missing"):
        ns.alter_namespace(
            AlterNamespaceRequest(id=[schema[0], "missing"], set_properties={"a": "1"})
        )
    for bad_id, why in (([], "namespace identifier must not be empty"),
                        ([schema[0], "a.b"], "Unity names use only letters, digits"),
                        ([*schema, "too_deep"], r"catalog or catalog\.schema, got .*'too_deep'")):
        with pytest.raises(InvalidInputError, match=why):
            ns.alter_namespace(AlterNamespaceRequest(id=bad_id, set_properties={"a": "1"}))
    assert ns.describe_namespace(DescribeNamespaceRequest(id=schema)).properties == {"only": "1"}
    assert unity.control.requests_to("/schemas/", "PATCH") == []


# AlterTable


def test_alter_table_is_unsupported(unity: UnityStandIn, ns: UnityNamespace) -> None:
    schema = new_schema(ns, unity.url)
    ns.declare_table(DeclareTableRequest(id=[*schema, "t"], properties={"k": "v"}))
    with pytest.raises(UnsupportedOperationError, match=r"AlterTable.*Unity"):
        ns.alter_table(AlterTableRequest(id=[*schema, "t"], set_properties={"k": "w"}))
    assert "AlterTable" not in ns.list_operations(ListOperationsRequest()).operations
    assert ns.describe_table(DescribeTableRequest(id=[*schema, "t"])).properties["k"] == "v"


# ListTables / ListAllTables


def test_list_tables_without_declared_tables(
    unity: UnityStandIn, ns: UnityNamespace, tmp_path: Path
) -> None:
    schema = new_schema(ns, unity.url)
    ns.declare_table(DeclareTableRequest(id=[*schema, "declared"]))
    register_with_data(ns, [*schema, "with_data"], tmp_path / "with_data")

    assert tables_of(ns, schema) == ["declared", "with_data"]
    assert tables_of(ns, schema, include_declared=True) == ["declared", "with_data"]
    assert tables_of(ns, schema, include_declared=False) == ["with_data"]


def test_list_all_tables_pages_over_every_schema(tmp_path: Path) -> None:
    with running_unity_stand_in() as fixture:
        ns = UnityNamespace(endpoint=fixture.url, root=str(tmp_path / "root"))
        for catalog in ("c1", "c2"):
            httpx.post(f"{fixture.url}{API}/catalogs", json={"name": catalog}).raise_for_status()
        for schema in ("s1", "s2", "s4", "s5"):  # more than the 3 a page the server returns
            ns.create_namespace(CreateNamespaceRequest(id=["c1", schema]))
        ns.create_namespace(CreateNamespaceRequest(id=["c2", "s3"]))
        for table_id in (["c1", "s1", "t1"], ["c1", "s1", "t2"], ["c1", "s2", "t3"]):
            register_with_data(ns, table_id, tmp_path / "_".join(table_id))
        ns.declare_table(DeclareTableRequest(id=["c2", "s3", "declared"]))

        pages, token = [], None
        while True:
            page = ns.list_all_tables(ListTablesRequest(limit=2, page_token=token))
            pages.append(page.tables)
            token = page.page_token
            if not token:
                break
        assert pages == [["c1$s1$t1", "c1$s1$t2"], ["c1$s2$t3", "c2$s3$declared"]]

        with_data = ns.list_all_tables(ListTablesRequest(include_declared=False)).tables
        assert with_data == ["c1$s1$t1", "c1$s1$t2", "c1$s2$t3"]
        assert ns.list_all_tables(ListTablesRequest(id=["c1", "s2"])).tables == ["c1$s2$t3"]
        assert ns.list_all_tables(ListTablesRequest(id=["c2"])).tables == ["c2$s3$declared"]
        with pytest.raises(NamespaceNotFoundError, match="Catalog not found: c9"):
            ns.list_all_tables(ListTablesRequest(id=["c9"]))
        ns.close()
