"""The hive3 catalog level against the real Hive Metastores 3.1.3 and 4.0.1: catalogs
(get_catalogs, get_catalog, create_catalog, drop_catalog), `Database.catalogName` and
"@catalog#database" addressing, every registration checked with a raw Thrift client.

Only what the real metastore cannot be made to do runs against the in-process stand-in of
`tests/support/hive_catalog_stand_in.py`: a metastore without parameter filters.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from hive_metastore.ttypes import (
    GetCatalogRequest,
    MetaException,
    NoSuchObjectException,
    StorageDescriptor,
    Table,
)

from backends.hive import LANCE_PARAMETER_FILTER, Hive3Namespace
from backends.hive.metastore import DROPPED_CATALOGS
from tests.support.common import unique
from tests.support.hive import HiveMetastoreProcess, metastore_client, stored_table
from tests.support.hive_catalog_stand_in import CatalogMetastoreServer
from tests.support.lance_data import arrow_stream


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture(scope="module", params=["hive3_metastore", "hive4_metastore"],
                ids=["hms3.1.3", "hms4.0.1"])
def metastore(request: pytest.FixtureRequest) -> HiveMetastoreProcess:
    """Each test runs on the real Hive Metastore 3.1.3 and on 4.0.1."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def hive3(metastore: HiveMetastoreProcess, root: Path) -> Iterator[Hive3Namespace]:
    namespace = Hive3Namespace(
        uri=metastore.uri, root=str(root), **{"storage.endpoint": "http://minio"}
    )
    yield namespace
    namespace.close()


@pytest.fixture
def catalog(hive3: Hive3Namespace) -> str:
    name = unique("cat")
    hive3.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    return name


def test_root_lists_the_catalogs(hive3: Hive3Namespace, catalog: str) -> None:
    catalogs = hive3.list_namespaces(ln.ListNamespacesRequest()).namespaces
    assert "hive" in catalogs and catalog in catalogs
    assert catalogs == sorted(catalogs)
    first = hive3.list_namespaces(ln.ListNamespacesRequest(limit=1))
    assert first.namespaces == catalogs[:1] and first.page_token == catalogs[0]


def test_catalog_properties_live_in_the_catalog_object(
    hive3: Hive3Namespace, metastore: HiveMetastoreProcess, root: Path
) -> None:
    name = unique("Props")
    properties = {"description": "research", "catalog.location.uri": str(root / "research")}
    hive3.create_namespace(ln.CreateNamespaceRequest(id=[name], properties=properties))

    with metastore_client(metastore.port) as client:
        stored = client.get_catalog(GetCatalogRequest(name=name.lower())).catalog
    assert (stored.name, stored.description) == (name.lower(), "research")
    assert stored.locationUri == str(root / "research")
    described = hive3.describe_namespace(ln.DescribeNamespaceRequest(id=[name.upper()]))
    assert described.properties == properties


def test_catalog_default_location_is_under_root(hive3: Hive3Namespace, catalog: str,
                                                root: Path) -> None:
    described = hive3.describe_namespace(ln.DescribeNamespaceRequest(id=[catalog]))
    assert described.properties["catalog.location.uri"] == f"{root}/{catalog}"


def test_catalog_create_modes(hive3: Hive3Namespace, catalog: str,
                              metastore: HiveMetastoreProcess) -> None:
    with pytest.raises(ln.NamespaceAlreadyExistsError, match=f"catalog '{catalog}' already exists"):
        hive3.create_namespace(ln.CreateNamespaceRequest(id=[catalog]))
    hive3.create_namespace(ln.CreateNamespaceRequest(
        id=[catalog], mode="exist_ok", properties={"description": "ignored"}
    ))
    hive3.create_namespace(ln.CreateNamespaceRequest(
        id=[catalog], mode="overwrite", properties={"description": "replaced"}
    ))
    with metastore_client(metastore.port) as client:
        stored = client.get_catalog(GetCatalogRequest(name=catalog)).catalog
    assert stored.description == "replaced"


def test_databases_live_in_their_catalog(
    hive3: Hive3Namespace, catalog: str, metastore: HiveMetastoreProcess
) -> None:
    hive3.create_namespace(ln.CreateNamespaceRequest(
        id=[catalog, "sales"], properties={"database.description": "in a catalog", "k": "v"}
    ))
    hive3.create_namespace(ln.CreateNamespaceRequest(id=[catalog, "marketing"]))
    # HMS 3 gives every new catalog a `default` database of its own.
    assert hive3.list_namespaces(ln.ListNamespacesRequest(id=[catalog])).namespaces == [
        "default", "marketing", "sales"
    ]
    with metastore_client(metastore.port) as client:
        stored = client.get_database(f"@{catalog}#sales")
        default_catalog_databases = client.get_all_databases()
    assert (stored.catalogName, stored.description, stored.parameters) == (
        catalog, "in a catalog", {"k": "v"}
    )
    assert "sales" not in default_catalog_databases
    described = hive3.describe_namespace(ln.DescribeNamespaceRequest(id=[catalog, "sales"]))
    assert described.properties["database.description"] == "in a catalog"
    assert hive3.list_namespaces(ln.ListNamespacesRequest(id=[catalog, "sales"])).namespaces == []


def test_missing_catalog(hive3: Hive3Namespace) -> None:
    missing = unique("nocat")
    for request in (
        lambda: hive3.namespace_exists(ln.NamespaceExistsRequest(id=[missing])),
        lambda: hive3.describe_namespace(ln.DescribeNamespaceRequest(id=[missing])),
        lambda: hive3.list_namespaces(ln.ListNamespacesRequest(id=[missing])),
        lambda: hive3.create_namespace(ln.CreateNamespaceRequest(id=[missing, "db"])),
        lambda: hive3.drop_namespace(ln.DropNamespaceRequest(id=[missing])),
    ):
        with pytest.raises(
            ln.NamespaceNotFoundError, match=f"namespace not found: No catalog {missing}"
        ):
            request()
    hive3.drop_namespace(ln.DropNamespaceRequest(id=[missing], mode="skip"))


def test_tables_in_a_catalog_database(
    hive3: Hive3Namespace, catalog: str, root: Path, metastore: HiveMetastoreProcess
) -> None:
    hive3.create_namespace(ln.CreateNamespaceRequest(id=[catalog, "db"]))
    declared = hive3.declare_table(
        ln.DeclareTableRequest(id=[catalog, "db", "Events"], properties={"p": "1"})
    )
    assert declared.location == f"{root}/{catalog}/db.db/events"
    assert declared.storage_options == {"endpoint": "http://minio"}

    with metastore_client(metastore.port) as client:
        stored = stored_table(client, "db", "events", catalog)
    assert (stored.catName, stored.dbName, stored.tableType) == (catalog, "db", "EXTERNAL_TABLE")
    assert stored.parameters["table_type"] == "lance" and stored.parameters["p"] == "1"
    assert stored.sd.location == f"file:{declared.location}"  # HMS 3 qualifies local paths

    assert hive3.list_tables(ln.ListTablesRequest(id=[catalog, "db"])).tables == ["events"]
    described = hive3.describe_table(ln.DescribeTableRequest(id=[catalog, "db", "events"]))
    assert described.location == declared.location
    hive3.table_exists(ln.TableExistsRequest(id=[catalog, "db", "events"]))
    with pytest.raises(ln.TableNotFoundError, match=r"table default\.events not found"):
        hive3.table_exists(ln.TableExistsRequest(id=["hive", "default", "events"]))

    hive3.deregister_table(ln.DeregisterTableRequest(id=[catalog, "db", "events"]))
    with metastore_client(metastore.port) as client:
        assert client.get_all_tables(f"@{catalog}#db") == []


def test_drop_catalog_restrict_and_cascade(
    hive3: Hive3Namespace, catalog: str, tmp_path: Path, metastore: HiveMetastoreProcess
) -> None:
    data = tmp_path / "kept.lance"
    lance.write_dataset(pa.table({"x": [1, 2]}), str(data))
    hive3.create_namespace(ln.CreateNamespaceRequest(id=[catalog, "db"]))
    hive3.register_table(ln.RegisterTableRequest(id=[catalog, "db", "kept"], location=str(data)))

    with pytest.raises(
        ln.NamespaceNotEmptyError, match=f"catalog '{catalog}' still has databases: \\['db'\\]"
    ):
        hive3.drop_namespace(ln.DropNamespaceRequest(id=[catalog]))
    with pytest.raises(
        ln.NamespaceNotEmptyError, match="namespace 'db' still has tables; drop them or use CASCADE"
    ):
        hive3.drop_namespace(ln.DropNamespaceRequest(id=[catalog, "db"]))

    hive3.drop_namespace(ln.DropNamespaceRequest(id=[catalog], behavior="CASCADE"))
    with metastore_client(metastore.port) as client:
        with pytest.raises(NoSuchObjectException, match=f"No catalog {catalog}"):
            client.get_catalog(GetCatalogRequest(name=catalog))
        assert catalog not in client.get_catalogs().names
    assert lance.dataset(str(data)).count_rows() == 2


def test_a_catalog_holding_only_its_own_empty_default_database_is_empty(
    hive3: Hive3Namespace, catalog: str, tmp_path: Path, metastore: HiveMetastoreProcess
) -> None:
    """HMS 3 makes a `default` database in each new catalog: RESTRICT drops such a catalog
    (HMS drops that database with it) until its `default` holds a table."""
    data = tmp_path / "in-default.lance"
    lance.write_dataset(pa.table({"x": [1]}), str(data))
    hive3.register_table(ln.RegisterTableRequest(id=[catalog, "default", "t"], location=str(data)))
    with pytest.raises(
        ln.NamespaceNotEmptyError, match=f"catalog '{catalog}' still has databases: \\['default'\\]"
    ):
        hive3.drop_namespace(ln.DropNamespaceRequest(id=[catalog]))
    hive3.deregister_table(ln.DeregisterTableRequest(id=[catalog, "default", "t"]))

    hive3.drop_namespace(ln.DropNamespaceRequest(id=[catalog]))

    with metastore_client(metastore.port) as client:
        assert catalog not in client.get_catalogs().names
        assert client.get_databases(f"@{catalog}#") == []
    assert lance.dataset(str(data)).count_rows() == 1


def test_default_catalog_is_never_dropped(hive3: Hive3Namespace) -> None:
    with pytest.raises(ln.InvalidInputError, match="the default catalog 'hive' is never dropped"):
        hive3.drop_namespace(ln.DropNamespaceRequest(id=["hive"], behavior="cascade"))
    hive3.namespace_exists(ln.NamespaceExistsRequest(id=["hive", "default"]))


@pytest.mark.parametrize(
    ("operation", "identifier", "why"),
    [
        ("list_namespaces", ["a", "b", "c"], r"at most 2 levels, got 'a\$b\$c'"),
        ("create_namespace", ["a", "b", "c"], r"at most 2 levels, got 'a\$b\$c'"),
        ("list_tables", ["a"], "tables live in databases: name a catalog and a database"),
        ("describe_table", ["a", "b"], r"names the catalog, database and table, got \['a', 'b'\]"),
        ("describe_table", ["a", "b", "c", "d"],
         r"names the catalog, database and table, got \['a', 'b', 'c', 'd'\]"),
        ("declare_table", ["bad-catalog", "db", "t"],
         "catalog name 'bad-catalog' is not a valid Hive name"),
        ("create_namespace", ["c" * 129], "catalog name is longer than 128 characters"),
    ],
)
def test_hive3_identifier_depth_and_names(
    hive3: Hive3Namespace, metastore: HiveMetastoreProcess,
    operation: str, identifier: list[str], why: str
) -> None:
    request_types = {
        "list_namespaces": ln.ListNamespacesRequest,
        "create_namespace": ln.CreateNamespaceRequest,
        "list_tables": ln.ListTablesRequest,
        "describe_table": ln.DescribeTableRequest,
        "declare_table": ln.DeclareTableRequest,
    }
    with metastore_client(metastore.port) as client:
        before = client.get_catalogs().names
    with pytest.raises(ln.InvalidInputError, match=why):
        getattr(hive3, operation)(request_types[operation](id=identifier))
    with metastore_client(metastore.port) as client:
        assert client.get_catalogs().names == before


def test_list_tables_on_a_metastore_without_parameter_filters(tmp_path: Path) -> None:
    server = CatalogMetastoreServer(str(tmp_path), parameter_filters=False)
    server.start()
    try:
        hive3 = Hive3Namespace(uri=server.uri, root=str(tmp_path))
        hive3.create_namespace(ln.CreateNamespaceRequest(id=["hive", "db"]))
        for name in ("c", "a", "b"):
            hive3.declare_table(ln.DeclareTableRequest(id=["hive", "db", name]))
        with metastore_client(server.port) as client:
            client.create_table(Table(tableName="aa", dbName="db", tableType="MANAGED_TABLE",
                                      parameters={}, sd=StorageDescriptor(location="/x")))
            with pytest.raises(
                MetaException, match="filtering on table parameters is not supported"
            ):
                client.get_table_names_by_filter("db", LANCE_PARAMETER_FILTER, -1)
        assert hive3.list_tables(ln.ListTablesRequest(id=["hive", "db"])).tables == ["a", "b", "c"]
        page = hive3.list_tables(ln.ListTablesRequest(id=["hive", "db"], page_token="a", limit=1))
        assert (page.tables, page.page_token) == (["b"], "b")
    finally:
        server.stop()


@pytest.mark.parametrize("behavior", ["RESTRICT", "CASCADE"])
def test_dropping_a_catalog_deletes_no_tables_data(
    hive3: Hive3Namespace, catalog: str, behavior: str, root: Path,
) -> None:
    """The metastore deletes a dropped catalog's location recursively; the data of tables
    made there (deregistered, or dropped with the catalog) stays, as DeregisterTable and
    DropNamespace promise."""
    hive3.create_namespace(ln.CreateNamespaceRequest(id=[catalog, "db"]))
    created = {}
    for name in ("gone", "kept"):
        table_id = [catalog, "db", name]
        hive3.create_table(ln.CreateTableRequest(id=table_id),
                           arrow_stream(pa.table({"x": [1, 2, 3]})))
        created[name] = hive3.describe_table(ln.DescribeTableRequest(id=table_id)).location
    hive3.deregister_table(ln.DeregisterTableRequest(id=[catalog, "db", "gone"]))
    if behavior == "RESTRICT":
        hive3.deregister_table(ln.DeregisterTableRequest(id=[catalog, "db", "kept"]))
        hive3.drop_namespace(ln.DropNamespaceRequest(id=[catalog, "db"]))
    hive3.drop_namespace(ln.DropNamespaceRequest(id=[catalog], behavior=behavior))
    for location in created.values():
        assert lance.dataset(location).count_rows() == 3
    dropped = root / DROPPED_CATALOGS
    assert not dropped.exists() or not any(dropped.iterdir())  # the empty place went too


def test_a_catalog_takes_only_what_its_object_holds_and_a_location_of_its_own(
    hive3: Hive3Namespace, catalog: str, root: Path, tmp_path: Path,
) -> None:
    """A property the Catalog object cannot hold is refused, not dropped; a client-named
    location lies strictly inside the root, apart from other catalogs, and holds nothing."""
    hive3.create_namespace(ln.CreateNamespaceRequest(id=[catalog, "db"]))
    table = [catalog, "db", "live"]
    hive3.create_table(ln.CreateTableRequest(id=table), arrow_stream(pa.table({"x": [1]})))
    live = hive3.describe_table(ln.DescribeTableRequest(id=table)).location
    (root / "occupied").mkdir(parents=True)
    (root / "occupied" / "file").write_text("x")
    for properties, message in (
        ({"team": "qa"}, "'team' cannot be stored"),
        ({"catalog.location.uri": str(tmp_path / "outside")}, "strictly inside"),
        ({"catalog.location.uri": str(root)}, "strictly inside"),
        ({"catalog.location.uri": str(root / catalog / "db.db")}, "another catalog"),
        ({"catalog.location.uri": str(root / catalog / "db.db" / "live")}, "another catalog"),
        ({"catalog.location.uri": str(root / "occupied")}, "already holds data"),
    ):
        name = unique("bad")
        with pytest.raises(ln.InvalidInputError, match=message):
            hive3.create_namespace(ln.CreateNamespaceRequest(id=[name], properties=properties))
        with pytest.raises(ln.NamespaceNotFoundError):
            hive3.describe_namespace(ln.DescribeNamespaceRequest(id=[name]))
    assert lance.dataset(live).count_rows() == 1
