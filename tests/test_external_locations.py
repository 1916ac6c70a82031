"""External locations (setting `external_locations`): existing data in another bucket is
registered through the server by a table of the namespace the location is bound to, read by
pylance and by LanceDB's remote client through the server, owned by that one table, and left
in place by DropTable. Glue on moto (its S3 holds the root's bucket and the legacy one), then
every backend on local storage (fixture `catalog`); `dir` refuses, since its catalog keeps
locations relative to its root."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import lance
import lancedb
import pytest
from lance.namespace import RestNamespace
from lance_namespace import (
    CreateNamespaceRequest,
    DescribeTableRequest,
    DropTableRequest,
    InvalidInputError,
    RegisterTableRequest,
)

from app.config import external_locations
from app.settings import Settings
from backends.core.external import parse_external_locations
from backends.core.settings import ConfigurationError
from backends.guard import GuardedNamespace
from backends.owner_record import read_record
from tests.support.adapter import running_server
from tests.support.containment_catalogs import Catalog
from tests.support.glue import MotoEndpoint, glue_properties, s3_storage
from tests.support.lance_data import sample_table

LEGACY = "s3://legacy/hr/payroll.lance"


@pytest.fixture
def served(clean_moto: MotoEndpoint) -> Iterator[tuple[str, dict[str, str]]]:
    s3 = clean_moto.client("s3")
    for bucket in ("lake", "legacy"):
        s3.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    storage = s3_storage(clean_moto.url)
    lance.write_dataset(sample_table(5), LEGACY, storage_options=storage)
    lance.write_dataset(sample_table(2), "s3://legacy/other/t.lance", storage_options=storage)
    properties = glue_properties(clean_moto.url, root="s3://lake/warehouse",
                                 **{f"storage.{key}": value for key, value in storage.items()})
    with running_server("glue", properties,
                        external_locations={"s3://legacy/hr/": "hr"}) as url:
        client = RestNamespace(uri=url)
        for name in ("hr", "sales"):
            client.create_namespace(CreateNamespaceRequest(id=[name]))
        yield url, storage


def test_existing_data_in_another_bucket_is_registered_read_and_kept(
    served: tuple[str, dict[str, str]],
) -> None:
    url, storage = served
    client = RestNamespace(uri=url)
    client.register_table(RegisterTableRequest(id=["hr", "payroll"], location=LEGACY))
    described = client.describe_table(DescribeTableRequest(id=["hr", "payroll"]))
    assert described.location == LEGACY
    assert lance.dataset(described.location, storage_options=storage).count_rows() == 5
    assert read_record(LEGACY, storage).owner == ["hr", "payroll"]
    remote = lancedb.connect("db://hr", api_key="any", host_override=url, region="local")
    assert remote.open_table("payroll").count_rows() == 5
    rows = remote.open_table("payroll").search().limit(10).to_arrow()
    assert sorted(rows.column("id").to_pylist()) == list(range(5))

    for thief, why in ((["sales", "steal"], r"bound to hr\): a table of sales may not"),
                       (["hr", "twin"], r"is owned by table hr\$payroll")):
        with pytest.raises(InvalidInputError, match=why):
            client.register_table(RegisterTableRequest(id=thief, location=LEGACY))
    with pytest.raises(InvalidInputError, match="inside one of its external locations"):
        client.register_table(RegisterTableRequest(
            id=["hr", "other"], location="s3://legacy/other/t.lance"))

    client.drop_table(DropTableRequest(id=["hr", "payroll"]))
    assert lance.dataset(LEGACY, storage_options=storage).count_rows() == 5, "data left"


def test_dir_refuses_external_locations(tmp_path) -> None:
    outside = tmp_path / "legacy" / "hr"
    lance.write_dataset(sample_table(2), str(outside / "t.lance"))
    with running_server("dir", {"root": str(tmp_path / "root")},
                        external_locations={str(outside): "hr"}) as url:
        httpx.post(f"{url}/v1/namespace/hr/create", json={}).raise_for_status()
        answer = httpx.post(f"{url}/v1/table/hr$t/register",
                            json={"location": str(outside / "t.lance")})
    assert (answer.status_code, answer.json()["code"]) == (400, 13)
    assert "registers tables only inside its root" in answer.json()["error"]


def test_a_bad_external_location_stops_the_start() -> None:
    for mapping, why in (({"relative/dir": "hr"}, "external location 'relative/dir'"),
                         ({"s3://legacy/hr": "a$"}, "must not be empty")):
        with pytest.raises(ConfigurationError, match=why):
            external_locations(Settings(external_locations=mapping))


def test_every_catalog_backend_registers_in_an_external_location(
    catalog: Catalog, tmp_path: Path
) -> None:
    """The same rules on each backend (local storage, outside its root): only the bound
    namespace's tables, one owner, DropTable leaves the data; `dir` refuses."""
    prefix = tmp_path / "legacy"
    data = prefix / "t.lance"
    lance.write_dataset(sample_table(4), str(data))
    bound = parse_external_locations({str(prefix): "$".join(catalog.parent)})
    guarded = GuardedNamespace(catalog.namespace.backend, external=bound)
    register = RegisterTableRequest(id=catalog.table("ext"), location=str(data))
    if catalog.kind == "dir":
        with pytest.raises(InvalidInputError, match="registers tables only inside its root"):
            guarded.register_table(register)
        return
    guarded.register_table(register)
    assert read_record(str(data), None).owner == catalog.table("ext")
    described = guarded.describe_table(DescribeTableRequest(id=catalog.table("ext")))
    assert lance.dataset(described.location).count_rows() == 4
    with pytest.raises(InvalidInputError, match="is owned by table"):
        guarded.register_table(RegisterTableRequest(id=catalog.table("twin"), location=str(data)))
    elsewhere = [*catalog.parent[:-1], catalog.parent[-1] + "x"]
    guarded.create_namespace(CreateNamespaceRequest(id=elsewhere))
    with pytest.raises(InvalidInputError, match="may not register there"):
        guarded.register_table(RegisterTableRequest(id=[*elsewhere, "t"], location=str(data)))
    guarded.drop_table(DropTableRequest(id=catalog.table("ext")))
    assert lance.dataset(str(data)).count_rows() == 4


@pytest.mark.parametrize("catalog", ["glue", "hive2", "unity", "iceberg"], indirect=True)
def test_with_purge_dropping_an_external_table_deletes_only_its_own_data(
    catalog: Catalog, tmp_path: Path
) -> None:
    prefix = tmp_path / "legacy"
    for name in ("mine", "foreign"):
        lance.write_dataset(sample_table(2), str(prefix / f"{name}.lance"))
    bound = parse_external_locations({str(prefix): "$".join(catalog.parent)}, purge=True)
    guarded = GuardedNamespace(catalog.namespace.backend, external=bound)
    guarded.register_table(RegisterTableRequest(
        id=catalog.table("mine"), location=str(prefix / "mine.lance")))
    # An entry another tool wrote (straight to the catalog): no record names it.
    catalog.namespace.backend.register_table(RegisterTableRequest(
        id=catalog.table("foreign"), location=str(prefix / "foreign.lance")))
    for name in ("mine", "foreign"):
        guarded.drop_table(DropTableRequest(id=catalog.table(name)))
    assert not (prefix / "mine.lance").exists()
    assert lance.dataset(str(prefix / "foreign.lance")).count_rows() == 2
