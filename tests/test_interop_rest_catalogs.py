"""The unity and iceberg backends and lance-namespace-impls' `UnityNamespace` and
`IcebergNamespace` on one REST catalog, both ways: the Unity stand-in, and Apache Iceberg's REST
reference server (the session's, `tests/support/iceberg_rest_server.py`).

The server is driven over HTTP by the official client (`lance_namespace.connect("rest", ...)`);
impls talks to the same catalog directly. impls always puts a warehouse prefix in its paths,
which the reference server (one catalog at `/v1/...`, no prefix announced) does not serve, so
on Iceberg both sides reach the server through `prefix_router`, which announces the prefix and
forwards everything else unchanged. Tables are written by pylance through either side, and rows
are compared cell for cell. Each test runs on both catalogs (`rest_catalog_sides`) unless its
name says which; where impls itself cannot do a step, a test says so by asserting the failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pytest
from lance_namespace import (
    AlterTableDropColumnsRequest,
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    DropTableRequest,
    InsertIntoTableRequest,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceNotEmptyError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from lance_namespace_impls.iceberg import IcebergNamespace as ImplsIcebergNamespace
from lance_namespace_impls.rest_client import (
    InternalException,
    InvalidInputException,
    NamespaceNotFoundException,
)

from tests.support.interop import (
    RestCatalogSides,
    alter_namespace,
    read_rows,
)
from tests.support.lance_data import arrow_stream, sample_table

# What the server describes for a table impls wrote: impls' Unity tables say who manages them.
IMPLS_TABLE_PROPERTIES = {
    "unity": {"table_type": "lance", "managed_by": "catalog"},
    "iceberg": {"table_type": "lance"},
}

# What the reference server adds to what a client sets (pyiceberg sees them too): a namespace's
# default `location` in its warehouse, and the write defaults of a new table.
CATALOG_DEFAULTS = {"location", "write.parquet.compression-codec"}


def set_by_clients(sides: RestCatalogSides, properties: dict[str, str]) -> dict[str, str]:
    """`properties` less what the Iceberg catalog added itself."""
    if sides.kind != "iceberg":
        return properties
    return {key: value for key, value in properties.items() if key not in CATALOG_DEFAULTS}


# How impls' error names a namespace that still holds tables, when it tries to drop it.
NOT_EMPTY_IN_IMPLS = {"unity": "FAILED_PRECONDITION", "iceberg": "not empty"}


def test_namespaces_impls_creates_are_the_servers_and_properties_round_trip(
    rest_catalog_sides: RestCatalogSides,
) -> None:
    sides, rest, impls = rest_catalog_sides, rest_catalog_sides.rest, rest_catalog_sides.impls
    namespace = sides.catalog.new_namespace("imp")
    properties = {"owner": "alice", "comment": "nightly loads"}
    impls.create_namespace(CreateNamespaceRequest(id=namespace, properties=properties))

    listed = rest.list_namespaces(ListNamespacesRequest(id=namespace[:-1])).namespaces
    if sides.nests:  # the warehouse holds other tests' namespaces; this one has a child
        assert namespace[-1] in listed
        impls.create_namespace(CreateNamespaceRequest(id=[*namespace, "nested"]))
        nested = rest.list_namespaces(ListNamespacesRequest(id=namespace))
        assert nested.namespaces == ["nested"]
    else:  # the new catalog holds this schema only
        assert listed == [namespace[-1]]
    described = rest.describe_namespace(DescribeNamespaceRequest(id=namespace))
    assert set_by_clients(sides, described.properties) == properties

    altered = alter_namespace(sides.catalog.url, namespace, set_properties={"owner": "bob"})
    assert altered.status_code == 200, altered.text
    read_back = impls.describe_namespace(DescribeNamespaceRequest(id=namespace))
    expected = {"owner": "bob", "comment": "nightly loads"}
    assert set_by_clients(sides, read_back.properties) == expected
    unset = alter_namespace(sides.catalog.url, namespace, unset_properties=["comment"])
    assert unset.status_code == 200, unset.text
    read_back = impls.describe_namespace(DescribeNamespaceRequest(id=namespace))
    assert set_by_clients(sides, read_back.properties) == {"owner": "bob"}


def test_namespaces_the_server_creates_are_impls(rest_catalog_sides: RestCatalogSides) -> None:
    sides, rest, impls = rest_catalog_sides, rest_catalog_sides.rest, rest_catalog_sides.impls
    namespace = sides.catalog.new_namespace("srv")
    parent = namespace[:-1]
    properties = {"owner": "bob", "location": "s3://bucket/sales"}
    rest.create_namespace(CreateNamespaceRequest(id=namespace, properties=properties))

    if sides.nests:
        rest.create_namespace(CreateNamespaceRequest(id=[*namespace, "deep"]))
        listed = impls.list_namespaces(ListNamespacesRequest(id=parent)).namespaces
        assert sides.impls_name(namespace) in listed
        children = impls.list_namespaces(ListNamespacesRequest(id=namespace))
        assert children.namespaces == [sides.impls_name([*namespace, "deep"])]
    else:  # Unity's catalogs are listed at the top; the new one holds this schema only
        assert parent[0] in impls.list_namespaces(ListNamespacesRequest(id=[])).namespaces
        listed = impls.list_namespaces(ListNamespacesRequest(id=parent)).namespaces
        assert listed == [sides.impls_name(namespace)]
    described = impls.describe_namespace(DescribeNamespaceRequest(id=namespace))
    assert described.properties == properties


def test_tables_impls_writes_are_listed_described_read_and_written_by_the_server(
    rest_catalog_sides: RestCatalogSides,
) -> None:
    sides, rest, impls = rest_catalog_sides, rest_catalog_sides.rest, rest_catalog_sides.impls
    rows, more = sample_table(5), sample_table(3, start=5)
    tables = sides.make_tables("impls", rows)
    written, declared = tables.filled, tables.declared

    assert rest.list_tables(ListTablesRequest(id=tables.namespace)).tables == [
        "declared", "filled"
    ]
    with_data = ListTablesRequest(id=tables.namespace, include_declared=False)
    assert rest.list_tables(with_data).tables == ["filled"]
    described = rest.describe_table(DescribeTableRequest(id=written))
    assert described.location == impls.describe_table(DescribeTableRequest(id=written)).location
    assert set_by_clients(sides, described.properties) == IMPLS_TABLE_PROPERTIES[sides.kind]
    assert rest.count_table_rows(CountTableRowsRequest(id=written)).count == 5
    assert read_rows(rest, written) == rows.to_pylist()
    if tables.nested is not None:  # a table in a child namespace is listed there only
        child = ListTablesRequest(id=tables.nested[:-1])
        assert rest.list_tables(child).tables == ["nested"]
        assert read_rows(rest, tables.nested) == rows.to_pylist()
    else:  # impls declares a Unity table with a placeholder column
        assert sides.unity_columns(declared)[0] == "__placeholder_id"

    # The server writes into both; impls reads every row back.
    rest.insert_into_table(InsertIntoTableRequest(id=written), arrow_stream(more))
    rest.insert_into_table(InsertIntoTableRequest(id=declared), arrow_stream(rows))
    assert read_rows(impls, written) == rows.to_pylist() + more.to_pylist()
    assert read_rows(impls, declared) == rows.to_pylist()
    if sides.kind == "unity":
        # The placeholder column is replaced by the columns of the data, and a schema change
        # made through the server reaches Unity's columns too.
        assert sides.unity_columns(declared) == ["id", "name", "vector"]
        properties = impls.describe_table(DescribeTableRequest(id=declared)).properties
        assert properties == IMPLS_TABLE_PROPERTIES["unity"]
        dropping = AlterTableDropColumnsRequest(id=declared, columns=["vector"])
        rest.alter_table_drop_columns(dropping)
        assert sides.unity_columns(declared) == ["id", "name"]


def test_tables_the_server_writes_read_through_impls(
    rest_catalog_sides: RestCatalogSides,
) -> None:
    sides, rest, impls = rest_catalog_sides, rest_catalog_sides.rest, rest_catalog_sides.impls
    rows = sample_table(4)
    tables = sides.make_tables("server", rows)
    created, declared = tables.filled, tables.declared

    listing = impls.list_tables(ListTablesRequest(id=tables.namespace))
    assert listing.tables == ["declared", "filled"]
    with_data = ListTablesRequest(id=tables.namespace, include_declared=False)
    assert impls.list_tables(with_data).tables == ["filled"]
    theirs = impls.describe_table(DescribeTableRequest(id=created))
    assert theirs.location == rest.describe_table(DescribeTableRequest(id=created)).location
    assert set_by_clients(sides, theirs.properties) == {"table_type": "lance"}
    assert read_rows(impls, created) == rows.to_pylist()
    if tables.nested is not None:  # and the table in the child namespace
        assert read_rows(impls, tables.nested) == rows.to_pylist()

    # pylance writes the first data of the server's declared table through impls.
    lance.write_dataset(rows, namespace_client=impls, table_id=declared, mode="append")
    assert rest.count_table_rows(CountTableRowsRequest(id=declared)).count == 4
    assert read_rows(rest, declared) == rows.to_pylist()


def test_deregister_either_way_leaves_the_data(rest_catalog_sides: RestCatalogSides) -> None:
    sides, rest, impls = rest_catalog_sides, rest_catalog_sides.rest, rest_catalog_sides.impls
    namespace = sides.catalog.new_namespace("s")
    rest.create_namespace(CreateNamespaceRequest(id=namespace))
    by_server, by_impls = [*namespace, "by_server"], [*namespace, "by_impls"]
    rows = sample_table(3)
    location = rest.create_table(CreateTableRequest(id=by_server), arrow_stream(rows)).location
    theirs = lance.write_dataset(rows, namespace_client=impls, table_id=by_impls, mode="create")

    impls.deregister_table(DeregisterTableRequest(id=by_server))
    with pytest.raises(TableNotFoundError, match=r"(not found|does not exist): .*\.by_server"):
        rest.describe_table(DescribeTableRequest(id=by_server))
    rest.deregister_table(DeregisterTableRequest(id=by_impls))
    assert impls.list_tables(ListTablesRequest(id=namespace)).tables == []
    assert lance.dataset(location).count_rows() == 3
    assert lance.dataset(theirs.uri).count_rows() == 3


def test_drop_deletes_only_data_the_server_owns(
    rest_catalog_sides: RestCatalogSides, tmp_path: Path
) -> None:
    sides, rest, impls = rest_catalog_sides, rest_catalog_sides.rest, rest_catalog_sides.impls
    elsewhere = sides.catalog.impls(tmp_path / "elsewhere")
    namespace = sides.catalog.new_namespace("d")
    impls.create_namespace(CreateNamespaceRequest(id=namespace))
    inside, outside = [*namespace, "inside"], [*namespace, "outside"]
    rows = sample_table(3)
    in_root = lance.write_dataset(rows, namespace_client=impls, table_id=inside, mode="create")
    out = lance.write_dataset(rows, namespace_client=elsewhere, table_id=outside, mode="create")
    with pytest.raises(
        UnsupportedOperationError, match="Not supported: drop_table"
    ):  # impls cannot drop a Unity or Iceberg table
        impls.drop_table(DropTableRequest(id=outside))

    rest.drop_table(DropTableRequest(id=outside))
    rest.drop_table(DropTableRequest(id=inside))
    assert impls.list_tables(ListTablesRequest(id=namespace)).tables == []
    assert lance.dataset(out.uri).count_rows() == 3  # outside the server's root: kept
    # At the table's own path, but written by another tool: no ownership record names the
    # table, so DropTable removes the entry and leaves the data (backends/ownership.py).
    assert lance.dataset(in_root.uri).count_rows() == 3
    elsewhere.close()


def test_a_namespace_holding_tables_impls_fails_to_drop_and_the_server_refuses_with_3(
    rest_catalog_sides: RestCatalogSides,
) -> None:
    sides, rest, impls = rest_catalog_sides, rest_catalog_sides.rest, rest_catalog_sides.impls
    tables = sides.make_tables("server", sample_table(1))

    # impls reports an internal error (Unity's or Iceberg's own); the server, code 3.
    with pytest.raises(InternalException, match=NOT_EMPTY_IN_IMPLS[sides.kind]):
        impls.drop_namespace(DropNamespaceRequest(id=tables.namespace))
    with pytest.raises(
        NamespaceNotEmptyError, match=r"Cannot delete schema with tables|holds namespaces"
    ):
        rest.drop_namespace(DropNamespaceRequest(id=tables.namespace))


@pytest.mark.parametrize("rest_catalog", ["unity"], indirect=True)
def test_what_impls_cannot_do_on_unity_and_the_server_can(
    rest_catalog_sides: RestCatalogSides,
) -> None:
    rest, impls = rest_catalog_sides.rest, rest_catalog_sides.impls
    namespace = rest_catalog_sides.make_tables("server", sample_table(1)).namespace
    for name in ("t3", "t4"):  # four tables in all, more than the stand-in's page of 3
        rest.create_table(CreateTableRequest(id=[*namespace, name]), arrow_stream(sample_table(1)))
    names = ["declared", "filled", "t3", "t4"]

    # impls reads one page of a listing: the stand-in, like Unity, pages by its own size.
    assert len(impls.list_tables(ListTablesRequest(id=namespace)).tables) == 3
    assert rest.list_tables(ListTablesRequest(id=namespace)).tables == names
    # impls describes only schemas; the server describes catalogs too.
    catalog = namespace[:-1]
    two_levels = rf"Expect a 2-level namespace \(catalog\.schema\) but get {catalog[0]}"
    with pytest.raises(InvalidInputException, match=two_levels):
        impls.describe_namespace(DescribeNamespaceRequest(id=catalog))
    assert rest.describe_namespace(DescribeNamespaceRequest(id=catalog)).properties == {}


@pytest.mark.parametrize("rest_catalog", ["iceberg"], indirect=True)
def test_what_impls_cannot_do_on_iceberg_and_the_server_can(
    rest_catalog_sides: RestCatalogSides,
) -> None:
    rest, impls = rest_catalog_sides.rest, rest_catalog_sides.impls
    namespace = rest_catalog_sides.catalog.new_namespace("ns")
    for level in (namespace, [*namespace, "a"], [*namespace, "a", "b"]):
        rest.create_namespace(CreateNamespaceRequest(id=level))
    rest.create_table(CreateTableRequest(id=[*namespace, "t"]), arrow_stream(sample_table(1)))

    # impls encodes a nested parent twice, so it cannot list below two levels.
    with pytest.raises(InternalException, match="NoSuchNamespaceException"):
        impls.list_namespaces(ListNamespacesRequest(id=[*namespace, "a"]))
    listed = rest.list_namespaces(ListNamespacesRequest(id=[*namespace, "a"]))
    assert listed.namespaces == ["b"]
    # A catalog that sends the warehouse prefix in `overrides` (where the spec lets it win):
    # impls ignores it and finds no namespace; the server follows it.
    iceberg: Any = rest_catalog_sides.catalog.stand_in
    iceberg.state.prefix_style = "overrides"
    fresh = ImplsIcebergNamespace(endpoint=iceberg.url)
    with pytest.raises(
        NamespaceNotFoundException, match=f"Namespace not found: {'.'.join(namespace)}"
    ):
        fresh.describe_namespace(DescribeNamespaceRequest(id=namespace))
    fresh.close()
    assert rest.list_tables(ListTablesRequest(id=namespace)).tables == ["t"]
