"""What the interoperation tests (`tests/test_interop_*.py`) share: reading a table's rows
through either side, AlterNamespace through the server, and the fixture `rest_catalog_sides`,
the server and lance-namespace-impls on one REST catalog (the Unity stand-in, or the Iceberg REST
reference server).

Every interop test has the same two sides: the server, driven over HTTP with the official
client, and impls' own namespace class called directly in Python on the same catalog and root.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import lance
import lance_namespace
import pyarrow as pa
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    CreateTableRequest,
    DeclareTableRequest,
    LanceNamespace,
    QueryTableRequest,
)
from lance_namespace_impls.iceberg import IcebergNamespace as ImplsIcebergNamespace
from lance_namespace_impls.unity import UnityNamespace as ImplsUnityNamespace
from lance_namespace_urllib3_client.models import QueryTableRequestVector
from unitycatalog.client import ApiClient, CatalogsApi, Configuration
from unitycatalog.client.models import CreateCatalog

from tests.support.adapter import running_server
from tests.support.iceberg_rest_server import PrefixRouter, prefix_router
from tests.support.lance_data import arrow_stream, read_arrow_file
from tests.support.unity_stand_in import API, UnityStandIn, running_unity_stand_in

WAREHOUSE = "wh"  # the Iceberg warehouse the server is given


# -- rows and namespaces, for every catalog --------------------------------------------------


def in_id_order(table: pa.Table) -> list[dict[str, Any]]:
    """A table's rows as dicts, cell for cell, in id order."""
    return table.sort_by("id").to_pylist()


def read_table(
    namespace: Any, table_id: list[str], storage_options: dict[str, str] | None = None
) -> pa.Table:
    """The table read with pylance through `namespace` (the server's client or impls)."""
    dataset = lance.dataset(
        namespace_client=namespace, table_id=table_id, storage_options=storage_options
    )
    return dataset.to_table()


def read_rows(
    namespace: Any, table_id: list[str], storage_options: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The table's rows read with pylance through `namespace`, in id order."""
    return in_id_order(read_table(namespace, table_id, storage_options))


def same_rows(read: pa.Table, expected: pa.Table) -> None:
    """The same columns and, cell for cell, the same rows in id order."""
    assert read.schema.names == expected.schema.names
    assert in_id_order(read) == in_id_order(expected)


def query_table(namespace: Any, table_id: list[str], k: int = 0) -> pa.Table:
    """What the server's QueryTable answers (an Arrow IPC file), with no vector to search by."""
    request = QueryTableRequest(id=table_id, k=k, vector=QueryTableRequestVector())
    return read_arrow_file(namespace.query_table(request).data)


def alter_namespace(url: str, namespace_id: list[str], **changes: Any) -> httpx.Response:
    """AlterNamespace has no method in the official client: its spec route, over HTTP."""
    return httpx.post(f"{url}/AlterNamespace", json={"id": namespace_id, **changes}, timeout=60)


# -- the two REST catalogs -------------------------------------------------------------------


@dataclass(frozen=True)
class RestCatalog:
    """A REST catalog with the server on it, shared by a module's tests."""

    kind: str  # "unity" or "iceberg"
    stand_in: UnityStandIn | PrefixRouter  # the catalog as clients reach it
    url: str  # the server's
    root: Path  # the storage root of the server and of impls

    def impls(self, root: Path) -> Any:
        """impls' own namespace class on this catalog, placing new tables under `root`."""
        if self.kind == "unity":
            return ImplsUnityNamespace(
                **{"unity.endpoint": self.stand_in.url, "unity.root": str(root)}
            )
        return ImplsIcebergNamespace(endpoint=self.stand_in.url, root=str(root))

    def new_namespace(self, name: str) -> list[str]:
        """The id of a namespace no test has made (its parent exists): a schema of a new Unity
        catalog (the stand-in pages listings by 3, which impls does not follow), or a new
        namespace of the Iceberg warehouse."""
        token = uuid.uuid4().hex[:8]
        if self.kind == "iceberg":
            return [WAREHOUSE, f"{name}_{token}"]
        catalog = f"cat_{token}"

        async def create() -> None:
            async with ApiClient(Configuration(host=f"{self.stand_in.url}{API}")) as client:
                await CatalogsApi(client).create_catalog(CreateCatalog(name=catalog))

        asyncio.run(create())
        return [catalog, name]


@dataclass(frozen=True)
class Tables:
    """The tables `RestCatalogSides.make_tables` made."""

    namespace: list[str]
    filled: list[str]  # made with rows
    declared: list[str]  # declared only
    nested: list[str] | None  # made with rows in a child namespace, where namespaces nest


@dataclass(frozen=True)
class RestCatalogSides:
    """One test's two sides of a REST catalog: the server and impls."""

    catalog: RestCatalog
    rest: LanceNamespace  # the official client, talking to the server
    impls: Any  # impls' UnityNamespace or IcebergNamespace

    @property
    def kind(self) -> str:
        return self.catalog.kind

    @property
    def nests(self) -> bool:
        """Whether namespaces nest below the catalog's own level (Iceberg's do)."""
        return self.kind == "iceberg"

    def unity_columns(self, table_id: list[str]) -> list[str]:
        """The names of the columns Unity holds for a table."""
        name = ".".join(table_id)
        response = httpx.get(f"{self.catalog.stand_in.url}{API}/tables/{name}", timeout=30)
        response.raise_for_status()
        return [column["name"] for column in response.json()["columns"]]

    def make_tables(self, by: str, rows: pa.Table) -> Tables:
        """A new namespace, made by `by` ("impls" or "server") with tables: `filled` (pylance
        writes it through impls; the server creates it with the rows), `declared`, and, where
        namespaces nest, `nested` with the rows in the child namespace `child`."""
        side = self.impls if by == "impls" else self.rest
        namespace = self.catalog.new_namespace(by)
        nested = [*namespace, "child", "nested"] if self.nests else None
        tables = Tables(namespace, [*namespace, "filled"], [*namespace, "declared"], nested)
        side.create_namespace(CreateNamespaceRequest(id=namespace))
        if nested is not None:
            side.create_namespace(CreateNamespaceRequest(id=nested[:-1]))
        side.declare_table(DeclareTableRequest(id=tables.declared))
        for table_id in (tables.filled, nested):
            if table_id is None:
                continue
            if by == "impls":
                lance.write_dataset(rows, namespace_client=side, table_id=table_id, mode="create")
            else:
                side.create_table(CreateTableRequest(id=table_id), arrow_stream(rows))
        return tables

    def impls_name(self, namespace_id: list[str]) -> str:
        """How impls names a namespace in a listing: Iceberg's in full, joined with '.'."""
        return ".".join(namespace_id) if self.nests else namespace_id[-1]


@pytest.fixture(scope="module", params=["unity", "iceberg"])
def rest_catalog(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RestCatalog]:
    """The server on the catalog and a storage root, at default settings: what impls changes
    behind its back must be seen at once. Unity's is the stand-in (its server is not published
    where this project fetches from); Iceberg's is the session's reference server, which both
    sides reach through `prefix_router`: impls always puts a warehouse prefix in its paths,
    and the reference server (one catalog at `/v1/...`) announces none."""
    kind = request.param
    root = tmp_path_factory.mktemp(f"{kind}-interop-root")
    with contextlib.ExitStack() as stack:
        if kind == "unity":
            catalog: Any = stack.enter_context(running_unity_stand_in())
        else:
            server = request.getfixturevalue("iceberg_rest_server")
            catalog = stack.enter_context(prefix_router(server, f"p-{WAREHOUSE}"))
        properties = {"endpoint": catalog.url, "root": str(root)}
        if kind == "iceberg":
            properties["warehouses"] = WAREHOUSE
        url = stack.enter_context(running_server(kind, properties))
        yield RestCatalog(kind, catalog, url, root)


@pytest.fixture
def rest_catalog_sides(rest_catalog: RestCatalog) -> Iterator[RestCatalogSides]:
    """A fresh official client and impls on `rest_catalog`, closed after the test."""
    iceberg = rest_catalog.stand_in if rest_catalog.kind == "iceberg" else None
    if iceberg is not None:  # impls reads a warehouse's prefix only from /v1/config's defaults
        iceberg.state.prefix_style = "defaults"
    impls = rest_catalog.impls(rest_catalog.root)
    rest = lance_namespace.connect("rest", {"uri": rest_catalog.url})
    yield RestCatalogSides(rest_catalog, rest, impls)
    impls.close()
    if iceberg is not None:
        iceberg.state.prefix_style = "overrides"
