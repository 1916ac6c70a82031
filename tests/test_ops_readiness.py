"""/readyz on every backend: the check each one defines answers 200 against a healthy
catalog, and 503 when the catalog is away or (dir) the root cannot be written."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.adapter import running_server
from tests.support.common import free_port
from tests.support.glue import MotoEndpoint, glue_properties
from tests.support.hive import HiveMetastoreProcess
from tests.support.hive_catalog_stand_in import CatalogMetastoreServer
from tests.support.iceberg_stand_in import IcebergStandIn
from tests.support.unity_stand_in import UnityStandIn

CLOSED_URL = f"http://127.0.0.1:{free_port()}"  # nothing listens there


def readiness(impl: str, properties: dict[str, str]) -> httpx.Response:
    with running_server(impl, properties, readiness_timeout=20.0) as url:
        return httpx.get(f"{url}/readyz", timeout=60)


def assert_ready(impl: str, properties: dict[str, str]) -> None:
    answer = readiness(impl, properties)
    assert (answer.status_code, answer.json()) == (200, {"status": "ready"})


def assert_not_ready(impl: str, properties: dict[str, str]) -> str:
    answer = readiness(impl, properties)
    assert answer.status_code == 503
    assert answer.json()["status"] == "unavailable"
    return answer.json()["reason"]


# ---------------------------------------------------------------- dir


def test_dir_is_ready_on_a_writable_root_even_before_creating_it(tmp_path: Path) -> None:
    assert_ready("dir", {"root": str(tmp_path / "not-yet" / "created")})
    assert not (tmp_path / "not-yet").exists()
    assert list(tmp_path.iterdir()) == []  # the write check leaves nothing behind


def test_dir_is_not_ready_on_a_root_it_cannot_write() -> None:
    # sysfs refuses new files even to root, so this holds for every user.
    answer = readiness("dir", {"root": "/sys/kernel"})
    assert answer.status_code == 503
    assert answer.json()["check"] == "root_writable"
    assert answer.json()["reason"].startswith("PermissionError: ")
    assert "/sys/kernel" not in answer.text  # the server's paths stay out of answers


def test_dir_is_not_ready_when_its_root_turns_into_a_file(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    with running_server("dir", {"root": str(root)}) as url:
        assert httpx.get(f"{url}/readyz", timeout=60).status_code == 200
        root.write_text("not a directory")
        answer = httpx.get(f"{url}/readyz", timeout=60)
    assert answer.status_code == 503


# ---------------------------------------------------------------- hive2, hive3


@pytest.mark.parametrize("impl", ["hive2", "hive3"])
def test_hive_is_ready_on_a_real_metastore(
    hive_metastore: HiveMetastoreProcess, impl: str, tmp_path: Path
) -> None:
    assert_ready(impl, {"uri": hive_metastore.uri, "root": str(tmp_path)})


def test_hive3_is_ready_on_a_metastore_with_catalogs(
    catalog_metastore: CatalogMetastoreServer, tmp_path: Path
) -> None:
    assert_ready("hive3", {"uri": catalog_metastore.uri, "root": str(tmp_path)})


@pytest.mark.parametrize("impl", ["hive2", "hive3"])
def test_hive_is_not_ready_without_a_metastore(impl: str, tmp_path: Path) -> None:
    assert_not_ready(impl, {"uri": CLOSED_URL.replace("http", "thrift"), "root": str(tmp_path)})


# ---------------------------------------------------------------- glue


@pytest.mark.parametrize("hierarchy", ["catalogs", "databases"])
def test_glue_is_ready_on_a_glue_endpoint_in_either_hierarchy(
    moto_endpoint: MotoEndpoint, hierarchy: str, tmp_path: Path
) -> None:
    """moto has no GetCatalogs, so listing the root of `catalogs` fails there; the probe
    asks for one database instead, which every Glue endpoint answers."""
    assert_ready("glue", glue_properties(moto_endpoint.url, hierarchy=hierarchy,
                                         root=str(tmp_path)))


def test_glue_is_not_ready_without_an_endpoint(tmp_path: Path) -> None:
    assert_not_ready("glue", glue_properties(CLOSED_URL, root=str(tmp_path)))


# ---------------------------------------------------------------- unity, iceberg


def test_unity_is_ready_on_a_unity_server(unity: UnityStandIn, tmp_path: Path) -> None:
    assert_ready("unity", {"endpoint": unity.url, "root": str(tmp_path)})
    assert unity.control.requests_to("/catalogs", "GET")


def test_iceberg_is_ready_though_its_root_cannot_be_listed(
    iceberg: IcebergStandIn, tmp_path: Path
) -> None:
    assert_ready("iceberg", {"endpoint": iceberg.url, "root": str(tmp_path)})
    assert iceberg.control.requests_to("/v1/config", "GET")


def test_iceberg_is_probed_for_the_warehouse_it_serves(
    iceberg: IcebergStandIn, tmp_path: Path
) -> None:
    """With `warehouses` named, the probe asks the first one's config (a catalog that needs a
    warehouse, as Polaris does, answers every request for it): a warehouse the catalog does
    not have is not ready."""
    assert_ready("iceberg", {"endpoint": iceberg.url, "root": str(tmp_path), "warehouses": "wh"})
    assert_not_ready("iceberg", {"endpoint": iceberg.url, "root": str(tmp_path),
                                 "warehouses": "nowhere"})


@pytest.mark.parametrize("impl", ["unity", "iceberg"])
def test_rest_catalogs_are_not_ready_without_their_server(impl: str, tmp_path: Path) -> None:
    assert_not_ready(impl, {"endpoint": CLOSED_URL, "root": str(tmp_path),
                            "client.connect-timeout-ms": "2000", "client.max-retries": "0"})
