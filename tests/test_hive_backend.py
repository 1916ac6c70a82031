"""Hive2Namespace and Hive3Namespace called directly, against a real Hive Metastore 2.3.10.

Registrations are checked in the metastore itself through a raw Thrift client.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from hive_metastore.ttypes import NoSuchObjectException, PrincipalType

from backends import resolve_impl
from backends.core.extensions import AlterNamespaceRequest
from backends.core.settings import ConfigurationError
from backends.guard import GuardedNamespace
from backends.hive import Hive2Namespace, Hive3Namespace
from tests.support.common import unique
from tests.support.hive import HiveMetastoreProcess, create_raw_table, metastore_client


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture
def hive2(hive_metastore: HiveMetastoreProcess, root: Path) -> Iterator[Hive2Namespace]:
    namespace = Hive2Namespace(
        uri=hive_metastore.uri, root=str(root), **{"storage.region": "eu-west-1"}
    )
    yield namespace
    namespace.close()


@pytest.fixture
def hive3(hive_metastore: HiveMetastoreProcess, root: Path) -> Iterator[Hive3Namespace]:
    namespace = Hive3Namespace(uri=hive_metastore.uri, root=str(root))
    yield namespace
    namespace.close()


@pytest.fixture
def database(hive2: Hive2Namespace) -> str:
    name = unique("db")
    hive2.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    return name


def write_lance_table(location: Path, rows: int = 3) -> None:
    lance.write_dataset(pa.table({"id": list(range(rows))}), str(location))


# -- configuration ----------------------------------------------------------------------------


def test_aliases_resolve_to_the_hive_backends() -> None:
    assert resolve_impl("hive2") is Hive2Namespace
    assert resolve_impl("hive3") is Hive3Namespace


@pytest.mark.parametrize(
    ("properties", "why"),
    [
        ({"uri": "http://127.0.0.1:9083"}, "metastore uri must be thrift://host:port, got 'http"),
        ({"uri": "thrift://127.0.0.1:notaport"}, "metastore uri has a bad port"),
        ({"uri": "thrift://127.0.0.1:9083", "client.pool-size": "0"},
         "'client.pool-size' must be at least 1, got 0"),
        ({"uri": "thrift://127.0.0.1:9083", "client.pool-size": "three"},
         "'client.pool-size' must be an integer, got 'three'"),
        # The deprecated seconds are read as milliseconds: -1 s is -1000 ms.
        ({"uri": "thrift://127.0.0.1:9083", "client.read-timeout": "-1"},
         "'client.read-timeout' is -1 s, that is 'client.read-timeout-ms' -1000, "
         "which must be at least 1"),
    ],
)
def test_bad_configuration_is_refused(properties: dict[str, str], why: str) -> None:
    with pytest.raises(ConfigurationError, match=why):
        Hive2Namespace(**properties)


def test_lance_namespace_connect_builds_the_backends(
    hive_metastore: HiveMetastoreProcess, root: Path
) -> None:
    properties = {"uri": hive_metastore.uri, "root": str(root)}
    hive2 = ln.connect("backends.hive.Hive2Namespace", properties)
    hive3 = ln.connect("backends.hive.Hive3Namespace", properties)
    assert "default" in hive2.list_namespaces(ln.ListNamespacesRequest()).namespaces
    assert hive3.list_namespaces(ln.ListNamespacesRequest()).namespaces == ["hive"]


def test_namespace_id_names_the_metastore(hive2: Hive2Namespace,
                                          hive_metastore: HiveMetastoreProcess) -> None:
    assert hive_metastore.uri in hive2.namespace_id()
    assert "Hive2Namespace" in hive2.namespace_id()


# -- namespaces -------------------------------------------------------------------------------


def test_root_lists_databases_sorted_and_paged(hive2: Hive2Namespace) -> None:
    names = sorted(unique("page") for _ in range(5))
    for name in names:
        hive2.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    everything = hive2.list_namespaces(ln.ListNamespacesRequest()).namespaces
    assert everything == sorted(everything)
    assert "default" in everything and set(names) <= set(everything)

    pages, token = [], None
    while True:
        response = hive2.list_namespaces(ln.ListNamespacesRequest(page_token=token, limit=2))
        assert len(response.namespaces) <= 2
        pages.extend(response.namespaces)
        token = response.page_token
        if not token:
            break
    assert pages == everything


def test_namespace_properties_live_in_the_database(
    hive2: Hive2Namespace, hive_metastore: HiveMetastoreProcess, root: Path
) -> None:
    name = unique("props")
    location = root / f"{name}.db"  # a location named by the client is its own path
    properties = {
        "database.description": "sales data",
        "database.location-uri": str(location),
        "database.owner": "alice",
        "database.owner-type": "role",
        "team": "analytics",
    }
    hive2.create_namespace(ln.CreateNamespaceRequest(id=[name], properties=properties))

    with metastore_client(hive_metastore.port) as client:
        stored = client.get_database(name)
    assert stored.description == "sales data"
    assert stored.locationUri.endswith(str(location))
    assert stored.ownerName == "alice"
    assert stored.ownerType == PrincipalType.ROLE
    assert stored.parameters == {"team": "analytics"}

    described = hive2.describe_namespace(ln.DescribeNamespaceRequest(id=[name])).properties
    assert described == {**properties, "database.owner-type": "ROLE",
                         "database.location-uri": str(location),
                         # the same fields under lance-namespace-impls' keys
                         "comment": "sales data", "location": str(location), "owner": "alice"}


def test_a_database_location_elsewhere_than_its_own_path_is_refused(
    hive2: Hive2Namespace, root: Path, tmp_path: Path
) -> None:
    """Outside the root, another database's path, inside it, a table's data: other engines
    would put the database's tables there. Refused at create and at alter, nothing made."""
    name = unique("placed")
    own = f"must be its own path, {root}/{name}.db"
    places = [tmp_path / "outside", root / "other.db", root / "other.db" / "in", root / "t.lance"]
    for place in places:
        with pytest.raises(ln.InvalidInputError, match=own):
            hive2.create_namespace(ln.CreateNamespaceRequest(
                id=[name], properties={"database.location-uri": str(place)}))
    assert name not in hive2.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces
    hive2.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    for place in places:
        with pytest.raises(ln.InvalidInputError, match=own):
            hive2.alter_namespace(AlterNamespaceRequest(
                id=[name], set_properties={"location": str(place), "k": "v"}))
    described = hive2.describe_namespace(ln.DescribeNamespaceRequest(id=[name])).properties
    assert (described["database.location-uri"], "k" in described) == (f"{root}/{name}.db", False)


def test_default_database_location_is_under_root(
    hive2: Hive2Namespace, database: str, root: Path
) -> None:
    described = hive2.describe_namespace(ln.DescribeNamespaceRequest(id=[database]))
    assert described.properties["database.location-uri"] == f"{root}/{database}.db"


def test_create_namespace_modes(
    hive2: Hive2Namespace, hive_metastore: HiveMetastoreProcess
) -> None:
    name = unique("modes")
    first = {"database.description": "first", "k": "1"}
    hive2.create_namespace(ln.CreateNamespaceRequest(id=[name], properties=first))

    with pytest.raises(ln.NamespaceAlreadyExistsError, match=f"namespace '{name}' already exists"):
        hive2.create_namespace(ln.CreateNamespaceRequest(id=[name], mode="create"))

    hive2.create_namespace(
        ln.CreateNamespaceRequest(id=[name], mode="ExistOk", properties={"k": "ignored"})
    )
    with metastore_client(hive_metastore.port) as client:
        assert client.get_database(name).parameters == {"k": "1"}

    hive2.create_namespace(ln.CreateNamespaceRequest(
        id=[name], mode="OVERWRITE", properties={"database.description": "second", "k": "2"}
    ))
    with metastore_client(hive_metastore.port) as client:
        stored = client.get_database(name)
    assert (stored.description, stored.parameters) == ("second", {"k": "2"})

    with pytest.raises(
        ln.InvalidInputError, match="mode must be one of create, exist_ok, overwrite, got 'replace'"
    ):
        hive2.create_namespace(ln.CreateNamespaceRequest(id=[name], mode="replace"))


def test_overwrite_never_drops_registered_tables(hive2: Hive2Namespace, database: str) -> None:
    hive2.declare_table(ln.DeclareTableRequest(id=[database, "kept"]))
    with pytest.raises(
        ln.NamespaceNotEmptyError, match=f"'{database}' still has tables; drop them or use CASCADE"
    ):
        hive2.create_namespace(ln.CreateNamespaceRequest(id=[database], mode="overwrite"))
    assert hive2.list_tables(ln.ListTablesRequest(id=[database])).tables == ["kept"]


def test_names_are_case_insensitive(hive2: Hive2Namespace,
                                    hive_metastore: HiveMetastoreProcess) -> None:
    name = unique("Mixed_Case")
    hive2.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    hive2.namespace_exists(ln.NamespaceExistsRequest(id=[name.lower()]))
    hive2.namespace_exists(ln.NamespaceExistsRequest(id=[name.upper()]))
    with pytest.raises(
        ln.NamespaceAlreadyExistsError, match=f"namespace '{name.lower()}' already exists"
    ):
        hive2.create_namespace(ln.CreateNamespaceRequest(id=[name.upper()]))
    assert name.lower() in hive2.list_namespaces(ln.ListNamespacesRequest()).namespaces

    hive2.declare_table(ln.DeclareTableRequest(id=[name, "Orders"]))
    hive2.table_exists(ln.TableExistsRequest(id=[name.upper(), "ORDERS"]))
    assert hive2.list_tables(ln.ListTablesRequest(id=[name])).tables == ["orders"]
    with metastore_client(hive_metastore.port) as client:
        assert client.get_all_tables(name.lower()) == ["orders"]


def test_missing_namespaces(hive2: Hive2Namespace) -> None:
    missing = unique("missing")
    with pytest.raises(ln.NamespaceNotFoundError, match=f"namespace not found: {missing}"):
        hive2.namespace_exists(ln.NamespaceExistsRequest(id=[missing]))
    with pytest.raises(ln.NamespaceNotFoundError, match=f"namespace not found: {missing}"):
        hive2.describe_namespace(ln.DescribeNamespaceRequest(id=[missing]))
    with pytest.raises(ln.NamespaceNotFoundError, match=f"namespace not found: {missing}"):
        hive2.list_tables(ln.ListTablesRequest(id=[missing]))
    with pytest.raises(ln.NamespaceNotFoundError, match=f"namespace not found: {missing}"):
        hive2.list_namespaces(ln.ListNamespacesRequest(id=[missing]))
    with pytest.raises(ln.NamespaceNotFoundError, match=f"namespace not found: {missing}"):
        hive2.declare_table(ln.DeclareTableRequest(id=[missing, "t"]))
    hive2.namespace_exists(ln.NamespaceExistsRequest(id=[]))
    assert hive2.describe_namespace(ln.DescribeNamespaceRequest(id=[])).properties == {}
    with pytest.raises(
        ln.InvalidInputError, match="this operation needs a namespace, not the root namespace"
    ):
        hive2.create_namespace(ln.CreateNamespaceRequest(id=[]))
    with pytest.raises(
        ln.InvalidInputError, match="this operation needs a namespace, not the root namespace"
    ):
        hive2.drop_namespace(ln.DropNamespaceRequest(id=[]))


def test_a_database_has_no_child_namespaces(hive2: Hive2Namespace, database: str) -> None:
    assert hive2.list_namespaces(ln.ListNamespacesRequest(id=[database])).namespaces == []
    with pytest.raises(
        ln.InvalidInputError, match=rf"namespaces have at most 1 levels, got '{database}\$child'"
    ):
        hive2.create_namespace(ln.CreateNamespaceRequest(id=[database, "child"]))


def test_drop_namespace_modes_and_behaviors(
    hive2: Hive2Namespace, hive_metastore: HiveMetastoreProcess, tmp_path: Path
) -> None:
    missing = unique("gone")
    with pytest.raises(ln.NamespaceNotFoundError, match=f"namespace not found: {missing}"):
        hive2.drop_namespace(ln.DropNamespaceRequest(id=[missing]))
    hive2.drop_namespace(ln.DropNamespaceRequest(id=[missing], mode="Skip"))

    name = unique("drop")
    hive2.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    data = tmp_path / "kept.lance"
    write_lance_table(data, rows=4)
    hive2.register_table(ln.RegisterTableRequest(id=[name, "kept"], location=str(data)))

    with pytest.raises(ln.NamespaceNotEmptyError, match=f"namespace '{name}' still has tables"):
        hive2.drop_namespace(ln.DropNamespaceRequest(id=[name], behavior="RESTRICT"))
    hive2.namespace_exists(ln.NamespaceExistsRequest(id=[name]))

    hive2.drop_namespace(ln.DropNamespaceRequest(id=[name], behavior="Cascade"))
    with metastore_client(hive_metastore.port) as client, pytest.raises(
        NoSuchObjectException, match=name
    ):
        client.get_database(name)
    assert lance.dataset(str(data)).count_rows() == 4  # CASCADE keeps table data

    with pytest.raises(
        ln.InvalidInputError, match="behavior must be one of restrict, cascade, got 'purge'"
    ):
        hive2.drop_namespace(ln.DropNamespaceRequest(id=[name], behavior="purge"))


def test_default_database_is_never_dropped(hive2: Hive2Namespace) -> None:
    with pytest.raises(ln.InvalidInputError, match="Hive never drops the 'default' database"):
        hive2.drop_namespace(ln.DropNamespaceRequest(id=["default"]))
    hive2.namespace_exists(ln.NamespaceExistsRequest(id=["default"]))


# -- tables -----------------------------------------------------------------------------------


def test_declare_table_registers_an_external_lance_table(
    hive2: Hive2Namespace, database: str, root: Path, hive_metastore: HiveMetastoreProcess
) -> None:
    declared = hive2.declare_table(
        ln.DeclareTableRequest(id=[database, "events"], properties={"owner_team": "ml"})
    )
    expected_location = f"{root}/{database}.db/events"
    assert declared.location == expected_location
    assert declared.storage_options == {"region": "eu-west-1"}

    with metastore_client(hive_metastore.port) as client:
        stored = client.get_table(database, "events")
    assert stored.tableType == "EXTERNAL_TABLE"
    assert stored.parameters["table_type"] == "lance"
    assert stored.parameters["EXTERNAL"] == "TRUE"
    assert stored.parameters["owner_team"] == "ml"
    assert stored.sd.location.endswith(expected_location)

    described = hive2.describe_table(ln.DescribeTableRequest(id=[database, "events"]))
    assert described.location == expected_location
    assert described.storage_options == {"region": "eu-west-1"}
    assert described.properties["owner_team"] == "ml"
    hive2.table_exists(ln.TableExistsRequest(id=[database, "events"]))

    with pytest.raises(ln.TableAlreadyExistsError, match="Table events already exists"):
        hive2.declare_table(ln.DeclareTableRequest(id=[database, "events"]))


def test_declare_table_at_a_given_location(hive2: Hive2Namespace, database: str,
                                           tmp_path: Path) -> None:
    location = str(tmp_path / "elsewhere" / "t.lance")
    hive2.declare_table(ln.DeclareTableRequest(id=[database, "placed"], location=location))
    described = hive2.describe_table(ln.DescribeTableRequest(id=[database, "placed"]))
    assert described.location == location


def test_relative_locations_are_refused(hive2: Hive2Namespace, database: str,
                                        hive_metastore: HiveMetastoreProcess) -> None:
    with pytest.raises(
        ln.InvalidInputError, match="table location must be absolute or a URI, got 'data/t'"
    ):
        hive2.declare_table(ln.DeclareTableRequest(id=[database, "rel"], location="data/t"))
    with pytest.raises(
        ln.InvalidInputError, match="table location must be absolute or a URI, got 'data/t'"
    ):
        hive2.register_table(ln.RegisterTableRequest(id=[database, "rel"], location="data/t"))
    with metastore_client(hive_metastore.port) as client:
        assert client.get_all_tables(database) == []


def test_properties_cannot_unmark_a_lance_table(hive2: Hive2Namespace, database: str) -> None:
    hive2.declare_table(ln.DeclareTableRequest(
        id=[database, "marked"], properties={"table_type": "iceberg", "EXTERNAL": "FALSE"}
    ))
    assert hive2.list_tables(ln.ListTablesRequest(id=[database])).tables == ["marked"]


def test_register_table_for_an_existing_lance_table(
    hive2: Hive2Namespace, database: str, tmp_path: Path, hive_metastore: HiveMetastoreProcess
) -> None:
    first, second = tmp_path / "first.lance", tmp_path / "second.lance"
    write_lance_table(first, rows=2)
    write_lance_table(second, rows=5)

    registered = hive2.register_table(
        ln.RegisterTableRequest(id=[database, "reg"], location=str(first))
    )
    assert registered.location == str(first)
    described = hive2.describe_table(ln.DescribeTableRequest(id=[database, "reg"]))
    assert lance.dataset(described.location).count_rows() == 2

    with pytest.raises(ln.TableAlreadyExistsError, match="Table reg already exists"):
        hive2.register_table(ln.RegisterTableRequest(id=[database, "reg"], location=str(second)))
    hive2.register_table(
        ln.RegisterTableRequest(id=[database, "reg"], location=str(second), mode="overwrite")
    )
    with metastore_client(hive_metastore.port) as client:
        stored = client.get_table(database, "reg")
    assert stored.sd.location.endswith(str(second))
    assert stored.parameters["table_type"] == "lance"


def test_register_table_needs_a_lance_table(
    hive2: Hive2Namespace, database: str, tmp_path: Path, hive_metastore: HiveMetastoreProcess
) -> None:
    empty = tmp_path / "not-lance"
    empty.mkdir()
    with pytest.raises(ln.InvalidInputError, match="no Lance table at " + re.escape(str(empty))):
        hive2.register_table(ln.RegisterTableRequest(id=[database, "fake"], location=str(empty)))
    with metastore_client(hive_metastore.port) as client:
        assert client.get_all_tables(database) == []


def test_deregister_removes_the_registration_and_keeps_data(
    hive2: Hive2Namespace, database: str, tmp_path: Path, hive_metastore: HiveMetastoreProcess
) -> None:
    data = tmp_path / "data.lance"
    write_lance_table(data, rows=3)
    hive2.register_table(ln.RegisterTableRequest(id=[database, "gone"], location=str(data)))

    response = hive2.deregister_table(ln.DeregisterTableRequest(id=[database, "gone"]))
    assert response.location == str(data)
    with metastore_client(hive_metastore.port) as client:
        assert client.get_all_tables(database) == []
    assert lance.dataset(str(data)).count_rows() == 3
    with pytest.raises(ln.TableNotFoundError, match=rf"table {database}\.gone not found"):
        hive2.deregister_table(ln.DeregisterTableRequest(id=[database, "gone"]))


def test_other_hive_tables_are_not_lance_tables(
    hive2: Hive2Namespace, database: str, hive_metastore: HiveMetastoreProcess, tmp_path: Path
) -> None:
    port = hive_metastore.port
    lance_data = tmp_path / "real.lance"
    write_lance_table(lance_data)
    create_raw_table(port, database, "managed", "MANAGED_TABLE", {"table_type": "lance"},
                     tmp_path / "managed")
    create_raw_table(port, database, "parquet", "EXTERNAL_TABLE", {"EXTERNAL": "TRUE"},
                     tmp_path / "parquet")
    create_raw_table(port, database, "iceberg", "EXTERNAL_TABLE",
                     {"EXTERNAL": "TRUE", "table_type": "ICEBERG"}, tmp_path / "iceberg")
    create_raw_table(port, database, "upper", "EXTERNAL_TABLE",
                     {"EXTERNAL": "TRUE", "TABLE_TYPE": "LANCE"}, tmp_path / "upper")
    create_raw_table(port, database, "mixed", "EXTERNAL_TABLE",
                     {"EXTERNAL": "TRUE", "table_type": "LaNcE"}, tmp_path / "mixed")
    hive2.declare_table(ln.DeclareTableRequest(id=[database, "ours"]))

    listed = hive2.list_tables(ln.ListTablesRequest(id=[database])).tables
    assert listed == ["managed", "mixed", "ours", "upper"]  # managed: as impls registers
    paged = hive2.list_tables(ln.ListTablesRequest(id=[database], page_token="mixed", limit=1))
    assert (paged.tables, paged.page_token) == (["ours"], "ours")
    hive2.describe_table(ln.DescribeTableRequest(id=[database, "mixed"]))
    for other in ("parquet", "iceberg"):
        with pytest.raises(
            ln.InvalidInputError, match=rf"{database}\.{other} is a Hive table but not a Lance"
        ):
            hive2.describe_table(ln.DescribeTableRequest(id=[database, other]))
        with pytest.raises(
            ln.InvalidInputError, match=rf"{database}\.{other} is a Hive table but not a Lance"
        ):
            hive2.deregister_table(ln.DeregisterTableRequest(id=[database, other]))
        with pytest.raises(
            ln.InvalidInputError, match=rf"{database}\.{other} is a Hive table but not a Lance"
        ):
            hive2.register_table(ln.RegisterTableRequest(
                id=[database, other], location=str(lance_data), mode="overwrite"
            ))
    with metastore_client(port) as client:
        assert client.get_table(database, "managed").sd.location.endswith(f"{tmp_path}/managed")
        assert sorted(client.get_all_tables(database)) == [
            "iceberg", "managed", "mixed", "ours", "parquet", "upper"
        ]
    with pytest.raises(ln.NamespaceNotEmptyError, match=f"namespace '{database}' still has tables"):
        hive2.drop_namespace(ln.DropNamespaceRequest(id=[database]))


def test_list_tables_sorted_and_paged(
    hive2: Hive2Namespace, database: str, hive_metastore: HiveMetastoreProcess, tmp_path: Path
) -> None:
    names = [f"t{index:02d}" for index in range(12)]
    for name in reversed(names):
        hive2.declare_table(ln.DeclareTableRequest(id=[database, name]))
    for index in range(0, 12, 3):  # other Hive tables in between must not shorten pages
        create_raw_table(hive_metastore.port, database, f"t{index:02d}_hive", "MANAGED_TABLE",
                         {}, tmp_path / f"t{index:02d}_hive")

    assert hive2.list_tables(ln.ListTablesRequest(id=[database])).tables == names
    pages, token = [], None
    while True:
        response = hive2.list_tables(ln.ListTablesRequest(id=[database], page_token=token,
                                                          limit=5))
        pages.append(response.tables)
        token = response.page_token
        if not token:
            break
    assert pages == [names[0:5], names[5:10], names[10:12]]
    with pytest.raises(ln.InvalidInputError, match="limit must not be negative, got -1"):
        hive2.list_tables(ln.ListTablesRequest(id=[database], limit=-1))


def test_missing_tables(hive2: Hive2Namespace, database: str) -> None:
    with pytest.raises(ln.TableNotFoundError, match=rf"table {database}\.nope not found"):
        hive2.describe_table(ln.DescribeTableRequest(id=[database, "nope"]))
    with pytest.raises(ln.TableNotFoundError, match=rf"table {database}\.nope not found"):
        hive2.table_exists(ln.TableExistsRequest(id=[database, "nope"]))
    with pytest.raises(ln.NamespaceNotFoundError, match="namespace not found: nodb_"):
        hive2.describe_table(ln.DescribeTableRequest(id=[unique("nodb"), "nope"]))


BAD_NAMES = [
    "a-b", "with space", "dot.ted", "ünïcode", "semi;colon", "..", ".", "a/b", "a\\b", "nul\x00",
    "", "x" * 257,
]
HIVE_NAME = "name '{}' is not a valid Hive name"
BAD_NAME_REFUSALS = {
    **{bad: re.escape(HIVE_NAME.format(bad))
       for bad in ("a-b", "with space", "dot.ted", "ünïcode", "semi;colon")},
    "..": r"identifier part must not be '\.\.'",
    ".": r"identifier part must not be '\.'",
    "a/b": "identifier part 'a/b' must not contain '/'",
    "a\\b": r"identifier part 'a\\\\b' must not contain",
    "nul\x00": "must not contain control or format characters",
    "": "identifier part must not be empty",
    "x" * 257: "identifier part is longer than 256 characters",
}


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_bad_table_names_are_refused_and_nothing_is_registered(
    hive2: Hive2Namespace, database: str, hive_metastore: HiveMetastoreProcess, bad: str
) -> None:
    # Names are validated by the guard the server puts every loaded backend behind.
    hive2 = GuardedNamespace(hive2)
    with pytest.raises(ln.InvalidInputError, match=BAD_NAME_REFUSALS[bad]):
        hive2.declare_table(ln.DeclareTableRequest(id=[database, bad]))
    with metastore_client(hive_metastore.port) as client:
        assert client.get_all_tables(database) == []


@pytest.mark.parametrize("bad", [*BAD_NAMES, "d" * 129])
def test_bad_namespace_names_are_refused_and_nothing_is_created(
    hive2: Hive2Namespace, hive_metastore: HiveMetastoreProcess, bad: str
) -> None:
    # Names are validated by the guard the server puts every loaded backend behind.
    hive2 = GuardedNamespace(hive2)
    with metastore_client(hive_metastore.port) as client:
        before = client.get_all_databases()
    why = BAD_NAME_REFUSALS.get(bad, "database name is longer than 128 characters")
    with pytest.raises(ln.InvalidInputError, match=why):
        hive2.create_namespace(ln.CreateNamespaceRequest(id=[bad]))
    with metastore_client(hive_metastore.port) as client:
        assert client.get_all_databases() == before


@pytest.mark.parametrize("identifier", [[], ["only_db"], ["a", "b", "c"], None])
def test_table_identifiers_need_database_and_table(hive2: Hive2Namespace,
                                                   identifier: list[str] | None) -> None:
    with pytest.raises(
        ln.InvalidInputError, match="a table identifier names the database and table, got"
    ):
        hive2.describe_table(ln.DescribeTableRequest(id=identifier))


def test_longest_hive_names_are_accepted(hive2: Hive2Namespace, tmp_path: Path) -> None:
    name = unique("l").ljust(128, "x")
    hive2.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    table = "t" * 256  # at a shorter location: 256 characters exceed a local file name
    hive2.declare_table(ln.DeclareTableRequest(id=[name, table], location=f"{tmp_path}/long"))
    assert hive2.list_tables(ln.ListTablesRequest(id=[name])).tables == [table]


# -- hive3 against a metastore without catalogs ----------------------------------------------


def test_hive3_falls_back_to_the_hive_catalog(
    hive3: Hive3Namespace, root: Path, hive_metastore: HiveMetastoreProcess
) -> None:
    assert hive3.list_namespaces(ln.ListNamespacesRequest()).namespaces == ["hive"]
    hive3.namespace_exists(ln.NamespaceExistsRequest(id=["hive"]))
    name = unique("h3")
    hive3.create_namespace(ln.CreateNamespaceRequest(id=["hive", name]))
    assert name in hive3.list_namespaces(ln.ListNamespacesRequest(id=["hive"])).namespaces

    declared = hive3.declare_table(ln.DeclareTableRequest(id=["hive", name, "t"]))
    assert declared.location == f"{root}/{name}.db/t"
    with metastore_client(hive_metastore.port) as client:
        stored = client.get_table(name, "t")
    assert stored.tableType == "EXTERNAL_TABLE" and stored.parameters["table_type"] == "lance"
    assert hive3.list_tables(ln.ListTablesRequest(id=["hive", name])).tables == ["t"]
    described = hive3.describe_table(ln.DescribeTableRequest(id=["hive", name, "t"]))
    assert described.location == declared.location
    hive3.deregister_table(ln.DeregisterTableRequest(id=["hive", name, "t"]))
    hive3.drop_namespace(ln.DropNamespaceRequest(id=["hive", name]))
    with metastore_client(hive_metastore.port) as client, pytest.raises(
        NoSuchObjectException, match=name
    ):
        client.get_database(name)


def test_hive3_without_catalogs_has_no_other_catalog(hive3: Hive3Namespace) -> None:
    with pytest.raises(
        ln.NamespaceNotFoundError, match="catalog 'other' not found: this metastore has only"
    ):
        hive3.namespace_exists(ln.NamespaceExistsRequest(id=["other"]))
    with pytest.raises(
        ln.NamespaceNotFoundError, match="catalog 'other' not found: this metastore has only"
    ):
        hive3.create_namespace(ln.CreateNamespaceRequest(id=["other", "db"]))
    with pytest.raises(
        ln.UnsupportedOperationError, match=r"no catalogs besides 'hive' \(HMS 2\.x\)"
    ):
        hive3.create_namespace(ln.CreateNamespaceRequest(id=["other"]))
    with pytest.raises(ln.NamespaceAlreadyExistsError, match="catalog 'hive' already exists"):
        hive3.create_namespace(ln.CreateNamespaceRequest(id=["hive"]))
    hive3.create_namespace(ln.CreateNamespaceRequest(id=["hive"], mode="exist_ok"))
    with pytest.raises(
        ln.UnsupportedOperationError, match="of a metastore without catalogs cannot be dropped"
    ):
        hive3.drop_namespace(ln.DropNamespaceRequest(id=["hive"], behavior="cascade"))
    with pytest.raises(
        ln.InvalidInputError, match=r"the catalog, database and table, got \['hive', 'default'\]"
    ):
        hive3.describe_table(ln.DescribeTableRequest(id=["hive", "default"]))


def test_concurrent_exist_ok_creates_all_succeed(
    hive2: Hive2Namespace, hive_metastore: HiveMetastoreProcess
) -> None:
    name = unique("race")
    errors: list[Exception] = []

    def create() -> None:
        try:
            hive2.create_namespace(ln.CreateNamespaceRequest(id=[name], mode="exist_ok"))
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=create) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    with metastore_client(hive_metastore.port) as client:
        assert client.get_database(name).name == name
