"""The server and lance-namespace-impls (the official client-side Hive plugins) on the same real
metastore and the same storage root, both ways: hive2 on Hive Metastore 2.3.10, hive3 on Hive
Metastore 3.1.3.

The server is driven over HTTP with the official client (`lance.namespace.RestNamespace`);
impls' `Hive2Namespace` / `Hive3Namespace` are called directly in Python, and what each side
registered is checked in the metastore through impls' own Thrift client. Where impls itself
cannot do a step, the test asserts that it refuses.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import lance_namespace_impls.hive2
import lance_namespace_impls.hive3
import pyarrow as pa
import pytest
from lance.namespace import RestNamespace
from lance_namespace_impls.rest_client import InvalidInputException

from tests.support.adapter import running_server
from tests.support.common import unique
from tests.support.interop import alter_namespace, in_id_order, query_table, read_rows
from tests.support.lance_data import arrow_stream

ROWS = pa.table({"id": [1, 2, 3], "name": ["a", "b", None], "score": [0.5, None, 2.25]})
MORE_ROWS = pa.table({"id": [4], "name": ["d"], "score": [9.0]})


@dataclass
class Sides:
    """One backend (hive2 or hive3) seen by both tools on the same metastore and root."""

    rest: RestNamespace  # the server, over HTTP
    url: str
    impls: Any  # lance_namespace_impls' Hive2Namespace or Hive3Namespace
    prefix: list[str]  # the levels above a database: [] (hive2) or ["hive"] (hive3)
    root: Path

    def ns(self, database: str) -> list[str]:
        return [*self.prefix, database]

    def table(self, database: str, name: str) -> list[str]:
        return [*self.prefix, database, name]

    def stored(self, database: str, name: str) -> Any:
        """The metastore's table object, through impls' Thrift client."""
        with self.impls.client as client:
            return client.get_table(database, name)

    def stored_database(self, database: str) -> Any:
        with self.impls.client as client:
            return client.get_database(database)


IMPLS_CLASSES = {
    "hive2": lance_namespace_impls.hive2.Hive2Namespace,
    "hive3": lance_namespace_impls.hive3.Hive3Namespace,
}


# hive2 on the real HMS 2.3.10, hive3 on the real HMS 3.1.3 (catalog `hive`).
METASTORES = {"hive2": "hive_metastore", "hive3": "hive3_metastore"}


@pytest.fixture(scope="module", params=["hive2", "hive3"])
def sides(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Sides]:
    impl = request.param
    metastore = request.getfixturevalue(METASTORES[impl])
    root = tmp_path_factory.mktemp(f"interop-{impl}")
    properties = {"uri": metastore.uri, "root": str(root)}
    impls = IMPLS_CLASSES[impl](**properties)
    with running_server(impl, properties) as url:
        yield Sides(RestNamespace(uri=url), url, impls, ["hive"] if impl == "hive3" else [], root)
    impls.close()


def impls_database(sides: Sides, **properties: str) -> str:
    database = unique("impls")
    sides.impls.create_namespace(
        ln.CreateNamespaceRequest(id=sides.ns(database), properties=properties or None)
    )
    return database


def server_database(sides: Sides, **properties: str) -> str:
    database = unique("srv")
    sides.rest.create_namespace(
        ln.CreateNamespaceRequest(id=sides.ns(database), properties=properties or None)
    )
    return database


# -- namespaces ------------------------------------------------------------------------------


def test_namespace_made_by_impls_is_served_under_both_key_sets(sides: Sides) -> None:
    location = sides.root / "elsewhere.db"
    database = impls_database(
        sides, comment="sales", owner="alice", location=str(location), team="bi"
    )
    listed = sides.rest.list_namespaces(ln.ListNamespacesRequest(id=sides.prefix)).namespaces
    assert database in listed

    described = sides.rest.describe_namespace(ln.DescribeNamespaceRequest(id=sides.ns(database)))
    assert described.properties == {
        "team": "bi",
        "comment": "sales", "database.description": "sales",
        "owner": "alice", "database.owner": "alice",
        "location": str(location), "database.location-uri": str(location),
        "database.owner-type": "USER",
    }


def test_namespace_made_by_the_server_is_read_by_impls(sides: Sides) -> None:
    database = server_database(
        sides, **{"database.description": "spec keys", "database.owner": "bob", "tier": "gold"}
    )
    other = server_database(sides, comment="impls keys", owner="carol")

    listed = sides.impls.list_namespaces(ln.ListNamespacesRequest(id=sides.prefix)).namespaces
    assert {database, other} <= set(listed)
    seen = sides.impls.describe_namespace(ln.DescribeNamespaceRequest(id=sides.ns(database)))
    # The server gives every namespace it creates a location: {root}/{database}.db.
    assert seen.properties == {
        "comment": "spec keys", "owner": "bob", "tier": "gold",
        "location": f"file:{sides.root}/{database}.db",
    }
    stored = sides.stored_database(other)
    assert (stored.description, stored.ownerName, stored.parameters) == ("impls keys", "carol", {})


def test_namespace_properties_altered_under_either_key(sides: Sides) -> None:
    database = impls_database(sides, comment="before", owner="alice")
    url, namespace = sides.url, sides.ns(database)

    answer = alter_namespace(url, namespace, set_properties={"owner": "dave", "tier": "gold"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["properties"]["database.owner"] == "dave"
    answer = alter_namespace(url, namespace, set_properties={"database.owner": "erin"})
    assert answer.json()["properties"]["owner"] == "erin"

    seen = sides.impls.describe_namespace(ln.DescribeNamespaceRequest(id=namespace))
    assert (seen.properties["owner"], seen.properties["tier"]) == ("erin", "gold")
    conflicting = {"owner": "x", "database.owner": "y"}
    assert alter_namespace(url, namespace, set_properties=conflicting).json()["code"] == 13
    assert alter_namespace(url, namespace, unset_properties=["comment"]).json()["code"] == 13


def test_namespaces_dropped_by_the_other_side(sides: Sides) -> None:
    made_by_impls, made_by_server = impls_database(sides), server_database(sides)

    sides.rest.drop_namespace(ln.DropNamespaceRequest(id=sides.ns(made_by_impls)))
    sides.impls.drop_namespace(ln.DropNamespaceRequest(id=sides.ns(made_by_server)))

    for database in (made_by_impls, made_by_server):
        with pytest.raises(ln.NamespaceNotFoundError, match=f"namespace not found: {database}"):
            sides.rest.describe_namespace(ln.DescribeNamespaceRequest(id=sides.ns(database)))
    # impls itself cannot drop a namespace with CASCADE.
    database = impls_database(sides)
    with pytest.raises(InvalidInputException, match="Cascade behavior is not supported"):
        sides.impls.drop_namespace(
            ln.DropNamespaceRequest(id=sides.ns(database), behavior="Cascade")
        )


# -- tables created with data ----------------------------------------------------------------


def test_table_created_with_data_by_impls_is_served(sides: Sides) -> None:
    database = impls_database(sides)
    table_id = sides.table(database, "orders")
    lance.write_dataset(ROWS, namespace_client=sides.impls, table_id=table_id, mode="create")

    stored = sides.stored(database, "orders")  # the measured facts of issue 17
    assert stored.tableType == "MANAGED_TABLE"
    assert stored.parameters["empty_table"] == "true"  # impls leaves it so after the write
    assert stored.parameters["managed_by"] == "storage"
    assert [(c.name, c.type) for c in stored.sd.cols] == [("__placeholder_id", "bigint")]
    assert stored.sd.location == f"file:{sides.root}/{database}.db/orders"

    rest = sides.rest
    assert rest.list_tables(ln.ListTablesRequest(id=sides.ns(database))).tables == ["orders"]
    described = rest.describe_table(ln.DescribeTableRequest(id=table_id))
    assert described.location == f"{sides.root}/{database}.db/orders"
    assert rest.count_table_rows(ln.CountTableRowsRequest(id=table_id)).count == 3
    assert in_id_order(query_table(rest, table_id)) == ROWS.to_pylist()
    assert read_rows(rest, table_id) == ROWS.to_pylist()

    rest.insert_into_table(ln.InsertIntoTableRequest(id=table_id), arrow_stream(MORE_ROWS))
    assert sides.stored(database, "orders").parameters["empty_table"] == "false"
    expected = pa.concat_tables([ROWS, MORE_ROWS]).to_pylist()
    assert read_rows(sides.impls, table_id) == expected
    assert sides.stored(database, "orders").tableType == "MANAGED_TABLE"


def test_table_created_with_data_by_the_server_is_read_by_impls(sides: Sides) -> None:
    database = server_database(sides)
    table_id = sides.table(database, "orders")
    sides.rest.create_table(ln.CreateTableRequest(id=table_id), arrow_stream(ROWS))

    stored = sides.stored(database, "orders")  # as shared/spec/hive3.md defines
    assert (stored.tableType, stored.parameters["EXTERNAL"]) == ("EXTERNAL_TABLE", "TRUE")
    assert stored.parameters["table_type"] == "lance"
    assert "empty_table" not in stored.parameters

    impls = sides.impls
    assert impls.list_tables(ln.ListTablesRequest(id=sides.ns(database))).tables == ["orders"]
    described = impls.describe_table(ln.DescribeTableRequest(id=table_id, check_declared=True))
    assert described.location == f"file:{sides.root}/{database}.db/orders"
    assert described.is_only_declared is False
    assert read_rows(impls, table_id) == ROWS.to_pylist()
    # impls itself cannot describe the version and schema; the server can.
    detailed = ln.DescribeTableRequest(id=table_id, load_detailed_metadata=True)
    with pytest.raises(ValueError, match="load_detailed_metadata=true is not supported"):
        impls.describe_table(detailed)
    assert sides.rest.describe_table(detailed).version == 1


# -- tables declared, then written by pylance -------------------------------------------------


def test_table_declared_by_impls_then_written(sides: Sides) -> None:
    database = impls_database(sides)
    first, second = sides.table(database, "first"), sides.table(database, "second")
    for table_id in (first, second):
        sides.impls.declare_table(ln.DeclareTableRequest(id=table_id))
    rest = sides.rest

    assert rest.describe_table(ln.DescribeTableRequest(id=first, check_declared=True)
                               ).is_only_declared is True
    listed = rest.list_tables(ln.ListTablesRequest(id=sides.ns(database), include_declared=True))
    assert listed.tables == ["first", "second"]
    # pylance writes through the server; then the server's own first write of rows.
    lance.write_dataset(ROWS, namespace_client=rest, table_id=first, mode="append")
    rest.insert_into_table(ln.InsertIntoTableRequest(id=second), arrow_stream(ROWS))

    assert sides.stored(database, "first").parameters["empty_table"] == "true"  # not the server
    assert sides.stored(database, "second").parameters["empty_table"] == "false"
    for table_id in (first, second):
        assert read_rows(sides.impls, table_id) == ROWS.to_pylist()
        assert read_rows(rest, table_id) == ROWS.to_pylist()


def test_table_declared_by_the_server_then_written_through_impls(sides: Sides) -> None:
    database = server_database(sides)
    table_id = sides.table(database, "events")
    declared = sides.rest.declare_table(ln.DeclareTableRequest(id=table_id))
    assert declared.location == f"{sides.root}/{database}.db/events"
    assert sides.impls.describe_table(ln.DescribeTableRequest(id=table_id, check_declared=True)
                                      ).is_only_declared is True

    lance.write_dataset(ROWS, namespace_client=sides.impls, table_id=table_id, mode="append")

    assert read_rows(sides.rest, table_id) == ROWS.to_pylist()
    assert sides.rest.count_table_rows(ln.CountTableRowsRequest(id=table_id)).count == 3


def test_impls_places_tables_where_the_server_would(sides: Sides) -> None:
    database = server_database(sides)
    ours, theirs = sides.table(database, "ours"), sides.table(database, "theirs")
    by_server = sides.rest.declare_table(ln.DeclareTableRequest(id=ours)).location
    by_impls = sides.impls.declare_table(ln.DeclareTableRequest(id=theirs)).location
    assert by_server == f"{sides.root}/{database}.db/ours"
    assert by_impls == f"{sides.root}/{database}.db/theirs"


# -- table properties --------------------------------------------------------------------------


def test_table_properties_both_ways(sides: Sides) -> None:
    database = server_database(sides)
    ours, theirs = sides.table(database, "ours"), sides.table(database, "theirs")
    sides.rest.declare_table(ln.DeclareTableRequest(id=ours, properties={"owner_team": "bi"}))
    sides.impls.declare_table(ln.DeclareTableRequest(id=theirs, properties={"source": "etl"}))

    seen_by_impls = sides.impls.describe_table(ln.DescribeTableRequest(id=ours)).properties
    assert (seen_by_impls["owner_team"], seen_by_impls["table_type"]) == ("bi", "lance")
    seen_by_server = sides.rest.describe_table(ln.DescribeTableRequest(id=theirs)).properties
    assert {key: seen_by_server[key] for key in ("source", "table_type", "managed_by")} == {
        "source": "etl", "table_type": "lance", "managed_by": "storage"
    }


# -- rename, deregister, drop ------------------------------------------------------------------


def test_rename_of_an_impls_table_keeps_its_data_and_kind(sides: Sides) -> None:
    database = impls_database(sides)
    old, new = sides.table(database, "old"), sides.table(database, "new")
    lance.write_dataset(ROWS, namespace_client=sides.impls, table_id=old, mode="create")

    sides.rest.rename_table(ln.RenameTableRequest(id=old, new_table_name="new"))

    stored = sides.stored(database, "new")  # HMS would have moved a managed table's directory
    assert stored.sd.location == f"file:{sides.root}/{database}.db/old"
    assert (stored.tableType, "EXTERNAL" in stored.parameters) == ("MANAGED_TABLE", False)
    assert read_rows(sides.impls, new) == ROWS.to_pylist()


def test_deregister_both_ways_keeps_the_data(sides: Sides) -> None:
    database = server_database(sides)
    ours, theirs = sides.table(database, "ours"), sides.table(database, "theirs")
    sides.rest.create_table(ln.CreateTableRequest(id=ours), arrow_stream(ROWS))
    lance.write_dataset(ROWS, namespace_client=sides.impls, table_id=theirs, mode="create")

    gone_ours = sides.impls.deregister_table(ln.DeregisterTableRequest(id=ours))
    gone_theirs = sides.rest.deregister_table(ln.DeregisterTableRequest(id=theirs))

    assert sides.rest.list_tables(ln.ListTablesRequest(id=sides.ns(database))).tables == []
    for location in (gone_ours.location, gone_theirs.location):
        assert lance.dataset(location).to_table().to_pylist() == ROWS.to_pylist()
    # impls itself cannot register a table, so only the server can adopt the data again.
    with pytest.raises(ln.UnsupportedOperationError, match="Not supported: register_table"):
        sides.impls.register_table(ln.RegisterTableRequest(id=ours, location=gone_ours.location))
    sides.rest.register_table(ln.RegisterTableRequest(id=ours, location=gone_ours.location))
    assert read_rows(sides.impls, ours) == ROWS.to_pylist()


def test_drop_of_impls_tables_deletes_only_what_the_server_owns(
    sides: Sides, tmp_path: Path
) -> None:
    database = impls_database(sides)
    inside, outside = sides.table(database, "inside"), sides.table(database, "outside")
    lance.write_dataset(ROWS, namespace_client=sides.impls, table_id=inside, mode="create")
    foreign = tmp_path / "outside-the-root.lance"  # impls takes any location
    sides.impls.declare_table(ln.DeclareTableRequest(id=outside, location=str(foreign)))
    lance.write_dataset(ROWS, namespace_client=sides.impls, table_id=outside, mode="append")

    sides.rest.drop_table(ln.DropTableRequest(id=inside))
    sides.rest.drop_table(ln.DropTableRequest(id=outside))

    with sides.impls.client as client:
        assert client.get_all_tables(database) == []
    # At its own path, but written by impls: no ownership record names it, so the server
    # removed the entry and left the data (backends/ownership.py).
    assert lance.dataset(str(sides.root / f"{database}.db" / "inside")).count_rows() == len(ROWS)
    # A managed table outside the root: HMS was not asked to delete it, nor did the server.
    assert lance.dataset(str(foreign)).to_table().to_pylist() == ROWS.to_pylist()


def test_drop_by_impls_of_a_server_table_keeps_the_external_data(sides: Sides) -> None:
    database = server_database(sides)
    table_id = sides.table(database, "ours")
    sides.rest.create_table(ln.CreateTableRequest(id=table_id), arrow_stream(ROWS))

    dropped = sides.impls.drop_table(ln.DropTableRequest(id=table_id))

    with pytest.raises(
        ln.TableNotFoundError, match=f"table {table_id[-2]}.{table_id[-1]} not found"
    ):
        sides.rest.describe_table(ln.DescribeTableRequest(id=table_id))
    # impls asks HMS to delete the data (deleteData=True); HMS keeps an external table's data.
    location = dropped.location.removeprefix("file:")
    assert lance.dataset(location).to_table().to_pylist() == ROWS.to_pylist()
