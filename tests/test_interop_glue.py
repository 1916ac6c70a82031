"""Glue interoperation with lance-namespace-impls, both ways, on moto's Glue and S3.

One side is the server (`--impl glue`) driven over HTTP with the official REST client; the
other is impls' own `GlueNamespace` (0.4.2) called directly in Python, as an engine embedding
it would. Both see the same moto Glue catalog and the same S3 bucket. Rows are compared cell
for cell; where impls itself cannot do a step, the test asserts that it cannot.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import lance
import lance_namespace
import pyarrow as pa
import pytest
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    DropTableRequest,
    InsertIntoTableRequest,
    LanceNamespace,
    ListNamespacesRequest,
    ListTablesRequest,
    RegisterTableRequest,
    TableNotFoundError,
    UnsupportedOperationError,
)
from lance_namespace_impls.glue import GlueNamespace as ImplsGlueNamespace

from tests.support.adapter import running_server
from tests.support.glue import glue_properties
from tests.support.interop import alter_namespace, query_table, read_table, same_rows
from tests.support.lance_data import arrow_stream, sample_table

REGION = "us-east-1"
BUCKET = "lake"
ROOT = f"s3://{BUCKET}/warehouse"
IMPLS_DEFAULT_BUCKET = "lance-namespace"  # impls' fixed default for databases without location


@dataclass(frozen=True)
class Sides:
    """The two clients of one Glue catalog and one bucket."""

    server: LanceNamespace  # the official REST client, talking to the server
    url: str
    impls: ImplsGlueNamespace
    glue: Any  # raw boto3 Glue, to look at what each side stored
    s3: Any
    storage: dict[str, str]  # pylance's own options (the server never answers credentials)


@pytest.fixture(scope="module")
def sides(moto_endpoint) -> Iterator[Sides]:
    moto_endpoint.reset()
    s3 = moto_endpoint.client("s3")
    for bucket in (BUCKET, IMPLS_DEFAULT_BUCKET):
        s3.create_bucket(Bucket=bucket)
    storage = {
        "aws_endpoint": moto_endpoint.url,
        "aws_region": REGION,
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "allow_http": "true",
    }
    prefixed = {f"storage.{key}": value for key, value in storage.items()}
    impls = ImplsGlueNamespace(
        endpoint=moto_endpoint.url,
        region=REGION,
        access_key_id="testing",
        secret_access_key="testing",
        root=ROOT,
        **prefixed,
    )
    properties = glue_properties(moto_endpoint.url, root=ROOT, **prefixed)
    # Default settings: impls changes the catalog behind the server's back, which the server
    # must see at once.
    with running_server("glue", properties) as url:
        server = lance_namespace.connect("rest", {"uri": url})
        yield Sides(server, url, impls, moto_endpoint.client("glue"), s3, storage)


def database(sides: Sides, name: str) -> dict[str, Any]:
    return sides.glue.get_database(Name=name)["Database"]


def glue_table(sides: Sides, namespace: str, table: str) -> dict[str, Any]:
    return sides.glue.get_table(DatabaseName=namespace, Name=table)["Table"]


def s3_keys(sides: Sides, location: str) -> list[str]:
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    listed = sides.s3.list_objects_v2(Bucket=bucket, Prefix=prefix + "/")
    return [item["Key"] for item in listed.get("Contents", [])]


# -- namespaces and their properties -------------------------------------------------------------


def test_namespace_made_by_impls_reads_through_the_server(sides: Sides):
    location = f"{ROOT}/impls_ns"
    properties = {"description": "from impls", "location": location, "team": "bi"}
    sides.impls.create_namespace(CreateNamespaceRequest(id=["impls_ns"], properties=properties))
    stored = database(sides, "impls_ns")  # impls keeps these two in Glue's own fields
    assert (stored["Description"], stored["LocationUri"]) == ("from impls", location)
    assert stored["Parameters"] == {"team": "bi"}

    assert "impls_ns" in sides.server.list_namespaces(ListNamespacesRequest(id=[])).namespaces
    described = sides.server.describe_namespace(DescribeNamespaceRequest(id=["impls_ns"]))
    assert described.properties == {
        **properties,
        "database.description": "from impls",
        "database.location-uri": location,
    }
    sides.server.drop_namespace(DropNamespaceRequest(id=["impls_ns"]))
    assert "impls_ns" not in sides.impls.list_namespaces(ListNamespacesRequest()).namespaces


def test_namespace_made_by_the_server_reads_through_impls(sides: Sides):
    properties = {"database.description": "from the server", "owner": "ana"}
    sides.server.create_namespace(CreateNamespaceRequest(id=["server_ns"], properties=properties))
    stored = database(sides, "server_ns")
    # A location for every server namespace: impls puts its tables where the server does.
    assert stored["LocationUri"] == f"{ROOT}/server_ns"
    assert stored["Description"] == "from the server"
    assert stored["Parameters"] == {"owner": "ana"}

    assert "server_ns" in sides.impls.list_namespaces(ListNamespacesRequest()).namespaces
    seen = sides.impls.describe_namespace(DescribeNamespaceRequest(id=["server_ns"])).properties
    assert seen == {
        "owner": "ana",
        "description": "from the server",
        "location": f"{ROOT}/server_ns",
    }
    sides.impls.drop_namespace(DropNamespaceRequest(id=["server_ns"]))
    assert "server_ns" not in sides.server.list_namespaces(ListNamespacesRequest(id=[])).namespaces


def test_properties_are_written_under_either_key(sides: Sides):
    sides.impls.create_namespace(CreateNamespaceRequest(id=["props"]))
    assert "LocationUri" not in database(sides, "props")
    moved = f"{ROOT}/props"  # the namespace's own path: the only one the server accepts
    change = {"description": "one", "database.location-uri": moved, "k": "v"}
    assert alter_namespace(sides.url, ["props"], set_properties=change).status_code == 200
    stored = database(sides, "props")
    assert (stored["Description"], stored["LocationUri"]) == ("one", moved)
    assert stored["Parameters"] == {"k": "v"}
    seen = sides.impls.describe_namespace(DescribeNamespaceRequest(id=["props"])).properties
    assert seen == {"description": "one", "location": moved, "k": "v"}

    unset_keys = ["location", "database.description"]
    unset = alter_namespace(sides.url, ["props"], unset_properties=unset_keys)
    assert unset.status_code == 200
    assert unset.json()["properties"] == {"k": "v"}
    assert {"Description", "LocationUri"}.isdisjoint(database(sides, "props"))
    # Two spellings of one field must agree; a location outside the root, or another one
    # than the namespace's own path (its tables would land in others'), is refused.
    for refused in ({"description": "a", "database.description": "b"}, {"location": "s3://x/y"},
                    {"location": f"{ROOT}/elsewhere"}):
        answer = alter_namespace(sides.url, ["props"], set_properties=refused)
        assert (answer.status_code, answer.json()["code"]) == (400, 13)
    assert database(sides, "props")["Parameters"] == {"k": "v"}
    sides.server.drop_namespace(DropNamespaceRequest(id=["props"]))


def test_default_table_locations(sides: Sides):
    sides.impls.create_namespace(CreateNamespaceRequest(id=["bare"]))  # no location
    sides.server.create_namespace(CreateNamespaceRequest(id=["placed"]))
    # impls ignores its `root` in a database without LocationUri: a fixed bucket.
    bare = sides.impls.declare_table(DeclareTableRequest(id=["bare", "t"]))
    assert bare.location == f"s3://{IMPLS_DEFAULT_BUCKET}/bare/t.lance"
    server_bare = sides.server.declare_table(DeclareTableRequest(id=["bare", "u"]))
    assert server_bare.location == f"{ROOT}/bare/u.lance"
    # In a namespace the server made, both put tables in the same place.
    placed = sides.impls.declare_table(DeclareTableRequest(id=["placed", "t"]))
    assert placed.location == f"{ROOT}/placed/t.lance"
    server_placed = sides.server.declare_table(DeclareTableRequest(id=["placed", "u"]))
    assert server_placed.location == f"{ROOT}/placed/u.lance"
    for table_id in (["bare", "t"], ["bare", "u"], ["placed", "t"], ["placed", "u"]):
        sides.server.deregister_table(DeregisterTableRequest(id=table_id))
    for namespace in ("bare", "placed"):
        sides.server.drop_namespace(DropNamespaceRequest(id=[namespace]))


# -- tables ------------------------------------------------------------------------------------


def test_table_created_with_data_by_impls(sides: Sides):
    sides.server.create_namespace(CreateNamespaceRequest(id=["imp"]))
    first = sample_table(20)
    # impls has no create_table; pylance creates through it (DeclareTable, then the write).
    with pytest.raises(UnsupportedOperationError, match="Not supported: create_table"):
        sides.impls.create_table(CreateTableRequest(id=["imp", "t"]), arrow_stream(first))
    lance.write_dataset(first, namespace_client=sides.impls, table_id=["imp", "t"])
    stored = glue_table(sides, "imp", "t")
    assert stored["Parameters"] == {"table_type": "LANCE", "managed_by": "storage",
                                    "empty_table": "true"}  # impls never clears the flag

    assert sides.server.list_tables(ListTablesRequest(id=["imp"])).tables == ["t"]
    described = sides.server.describe_table(DescribeTableRequest(id=["imp", "t"]))
    assert described.location == f"{ROOT}/imp/t.lance"
    assert sides.server.count_table_rows(CountTableRowsRequest(id=["imp", "t"])).count == 20
    same_rows(query_table(sides.server, ["imp", "t"], k=100), first)

    more = sample_table(5, start=20)
    sides.server.insert_into_table(InsertIntoTableRequest(id=["imp", "t"]), arrow_stream(more))
    # The server wrote data: the flag says so now; the rest of impls' entry is kept.
    after = glue_table(sides, "imp", "t")
    assert after["Parameters"]["empty_table"] == "false"
    assert after["StorageDescriptor"]["Columns"] == stored["StorageDescriptor"]["Columns"]
    same_rows(read_table(sides.impls, ["imp", "t"]), pa.concat_tables([first, more]))


def test_table_created_with_data_by_the_server(sides: Sides):
    sides.server.create_namespace(CreateNamespaceRequest(id=["srv"]))
    first = sample_table(12)
    created = sides.server.create_table(CreateTableRequest(id=["srv", "t"]), arrow_stream(first))
    assert glue_table(sides, "srv", "t")["Parameters"] == {"table_type": "lance"}  # glue.md

    assert sides.impls.list_tables(ListTablesRequest(id=["srv"])).tables == ["t"]
    described = sides.impls.describe_table(DescribeTableRequest(id=["srv", "t"]))
    assert described.location == created.location == f"{ROOT}/srv/t.lance"
    more = sample_table(3, start=12)
    same_rows(read_table(sides.impls, ["srv", "t"]), first)
    lance.write_dataset(more, namespace_client=sides.impls, table_id=["srv", "t"], mode="append")
    assert sides.server.count_table_rows(CountTableRowsRequest(id=["srv", "t"])).count == 15
    read_back = read_table(sides.server, ["srv", "t"], sides.storage)
    same_rows(read_back, pa.concat_tables([first, more]))


def test_declared_by_one_side_written_by_pylance_through_the_other(sides: Sides):
    sides.server.create_namespace(CreateNamespaceRequest(id=["dec"]))
    sides.impls.declare_table(DeclareTableRequest(id=["dec", "by_impls"]))
    sides.server.declare_table(DeclareTableRequest(id=["dec", "by_server"]))
    for side in (sides.server, sides.impls):
        assert side.list_tables(ListTablesRequest(id=["dec"])).tables == ["by_impls", "by_server"]
    checked = sides.server.describe_table(
        DescribeTableRequest(id=["dec", "by_impls"], check_declared=True)
    )
    assert checked.is_only_declared is True

    data = sample_table(7)
    lance.write_dataset(
        data, namespace_client=sides.server, table_id=["dec", "by_impls"], mode="append",
        storage_options=sides.storage,
    )
    lance.write_dataset(
        data, namespace_client=sides.impls, table_id=["dec", "by_server"], mode="append"
    )
    for table in ("by_impls", "by_server"):
        same_rows(read_table(sides.server, ["dec", table], sides.storage), data)
        same_rows(read_table(sides.impls, ["dec", table]), data)
    # pylance wrote behind both namespaces: nothing told Glue, so impls' flag still says empty.
    assert glue_table(sides, "dec", "by_impls")["Parameters"]["empty_table"] == "true"


def test_deregister_and_drop(sides: Sides):
    sides.server.create_namespace(CreateNamespaceRequest(id=["gone"]))
    sides.impls.create_namespace(CreateNamespaceRequest(id=["outside"]))  # impls' default bucket
    data = sample_table(4)
    for table in ("a", "b", "c"):
        lance.write_dataset(data, namespace_client=sides.impls, table_id=["gone", table])
    lance.write_dataset(data, namespace_client=sides.impls, table_id=["outside", "t"])
    sides.server.create_table(CreateTableRequest(id=["gone", "mine"]), arrow_stream(data))

    # Deregister, each side on the other's table: the entry goes, the data stays.
    sides.server.deregister_table(DeregisterTableRequest(id=["gone", "a"]))
    sides.impls.deregister_table(DeregisterTableRequest(id=["gone", "mine"]))
    assert sides.impls.list_tables(ListTablesRequest(id=["gone"])).tables == ["b", "c"]
    assert sides.server.list_tables(ListTablesRequest(id=["gone"])).tables == ["b", "c"]
    for table in ("a", "mine"):
        assert s3_keys(sides, f"{ROOT}/gone/{table}.lance")

    # impls cannot drop a Glue table at all.
    with pytest.raises(UnsupportedOperationError, match="Not supported: drop_table"):
        sides.impls.drop_table(DropTableRequest(id=["gone", "b"]))
    # The server deletes only data whose ownership record names the table: impls' table b
    # has none, so its entry goes and its data stays; the server's own table goes whole.
    sides.server.drop_table(DropTableRequest(id=["gone", "b"]))
    assert s3_keys(sides, f"{ROOT}/gone/b.lance")
    sides.server.drop_table(DropTableRequest(id=["gone", "c"]))
    sides.server.register_table(RegisterTableRequest(
        id=["gone", "mine"], location=f"{ROOT}/gone/mine.lance"))
    sides.server.drop_table(DropTableRequest(id=["gone", "mine"]))
    assert s3_keys(sides, f"{ROOT}/gone/mine.lance") == []
    outside = f"s3://{IMPLS_DEFAULT_BUCKET}/outside/t.lance"
    assert sides.server.drop_table(DropTableRequest(id=["outside", "t"])).location == outside
    assert s3_keys(sides, outside)  # outside the root: the entry went, the data stayed
    for table_id in (["gone", "b"], ["outside", "t"]):
        with pytest.raises(TableNotFoundError, match=f"{table_id[-1]} not found"):
            sides.server.describe_table(DescribeTableRequest(id=table_id))
    with pytest.raises(RuntimeError, match="does not exist"):
        sides.impls.describe_table(DescribeTableRequest(id=["outside", "t"]))


def test_what_impls_cannot_do_on_glue(sides: Sides):
    """Steps the server does and impls 0.4.2 refuses; the tests above do them on the server."""
    sides.server.create_namespace(CreateNamespaceRequest(id=["limits"]))
    location = f"{ROOT}/limits/t.lance"
    lance.write_dataset(sample_table(2), location, storage_options=sides.storage)
    with pytest.raises(UnsupportedOperationError, match="Not supported: register_table"):
        sides.impls.register_table(RegisterTableRequest(id=["limits", "t"], location=location))
    assert sides.server.register_table(
        RegisterTableRequest(id=["limits", "t"], location=location)
    ).location == location
    with pytest.raises(RuntimeError, match="load_detailed_metadata"):
        sides.impls.describe_table(
            DescribeTableRequest(id=["limits", "t"], load_detailed_metadata=True)
        )
    with pytest.raises(ValueError, match="exactly one level"):  # no catalogs, databases only
        sides.impls.create_namespace(CreateNamespaceRequest(id=["limits", "child"]))
    assert not hasattr(sides.impls, "alter_namespace")  # not in the interface at all
    sides.server.drop_table(DropTableRequest(id=["limits", "t"]))
    sides.server.drop_namespace(DropNamespaceRequest(id=["limits"]))
