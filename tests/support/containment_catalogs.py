"""The backends the containment and ownership tests run on, each on a fresh storage root
with one namespace that holds tables: `dir`, `hive2` (the real metastore), `glue` (moto),
`unity` (the stand-in), `iceberg` (Apache Iceberg's REST reference server, warehouse `wh`)
and `hive3` (the real Hive Metastore 3.1.3, its default catalog). Fixture `catalog`,
parametrized by kind (`WITH_HIVE3`, all of them)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    CreateTableRequest,
    DescribeTableRequest,
    LanceNamespace,
)

from backends import load_namespace
from tests.support.glue import glue_properties
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.unity_stand_in import running_unity_stand_in

KINDS = ("dir", "hive2", "glue", "unity", "iceberg")
WITH_HIVE3 = (*KINDS, "hive3")


@dataclass
class Catalog:
    namespace: LanceNamespace
    root: Path
    parent: list[str]  # a namespace that can hold tables
    kind: str

    def table(self, name: str) -> list[str]:
        return [*self.parent, name]


@pytest.fixture(scope="module")
def unity_url() -> Iterator[str]:
    with running_unity_stand_in() as fixture:
        from unitycatalog.client import ApiClient, CatalogsApi, Configuration
        from unitycatalog.client.models import CreateCatalog

        async def create_catalog() -> None:
            configuration = Configuration(host=f"{fixture.url}/api/2.1/unity-catalog")
            async with ApiClient(configuration) as api_client:
                await CatalogsApi(api_client).create_catalog(CreateCatalog(name="lake"))

        asyncio.run(create_catalog())
        yield fixture.url


def _properties(kind: str, root: Path, request: pytest.FixtureRequest) -> dict[str, str]:
    if kind == "dir":
        return {"root": str(root)}
    if kind in ("hive2", "hive3"):
        metastore = "hive_metastore" if kind == "hive2" else "hive3_metastore"
        return {"uri": request.getfixturevalue(metastore).uri, "root": str(root)}
    if kind == "glue":
        return glue_properties(request.getfixturevalue("clean_moto").url, root=str(root))
    if kind == "unity":
        return {"endpoint": request.getfixturevalue("unity_url"), "root": str(root)}
    return {"endpoint": request.getfixturevalue("iceberg_rest_server").url, "root": str(root),
            "warehouses": "wh"}


@pytest.fixture(params=WITH_HIVE3)
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Catalog:
    kind = request.param
    root = tmp_path / "root"
    root.mkdir()
    namespace = load_namespace(kind, _properties(kind, root, request))
    unique = f"c{abs(hash(tmp_path)) % 10**8}"
    parent = {"unity": ["lake", unique], "iceberg": ["wh", unique],
              "hive3": ["hive", unique]}.get(kind, [unique])
    namespace.create_namespace(CreateNamespaceRequest(id=parent))
    return Catalog(namespace, root, parent, kind)


def create_table(catalog: Catalog, name: str) -> str:
    """Create the table `name` (3 rows) in the catalog's namespace; its location."""
    table_id = catalog.table(name)
    data = arrow_stream(sample_table(3))
    catalog.namespace.create_table(CreateTableRequest(id=table_id), data)
    return catalog.namespace.describe_table(DescribeTableRequest(id=table_id)).location


