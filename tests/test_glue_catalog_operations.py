"""RenameTable, AlterNamespace, AlterTable and ListAllTables of the Glue backend, against moto's
Glue server; every effect is read back through the backend and a raw Glue client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pytest
from botocore.stub import Stubber
from moto.core.authorization import enable_iam_authentication

from backends.core.extensions import AlterNamespaceRequest, AlterTableRequest
from backends.glue import GlueNamespace
from backends.guard import GuardedNamespace
from tests.support.common import free_port
from tests.support.glue import MOTO_ACCOUNT_ID, MotoEndpoint, create_user_keys, glue_properties
from tests.support.lance_data import all_list_pages, sample_table

GLUE_ACTIONS_BUT_DELETE = [
    "glue:GetDatabase",
    "glue:GetDatabases",
    "glue:GetTable",
    "glue:GetTables",
    "glue:CreateTable",
]


def raw(endpoint: MotoEndpoint) -> Any:
    return endpoint.client("glue")


def create_db(glue: GlueNamespace, name: str, **properties: str) -> list[str]:
    glue.create_namespace(ln.CreateNamespaceRequest(id=[name], properties=properties or None))
    return [name]


def lance_data(tmp_path: Path, name: str, rows: int = 3) -> str:
    location = str(tmp_path / f"{name}.lance")
    lance.write_dataset(sample_table(rows), location)
    return location


def put_rich_table(endpoint: MotoEndpoint, db: str, name: str, location: str) -> None:
    """A Lance table as another Glue client may have written it: with a description and a
    fuller storage descriptor, which rename and alter must carry over."""
    raw(endpoint).create_table(
        DatabaseName=db,
        TableInput={
            "Name": name,
            "Description": "orders of the day",
            "TableType": "EXTERNAL_TABLE",
            "Parameters": {"table_type": "lance", "k": "v"},
            "StorageDescriptor": {
                "Location": location,
                "Columns": [{"Name": "id", "Type": "bigint"}],
                "InputFormat": "lance",
            },
        },
    )


def stored_table(endpoint: MotoEndpoint, db: str, name: str) -> dict[str, Any]:
    return raw(endpoint).get_table(DatabaseName=db, Name=name)["Table"]


def stored_names(endpoint: MotoEndpoint, db: str) -> list[str]:
    return sorted(t["Name"] for t in raw(endpoint).get_tables(DatabaseName=db)["TableList"])


def describe(glue: GlueNamespace, table_id: list[str]) -> ln.DescribeTableResponse:
    return glue.describe_table(ln.DescribeTableRequest(id=table_id))


# -- RenameTable --------------------------------------------------------------------------------


def test_rename_carries_the_whole_entry_and_keeps_the_data(
    glue: GlueNamespace, clean_moto: MotoEndpoint, tmp_path: Path
) -> None:
    create_db(glue, "db")
    location = lance_data(tmp_path, "orders", rows=4)
    put_rich_table(clean_moto, "db", "orders", location)
    before = stored_table(clean_moto, "db", "orders")

    glue.rename_table(ln.RenameTableRequest(id=["db", "orders"], new_table_name="orders_v2"))

    assert glue.list_tables(ln.ListTablesRequest(id=["db"])).tables == ["orders_v2"]
    with pytest.raises(ln.TableNotFoundError, match="table orders not found"):
        describe(glue, ["db", "orders"])
    renamed = describe(glue, ["db", "orders_v2"])
    assert renamed.location == location
    assert renamed.properties == {"table_type": "lance", "k": "v"}
    assert lance.dataset(renamed.location).count_rows() == 4
    after = stored_table(clean_moto, "db", "orders_v2")
    for field in ("Description", "StorageDescriptor", "TableType", "Parameters"):
        assert after[field] == before[field]


def test_rename_into_another_namespace(
    glue: GlueNamespace, clean_moto: MotoEndpoint, tmp_path: Path
) -> None:
    create_db(glue, "src")
    create_db(glue, "dst")
    location = lance_data(tmp_path, "t")
    glue.register_table(ln.RegisterTableRequest(id=["src", "t"], location=location))

    glue.rename_table(
        ln.RenameTableRequest(id=["src", "t"], new_table_name="moved", new_namespace_id=["dst"])
    )

    assert stored_names(clean_moto, "src") == []
    assert glue.list_tables(ln.ListTablesRequest(id=["dst"])).tables == ["moved"]
    assert describe(glue, ["dst", "moved"]).location == location
    assert lance.dataset(location).count_rows() == 3


def test_rename_errors_change_nothing(glue: GlueNamespace, clean_moto: MotoEndpoint) -> None:
    create_db(glue, "db")
    for name in ("one", "two"):
        glue.declare_table(ln.DeclareTableRequest(id=["db", name], location=f"s3://b/{name}"))
    raw(clean_moto).create_table(
        DatabaseName="db", TableInput={"Name": "hive", "TableType": "EXTERNAL_TABLE"}
    )
    cases = [
        (ln.TableNotFoundError, "table none not found",
         ln.RenameTableRequest(id=["db", "none"], new_table_name="x")),
        (ln.TableAlreadyExistsError, r"table db\$two already exists",
         ln.RenameTableRequest(id=["db", "one"], new_table_name="two")),
        (ln.TableAlreadyExistsError, r"table db\$one already exists",
         ln.RenameTableRequest(id=["db", "one"], new_table_name="one")),
        (
            ln.NamespaceNotFoundError, "namespace no not found",
            ln.RenameTableRequest(id=["db", "one"], new_table_name="x", new_namespace_id=["no"]),
        ),
        (ln.InvalidInputError, "new table name 'Bad' is not a valid Glue name",
         ln.RenameTableRequest(id=["db", "one"], new_table_name="Bad")),
        (ln.InvalidInputError, "new_table_name must not be empty",
         ln.RenameTableRequest(id=["db", "one"], new_table_name="")),
        (ln.InvalidInputError, r"table db\$hive is not a Lance table",
         ln.RenameTableRequest(id=["db", "hive"], new_table_name="x")),
        (
            ln.InvalidInputError, "tables live in a database, not in the root namespace",
            ln.RenameTableRequest(id=["db", "one"], new_table_name="x", new_namespace_id=[]),
        ),
    ]
    for error, why, request in cases:
        with pytest.raises(error, match=why):
            GuardedNamespace(glue).rename_table(request)  # as the server calls it
    assert stored_names(clean_moto, "db") == ["hive", "one", "two"]
    assert describe(glue, ["db", "one"]).location == "s3://b/one"


def test_rename_is_undone_when_the_old_entry_cannot_be_deleted(
    glue: GlueNamespace, clean_moto: MotoEndpoint, tmp_path: Path
) -> None:
    """Another client deregisters the table while it is being renamed: Glue then refuses to
    delete the old entry, and the new one is removed again."""
    create_db(glue, "db")
    location = lance_data(tmp_path, "t")
    glue.register_table(ln.RegisterTableRequest(id=["db", "t"], location=location))
    other_client = raw(clean_moto)

    def deregister_concurrently(**_: object) -> None:
        other_client.delete_table(DatabaseName="db", Name="t")

    glue.glue_client.meta.events.register_first(
        "after-call.glue.CreateTable", deregister_concurrently
    )
    with pytest.raises(ln.TableNotFoundError, match=r"table db\$t not found"):
        glue.rename_table(ln.RenameTableRequest(id=["db", "t"], new_table_name="renamed"))
    assert stored_names(clean_moto, "db") == []
    assert lance.dataset(location).count_rows() == 3


def test_rename_without_delete_permission_reports_both_entries(
    clean_moto: MotoEndpoint, tmp_path: Path
) -> None:
    admin = GlueNamespace(**glue_properties(clean_moto.url))
    create_db(admin, "db")
    admin.declare_table(ln.DeclareTableRequest(id=["db", "t"], location="s3://b/t"))
    keys = create_user_keys(clean_moto, "no-delete", GLUE_ACTIONS_BUT_DELETE)
    limited = GlueNamespace(
        **glue_properties(clean_moto.url, access_key_id=keys[0], secret_access_key=keys[1])
    )
    with enable_iam_authentication(), pytest.raises(
        ln.InternalError, match=r"(?s)rename failed \(table db\$t: .*AccessDenied.*glue:DeleteTable"
    ) as raised:
        limited.rename_table(ln.RenameTableRequest(id=["db", "t"], new_table_name="renamed"))
    assert "db$renamed could not be removed" in str(raised.value)
    assert stored_names(clean_moto, "db") == ["renamed", "t"]


# -- AlterNamespace -----------------------------------------------------------------------------


def test_alter_namespace_sets_unsets_and_keeps_the_database_fields(
    glue: GlueNamespace, clean_moto: MotoEndpoint
) -> None:
    raw(clean_moto).create_database(
        DatabaseInput={
            "Name": "lake",
            "Description": "the lake",
            "LocationUri": "s3://bucket/lake/",
            "Parameters": {"a": "1", "b": "2"},
        }
    )
    response = glue.alter_namespace(
        AlterNamespaceRequest(
            id=["lake"], set_properties={"b": "3", "c": "4"}, unset_properties=["a", "absent"]
        )
    )
    described = glue.describe_namespace(ln.DescribeNamespaceRequest(id=["lake"])).properties
    fields = {"description": "the lake", "location": "s3://bucket/lake/"}
    fields |= {"database.description": "the lake", "database.location-uri": "s3://bucket/lake/"}
    assert response.properties == described == {"b": "3", "c": "4", **fields}
    stored = raw(clean_moto).get_database(Name="lake")["Database"]
    assert stored["Description"] == "the lake"
    assert stored["LocationUri"] == "s3://bucket/lake/"
    assert glue.declare_table(ln.DeclareTableRequest(id=["lake", "t"])).location == (
        "s3://bucket/lake/t.lance"
    )


def test_alter_namespace_refusals_change_nothing(glue: GlueNamespace) -> None:
    create_db(glue, "db", keep="1")
    before = glue.describe_namespace(ln.DescribeNamespaceRequest(id=["db"])).properties
    for request, why in (
        (AlterNamespaceRequest(id=["db"], set_properties={"x": "1"}, unset_properties=["x"]),
         "properties both set and unset: x"),
        (AlterNamespaceRequest(id=["db"], set_properties={"glue.namespace_type": "catalog"}),
         "properties glue.namespace_type only choose what CreateNamespace creates"),
        (AlterNamespaceRequest(id=["db"], set_properties={"k" * 256: "v"}),
         "property key 'k+' must be 1 to 255 characters"),
        (AlterNamespaceRequest(id=["db"], set_properties={"": "v"}),
         "property keys must be non-empty strings, got ''"),
        (AlterNamespaceRequest(id=[], set_properties={"x": "1"}),
         "the root namespace has no properties to alter"),
        (AlterNamespaceRequest(id=["Bad"], set_properties={"x": "1"}),
         "namespace name 'Bad' is not a valid Glue name"),
    ):
        with pytest.raises(ln.InvalidInputError, match=why):
            glue.alter_namespace(request)
    with pytest.raises(ln.NamespaceNotFoundError, match="namespace missing not found"):
        glue.alter_namespace(AlterNamespaceRequest(id=["missing"], set_properties={"x": "1"}))
    after = glue.describe_namespace(ln.DescribeNamespaceRequest(id=["db"])).properties
    assert after == before and after["keep"] == "1"


# -- AlterTable ---------------------------------------------------------------------------------


def test_alter_table_sets_unsets_and_keeps_the_entry(
    glue: GlueNamespace, clean_moto: MotoEndpoint, tmp_path: Path
) -> None:
    create_db(glue, "db")
    put_rich_table(clean_moto, "db", "t", "s3://b/t")
    before = stored_table(clean_moto, "db", "t")
    response = glue.alter_table(
        AlterTableRequest(id=["db", "t"], set_properties={"team": "x"}, unset_properties=["k"])
    )
    described = describe(glue, ["db", "t"]).properties
    assert response.properties == described == {"table_type": "lance", "team": "x"}
    after = stored_table(clean_moto, "db", "t")
    for field in ("Description", "StorageDescriptor", "TableType"):
        assert after[field] == before[field]


def test_alter_table_refuses_the_lance_marker(
    glue: GlueNamespace, clean_moto: MotoEndpoint
) -> None:
    create_db(glue, "db")
    glue.declare_table(ln.DeclareTableRequest(id=["db", "t"], properties={"k": "v"}))
    for request, why in (
        (AlterTableRequest(id=["db", "t"], set_properties={"table_type": "iceberg"}),
         "properties table_type mark this as a Lance table and cannot be changed"),
        (AlterTableRequest(id=["db", "t"], set_properties={"Table_Type": "lance", "x": "1"}),
         "properties Table_Type mark this as a Lance table and cannot be changed"),
        (AlterTableRequest(id=["db", "t"], unset_properties=["table_type"]),
         "properties table_type mark this as a Lance table and cannot be changed"),
    ):
        with pytest.raises(ln.InvalidInputError, match=why):
            glue.alter_table(request)
    with pytest.raises(ln.TableNotFoundError, match="table none not found"):
        glue.alter_table(AlterTableRequest(id=["db", "none"], set_properties={"x": "1"}))
    with pytest.raises(ln.NamespaceNotFoundError, match="namespace none not found"):
        glue.alter_table(AlterTableRequest(id=["none", "t"], set_properties={"x": "1"}))
    assert stored_table(clean_moto, "db", "t")["Parameters"] == {"k": "v", "table_type": "lance"}


# -- ListAllTables ------------------------------------------------------------------------------


def test_list_all_tables_pages_across_databases(
    glue: GlueNamespace, clean_moto: MotoEndpoint, tmp_path: Path
) -> None:
    for name in ("db_a", "db_b", "db_c", "db_empty"):
        create_db(glue, name)
    for db, table in (("db_a", "x"), ("db_a", "y"), ("db_c", "z")):
        glue.register_table(
            ln.RegisterTableRequest(id=[db, table], location=lance_data(tmp_path, f"{db}_{table}"))
        )
    glue.declare_table(ln.DeclareTableRequest(id=["db_b", "declared"]))
    raw(clean_moto).create_table(
        DatabaseName="db_c", TableInput={"Name": "hive", "TableType": "EXTERNAL_TABLE"}
    )

    pages = all_list_pages(glue, limit=2)
    assert pages == [["db_a$x", "db_a$y"], ["db_b$declared", "db_c$z"]]
    with_data = all_list_pages(glue, limit=2, include_declared=False)
    assert with_data == [["db_a$x", "db_a$y"], ["db_c$z"]]
    unpaged = glue.list_all_tables(ln.ListTablesRequest())
    assert unpaged.tables == ["db_a$x", "db_a$y", "db_b$declared", "db_c$z"]
    assert unpaged.page_token is None
    with pytest.raises(ln.InvalidInputError, match="limit must not be negative, got -1"):
        glue.list_all_tables(ln.ListTablesRequest(limit=-1))


# -- hierarchy=catalogs -------------------------------------------------------------------------


def test_databases_of_the_root_catalog_in_catalogs_mode(
    clean_moto: MotoEndpoint, tmp_path: Path
) -> None:
    """moto has no catalog calls (CreateNamespace asks GetCatalog), so the databases of the root
    catalog are made with a raw client and only existing ones are used."""
    catalogs = GlueNamespace(
        **glue_properties(clean_moto.url, hierarchy="catalogs", catalog_id=MOTO_ACCOUNT_ID)
    )
    raw(clean_moto).create_database(DatabaseInput={"Name": "src", "Parameters": {"a": "1"}})
    raw(clean_moto).create_database(DatabaseInput={"Name": "dst"})
    location = lance_data(tmp_path, "t")
    catalogs.register_table(ln.RegisterTableRequest(id=["src", "t"], location=location))

    catalogs.rename_table(
        ln.RenameTableRequest(id=["src", "t"], new_table_name="u", new_namespace_id=["dst"])
    )
    altered = catalogs.alter_namespace(
        AlterNamespaceRequest(id=["src"], set_properties={"b": "2"}, unset_properties=["a"])
    )
    table = catalogs.alter_table(AlterTableRequest(id=["dst", "u"], set_properties={"c": "3"}))

    assert altered.properties == {"b": "2"}
    assert table.properties == {"table_type": "lance", "c": "3"}
    assert catalogs.list_tables(ln.ListTablesRequest(id=["dst"])).tables == ["u"]
    assert lance.dataset(describe(catalogs, ["dst", "u"]).location).count_rows() == 3


# Child catalogs: moto has no catalog calls, so Glue's answers are scripted with botocore's
# Stubber, which checks every request and answer against the Glue service model.

SALES = f"{MOTO_ACCOUNT_ID}:sales"


@pytest.fixture
def stubbed_catalogs() -> Iterator[tuple[GlueNamespace, Stubber]]:
    properties = glue_properties(
        f"http://127.0.0.1:{free_port()}", hierarchy="catalogs", catalog_id=MOTO_ACCOUNT_ID
    )
    namespace = GlueNamespace(**properties)
    with Stubber(namespace.glue_client) as stubber:
        yield namespace, stubber
        stubber.assert_no_pending_responses()


def lance_entry(name: str) -> dict[str, Any]:
    return {
        "Name": name,
        "TableType": "EXTERNAL_TABLE",
        "Parameters": {"table_type": "lance"},
        "StorageDescriptor": {"Location": f"s3://b/{name}"},
    }


def test_list_all_tables_walks_child_catalogs(stubbed_catalogs) -> None:
    namespace, stubber = stubbed_catalogs
    for catalog_id, databases, children in (
        (MOTO_ACCOUNT_ID, ["top"], [{"Name": "sales", "CatalogId": SALES}]),
        (SALES, ["orders"], []),
    ):
        stubber.add_response(
            "get_databases",
            {"DatabaseList": [{"Name": name} for name in databases]},
            {"CatalogId": catalog_id},
        )
        stubber.add_response(
            "get_catalogs",
            {"CatalogList": children},
            {"ParentCatalogId": catalog_id, "Recursive": False},
        )
    # Namespaces are read in the order of their ids: sales$orders$… before top$….
    stubber.add_response(
        "get_tables",
        {"TableList": [lance_entry("u"), {"Name": "hive", "TableType": "EXTERNAL_TABLE"}]},
        {"CatalogId": SALES, "DatabaseName": "orders"},
    )
    stubber.add_response(
        "get_tables",
        {"TableList": [lance_entry("t")]},
        {"CatalogId": MOTO_ACCOUNT_ID, "DatabaseName": "top"},
    )
    response = namespace.list_all_tables(ln.ListTablesRequest())
    assert response.tables == ["sales$orders$u", "top$t"]


def expect_sales_catalog(stubber: Stubber, catalog: dict[str, Any]) -> None:
    """Resolving ["sales"]: no such database in the root catalog, but a child catalog."""
    stubber.add_client_error(
        "get_database",
        "EntityNotFoundException",
        expected_params={"CatalogId": MOTO_ACCOUNT_ID, "Name": "sales"},
    )
    stubber.add_response("get_catalog", {"Catalog": catalog}, {"CatalogId": SALES})


def test_alter_namespace_of_a_child_catalog_keeps_its_description(stubbed_catalogs) -> None:
    namespace, stubber = stubbed_catalogs
    before = {"Name": "sales", "CatalogId": SALES, "Description": "d", "Parameters": {"a": "1"}}
    expect_sales_catalog(stubber, before)
    catalog_input = {"Description": "d", "Parameters": {"b": "2"}}
    stubber.add_response("update_catalog", {}, {"CatalogId": SALES, "CatalogInput": catalog_input})
    expect_sales_catalog(stubber, {**before, "Parameters": {"b": "2"}})
    response = namespace.alter_namespace(
        AlterNamespaceRequest(id=["sales"], set_properties={"b": "2"}, unset_properties=["a"])
    )
    assert response.properties == {"b": "2", "description": "d", "database.description": "d"}
