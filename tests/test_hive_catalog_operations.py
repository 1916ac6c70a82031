"""RenameTable, AlterNamespace, AlterTable and ListAllTables of the Hive backends, against the
real Hive Metastore 2.3.10 (hive2, hive3) and 3.1.3 (hive3); every effect is read back through
the backend and the metastore."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from hive_metastore.ttypes import Database

from backends import load_namespace
from backends.core.extensions import AlterNamespaceRequest, AlterTableRequest
from backends.hive import Hive2Namespace, Hive3Namespace
from tests.support.common import unique
from tests.support.hive import HiveMetastoreProcess, create_raw_table, metastore_client
from tests.support.lance_data import all_list_pages, arrow_stream


@pytest.fixture
def hive2(hive_metastore: HiveMetastoreProcess, tmp_path: Path) -> Iterator[Hive2Namespace]:
    namespace = Hive2Namespace(uri=hive_metastore.uri, root=str(tmp_path / "lake"))
    yield namespace
    namespace.close()


@pytest.fixture(params=["hive_metastore", "hive3_metastore"], ids=["hms2", "hms3"])
def hive3(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Hive3Namespace]:
    """hive3 on HMS 2.3.10 (the single catalog `hive`) and on HMS 3.1.3 (catalogs)."""
    metastore = request.getfixturevalue(request.param)
    namespace = Hive3Namespace(uri=metastore.uri, root=str(tmp_path / "lake"))
    yield namespace
    namespace.close()


def new_database(hive: Hive2Namespace | Hive3Namespace, prefix: str = "db", **properties: str):
    name = unique(prefix)
    path = ["hive", name] if isinstance(hive, Hive3Namespace) else [name]
    hive.create_namespace(ln.CreateNamespaceRequest(id=path, properties=properties or None))
    return path


def registered_table(hive, namespace: list[str], name: str, tmp_path: Path, rows: int = 3) -> str:
    location = str(tmp_path / f"{name}.lance")
    lance.write_dataset(pa.table({"id": list(range(rows))}), location)
    hive.register_table(
        ln.RegisterTableRequest(id=[*namespace, name], location=location, properties={"k": "v"})
    )
    return location


def describe(hive, table_id: list[str]) -> ln.DescribeTableResponse:
    return hive.describe_table(ln.DescribeTableRequest(id=table_id))


def tables(hive, namespace: list[str]) -> list[str]:
    return hive.list_tables(ln.ListTablesRequest(id=namespace)).tables


# -- RenameTable --------------------------------------------------------------------------------


def test_rename_keeps_location_properties_and_data(
    hive2: Hive2Namespace, hive_metastore: HiveMetastoreProcess, tmp_path: Path
) -> None:
    db = new_database(hive2)
    location = registered_table(hive2, db, "before", tmp_path, rows=4)

    hive2.rename_table(ln.RenameTableRequest(id=[*db, "before"], new_table_name="After"))

    renamed = describe(hive2, [*db, "after"])
    assert renamed.location == location
    assert renamed.properties["k"] == "v" and renamed.properties["table_type"] == "lance"
    assert lance.dataset(renamed.location).count_rows() == 4
    assert tables(hive2, db) == ["after"]
    with pytest.raises(ln.TableNotFoundError, match=r"table db_\w+\.before not found"):
        describe(hive2, [*db, "before"])
    with metastore_client(hive_metastore.port) as client:
        assert client.get_table(db[0], "after").tableType == "EXTERNAL_TABLE"


def test_rename_into_another_namespace(hive3: Hive3Namespace, tmp_path: Path) -> None:
    source, target = new_database(hive3), new_database(hive3)
    location = registered_table(hive3, source, "moving", tmp_path)

    hive3.rename_table(
        ln.RenameTableRequest(
            id=[*source, "moving"], new_table_name="moved", new_namespace_id=target
        )
    )

    assert tables(hive3, source) == []
    assert tables(hive3, target) == ["moved"]
    assert describe(hive3, [*target, "moved"]).location == location
    assert lance.dataset(location).count_rows() == 3


def test_rename_errors_change_nothing(
    hive2: Hive2Namespace, hive_metastore: HiveMetastoreProcess, tmp_path: Path
) -> None:
    db = new_database(hive2)
    location = registered_table(hive2, db, "one", tmp_path)
    registered_table(hive2, db, "two", tmp_path)
    create_raw_table(hive_metastore.port, db[0], "plain", "EXTERNAL_TABLE", {}, tmp_path / "p")
    rename = hive2.rename_table
    cases = [
        (ln.TableNotFoundError, rf"table {db[0]}\.none not found",
         ln.RenameTableRequest(id=[*db, "none"], new_table_name="x")),
        (ln.TableAlreadyExistsError, rf"table {db[0]}\.two already exists",
         ln.RenameTableRequest(id=[*db, "one"], new_table_name="two")),
        (ln.TableAlreadyExistsError, rf"table {db[0]}\.one already exists",
         ln.RenameTableRequest(id=[*db, "one"], new_table_name="one")),
        (
            ln.NamespaceNotFoundError, "namespace not found: nope",
            ln.RenameTableRequest(id=[*db, "one"], new_table_name="x", new_namespace_id=["nope"]),
        ),
        (ln.InvalidInputError, "table name 'bad name' is not a valid Hive name",
         ln.RenameTableRequest(id=[*db, "one"], new_table_name="bad name")),
        (ln.InvalidInputError, "RenameTable needs new_table_name",
         ln.RenameTableRequest(id=[*db, "one"], new_table_name="")),
        (ln.InvalidInputError, rf"{db[0]}\.plain is a Hive table but not a Lance table",
         ln.RenameTableRequest(id=[*db, "plain"], new_table_name="x")),
        (
            ln.InvalidInputError, "this operation needs a namespace, not the root namespace",
            ln.RenameTableRequest(id=[*db, "one"], new_table_name="x", new_namespace_id=[]),
        ),
    ]
    for error, why, request in cases:
        with pytest.raises(error, match=why):
            rename(request)
    assert tables(hive2, db) == ["one", "two"]
    assert describe(hive2, [*db, "one"]).location == location
    with metastore_client(hive_metastore.port) as client:
        assert sorted(client.get_all_tables(db[0])) == ["one", "plain", "two"]


# -- AlterNamespace -----------------------------------------------------------------------------


def test_alter_namespace_sets_and_unsets(hive2: Hive2Namespace) -> None:
    db = new_database(hive2, a="1", b="2")
    response = hive2.alter_namespace(
        AlterNamespaceRequest(
            id=db,
            set_properties={
                "b": "3", "c": "4", "database.owner": "ana", "database.owner-type": "role"
            },
            unset_properties=["a", "absent"],
        )
    )
    described = hive2.describe_namespace(ln.DescribeNamespaceRequest(id=db)).properties
    assert response.properties == described
    assert {key: described[key] for key in ("b", "c", "database.owner", "database.owner-type")} == {
        "b": "3",
        "c": "4",
        "database.owner": "ana",
        "database.owner-type": "ROLE",
    }
    assert "a" not in described

    hive2.alter_namespace(AlterNamespaceRequest(id=db, unset_properties=["b", "c"]))
    after = hive2.describe_namespace(ln.DescribeNamespaceRequest(id=db)).properties
    assert not {"a", "b", "c"} & after.keys()


def on_hms3(request: pytest.FixtureRequest) -> bool:
    """Whether the test's `hive3` runs on HMS 3.1.3."""
    return request.node.callspec.params["hive3"] == "hive3_metastore"


def test_alter_namespace_refusals_change_nothing(
    hive3: Hive3Namespace, request: pytest.FixtureRequest
) -> None:
    db = new_database(hive3, keep="1")
    before = hive3.describe_namespace(ln.DescribeNamespaceRequest(id=db)).properties
    database_only = "only a database's properties can be altered here"
    refused = [
        (AlterNamespaceRequest(id=db, unset_properties=["database.location-uri"]),
         "database.location-uri are fields of the Hive database and cannot be unset"),
        (AlterNamespaceRequest(id=db, unset_properties=["database.owner"]),
         "database.owner are fields of the Hive database and cannot be unset"),
        (AlterNamespaceRequest(id=db, set_properties={"x": "1"}, unset_properties=["x"]),
         "properties both set and unset: x"),
        (AlterNamespaceRequest(id=db, set_properties={"database.owner-type": "nobody"}),
         "database.owner-type must be USER, ROLE or GROUP, got 'nobody'"),
        (AlterNamespaceRequest(id=["hive"], set_properties={"x": "1"}), database_only),
        (AlterNamespaceRequest(id=[], set_properties={"x": "1"}), database_only),
    ]
    if not on_hms3(request):  # HMS 2.3 ignores a new description: refused, the other undone
        refused.append((
            AlterNamespaceRequest(id=db, set_properties={"database.description": "d", "x": "1"}),
            "this metastore cannot change database.description; nothing was changed",
        ))
    for request, why in refused:
        with pytest.raises(ln.InvalidInputError, match=why):
            hive3.alter_namespace(request)
    with pytest.raises(ln.NamespaceNotFoundError, match="namespace not found: missing_db"):
        hive3.alter_namespace(AlterNamespaceRequest(id=["hive", "missing_db"], set_properties={}))
    assert hive3.describe_namespace(ln.DescribeNamespaceRequest(id=db)).properties == before


def test_alter_namespace_description_and_location_on_hms3(
    hive3_metastore: HiveMetastoreProcess, tmp_path: Path
) -> None:
    """HMS 3 changes what HMS 2.3 ignores: a database's description and location (a
    database another engine placed elsewhere is moved to its own path, the only one the
    server names)."""
    hive3 = Hive3Namespace(uri=hive3_metastore.uri, root=str(tmp_path / "lake"))
    name = unique("db")
    with metastore_client(hive3_metastore.port) as client:
        client.create_database(Database(name=name, catalogName="hive", parameters={"keep": "1"},
                                        locationUri=str(tmp_path / "elsewhere.db")))
    db = ["hive", name]
    moved = str(tmp_path / "lake" / f"{name}.db")
    changes = {"database.description": "d", "database.location-uri": moved, "x": "1"}
    try:
        answer = hive3.alter_namespace(AlterNamespaceRequest(id=db, set_properties=changes))
        described = hive3.describe_namespace(ln.DescribeNamespaceRequest(id=db)).properties
    finally:
        hive3.close()
    assert {key: answer.properties[key] for key in changes} == changes
    assert (described["comment"], described["location"], described["keep"]) == ("d", moved, "1")


# -- AlterTable ---------------------------------------------------------------------------------


def test_alter_table_sets_and_unsets(hive2: Hive2Namespace, tmp_path: Path) -> None:
    db = new_database(hive2)
    registered_table(hive2, db, "t", tmp_path)
    response = hive2.alter_table(
        AlterTableRequest(id=[*db, "t"], set_properties={"owner_team": "x"}, unset_properties=["k"])
    )
    described = describe(hive2, [*db, "t"]).properties
    assert response.properties == described
    assert described["owner_team"] == "x" and "k" not in described
    assert described["table_type"] == "lance"


def test_alter_table_refuses_the_lance_markers(hive2: Hive2Namespace, tmp_path: Path) -> None:
    db = new_database(hive2)
    registered_table(hive2, db, "t", tmp_path)
    before = describe(hive2, [*db, "t"]).properties
    marker = "properties {} mark this as a Lance table and cannot be changed"
    for request, why in (
        (AlterTableRequest(id=[*db, "t"], set_properties={"table_type": "iceberg"}),
         marker.format("table_type")),
        (AlterTableRequest(id=[*db, "t"], set_properties={"TABLE_TYPE": "lance", "x": "1"}),
         marker.format("TABLE_TYPE")),
        (AlterTableRequest(id=[*db, "t"], unset_properties=["table_type"]),
         marker.format("table_type")),
        (AlterTableRequest(id=[*db, "t"], unset_properties=["EXTERNAL"]),
         marker.format("EXTERNAL")),
    ):
        with pytest.raises(ln.InvalidInputError, match=why):
            hive2.alter_table(request)
    with pytest.raises(ln.TableNotFoundError, match=r"table db_\w+\.none not found"):
        hive2.alter_table(AlterTableRequest(id=[*db, "none"], set_properties={"x": "1"}))
    assert describe(hive2, [*db, "t"]).properties == before


# -- ListAllTables ------------------------------------------------------------------------------


def test_list_all_tables_pages_across_databases(
    hive2: Hive2Namespace, hive_metastore: HiveMetastoreProcess, tmp_path: Path
) -> None:
    prefix = unique("all")
    databases = [f"{prefix}_{index}" for index in range(3)]
    for database in databases:
        hive2.create_namespace(ln.CreateNamespaceRequest(id=[database]))
    registered_table(hive2, [databases[0]], "a", tmp_path)
    registered_table(hive2, [databases[0]], "b", tmp_path)
    hive2.declare_table(ln.DeclareTableRequest(id=[databases[1], "declared"]))
    registered_table(hive2, [databases[2]], "c", tmp_path)
    port = hive_metastore.port
    create_raw_table(port, databases[2], "plain", "EXTERNAL_TABLE", {}, tmp_path / "p")

    pages = all_list_pages(hive2, limit=2)
    listed = [table_id for page in pages for table_id in page]
    assert all(len(page) <= 2 for page in pages)
    assert listed == sorted(set(listed))
    ours = [table_id for table_id in listed if table_id.startswith(prefix)]
    assert ours == [
        f"{databases[0]}$a",
        f"{databases[0]}$b",
        f"{databases[1]}$declared",
        f"{databases[2]}$c",
    ]

    with_data = [i for page in all_list_pages(hive2, 2, include_declared=False) for i in page]
    assert [i for i in with_data if i.startswith(prefix)] == [
        f"{databases[0]}$a",
        f"{databases[0]}$b",
        f"{databases[2]}$c",
    ]
    with pytest.raises(ln.InvalidInputError, match="limit must not be negative, got -1"):
        hive2.list_all_tables(ln.ListTablesRequest(limit=-1))


def test_list_all_tables_of_hive3_names_the_catalog(hive3: Hive3Namespace, tmp_path: Path) -> None:
    db = new_database(hive3, "cat3")
    registered_table(hive3, db, "t", tmp_path)
    after = f"hive${db[1]}"
    response = hive3.list_all_tables(ln.ListTablesRequest(page_token=after, limit=1))
    assert response.tables == [f"hive${db[1]}$t"]


def test_a_table_id_of_the_wrong_depth_is_refused_with_a_code(
    hive3_metastore: HiveMetastoreProcess, tmp_path: Path,
) -> None:
    """hive3's tables are `catalog$database$table`: CreateTable of `catalog$table` (a
    LanceDB user's two-level habit) is refused with a code, never a 500."""
    namespace = load_namespace("hive3", {"uri": hive3_metastore.uri,
                                         "root": str(tmp_path / "lake")})
    for table_id in (["hive", "t"], ["t"]):
        with pytest.raises(ln.LanceNamespaceError) as refused:
            namespace.create_table(ln.CreateTableRequest(id=table_id),
                                   arrow_stream(pa.table({"id": [1]})))
        assert not isinstance(refused.value, ln.InternalError), refused.value
        assert "catalog" in str(refused.value) or "database" in str(refused.value)
