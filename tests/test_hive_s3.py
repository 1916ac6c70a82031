"""hive3 with its lakehouse in S3: the real Hive Metastore 3.1.3 reaches moto's S3 through the
real S3A file system (hadoop-aws 3.1.0), as a user's metastore does, while the adapter writes
and reads the Lance data there with pylance.

What S3A does is checked in the bucket itself: HMS makes a directory marker (`<path>/`) for each
catalog, database and declared table it registers, and keeps the `s3://` locations as given.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from hive_metastore.ttypes import GetCatalogRequest
from lance.namespace import RestNamespace

from tests.support.adapter import running_server
from tests.support.common import unique
from tests.support.hive import HiveMetastoreProcess, metastore_client, stored_table
from tests.support.hive_metastore_real import S3_BUCKET, S3Endpoint, require_s3a
from tests.support.interop import read_rows
from tests.support.lance_data import arrow_stream

ROWS = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})


class Lake:
    """The adapter serving hive3 on HMS 3.1.3 with its root at `prefix` in the bucket."""

    def __init__(self, rest: RestNamespace, s3: S3Endpoint, prefix: str, port: int):
        self.rest, self.s3, self.prefix, self.port = rest, s3, prefix, port

    def location(self, *path: str) -> str:
        return self.s3.location("/".join([self.prefix, *path]))

    def markers(self) -> list[str]:
        """The directory markers S3A made under the root, relative to it."""
        start = len(self.prefix) + 1
        return [key[start:] for key in self.s3.keys(self.prefix + "/") if key.endswith("/")]

    def thrift(self) -> Any:
        return metastore_client(self.port)


@pytest.fixture(scope="module")
def lake(hive3_metastore: HiveMetastoreProcess, hive3_s3: S3Endpoint) -> Iterator[Lake]:
    require_s3a()
    prefix = unique("lake")
    properties = {"uri": hive3_metastore.uri, "root": hive3_s3.location(prefix),
                  **hive3_s3.storage_properties()}
    with running_server("hive3", properties) as url:
        yield Lake(RestNamespace(uri=url), hive3_s3, prefix, hive3_metastore.port)


def test_catalog_and_database_directories_are_made_through_s3a(lake: Lake) -> None:
    catalog = unique("cat")
    lake.rest.create_namespace(ln.CreateNamespaceRequest(id=[catalog]))
    assert f"{catalog}/" in lake.markers()
    lake.rest.create_namespace(ln.CreateNamespaceRequest(id=[catalog, "sales"]))
    # S3A replaces the parent's marker by the child's.
    assert f"{catalog}/sales.db/" in lake.markers()

    with lake.thrift() as client:
        stored_catalog = client.get_catalog(GetCatalogRequest(name=catalog)).catalog
        stored_database = client.get_database(f"@{catalog}#sales")
    assert stored_catalog.locationUri == lake.location(catalog)
    assert stored_database.locationUri == lake.location(catalog, "sales.db")
    described = lake.rest.describe_namespace(ln.DescribeNamespaceRequest(id=[catalog, "sales"]))
    assert described.properties["database.location-uri"] == lake.location(catalog, "sales.db")


def test_table_with_data_in_s3_through_hms_and_lance(lake: Lake) -> None:
    catalog = unique("cat")
    lake.rest.create_namespace(ln.CreateNamespaceRequest(id=[catalog]))
    lake.rest.create_namespace(ln.CreateNamespaceRequest(id=[catalog, "db"]))
    table_id = [catalog, "db", "orders"]

    lake.rest.create_table(ln.CreateTableRequest(id=table_id), arrow_stream(ROWS))

    expected = lake.location(catalog, "db.db", "orders")
    with lake.thrift() as client:
        stored = stored_table(client, "db", "orders", catalog)
    assert (stored.catName, stored.tableType, stored.sd.location) == (
        catalog, "EXTERNAL_TABLE", expected
    )
    described = lake.rest.describe_table(ln.DescribeTableRequest(id=table_id))
    assert described.location == expected
    assert any(key.endswith(".manifest") for key in lake.s3.keys(
        f"{lake.prefix}/{catalog}/db.db/orders/_versions/"))
    assert read_rows(lake.rest, table_id, lake.s3.lance_options()) == ROWS.to_pylist()


def test_declared_table_directory_then_rename_and_cascade_keep_the_data(lake: Lake) -> None:
    database = unique("db")
    lake.rest.create_namespace(ln.CreateNamespaceRequest(id=["hive", database]))
    first, renamed = ["hive", database, "first"], ["hive", database, "renamed"]

    declared = lake.rest.declare_table(ln.DeclareTableRequest(id=first))
    assert declared.location == lake.location(f"{database}.db", "first")
    assert f"{database}.db/first/" in lake.markers()  # HMS made the table's directory in S3
    lake.rest.insert_into_table(ln.InsertIntoTableRequest(id=first), arrow_stream(ROWS))
    lake.rest.rename_table(ln.RenameTableRequest(id=first, new_table_name="renamed"))

    described = lake.rest.describe_table(ln.DescribeTableRequest(id=renamed))
    assert described.location == declared.location  # the data stayed where it was
    lake.rest.drop_namespace(ln.DropNamespaceRequest(id=["hive", database], behavior="Cascade"))

    with lake.thrift() as client:
        assert database not in client.get_all_databases()
    dataset = lance.dataset(declared.location, storage_options=lake.s3.lance_options())
    assert dataset.count_rows() == 3


def missing_bucket_location(name: str) -> str:
    bucket = unique("no-such-bucket").replace("_", "-")
    assert bucket != S3_BUCKET
    return f"s3://{bucket}/{name}"


def test_a_namespace_in_a_missing_bucket_is_refused_as_input(lake: Lake) -> None:
    """A database is only ever at its own path, and a catalog inside the root: a location in
    another bucket is the client's error (13), never sent to the metastore."""
    database, catalog = unique("db"), unique("cat")
    with pytest.raises(ln.InvalidInputError, match="must be its own path"):
        lake.rest.create_namespace(ln.CreateNamespaceRequest(
            id=["hive", database],
            properties={"database.location-uri": missing_bucket_location("x.db")}))
    with pytest.raises(ln.InvalidInputError, match="strictly inside the backend's root"):
        lake.rest.create_namespace(ln.CreateNamespaceRequest(
            id=[catalog], properties={"catalog.location.uri": missing_bucket_location("c")}))

    with lake.thrift() as client:
        assert database not in client.get_all_databases()
        assert catalog not in client.get_catalogs().names
