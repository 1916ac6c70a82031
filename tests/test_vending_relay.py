"""Credential vending relayed from catalogs that vend (issue 18): Unity's
`temporary-table-credentials` and Iceberg REST's `X-Iceberg-Access-Delegation`.

The stand-ins vend as their specs define it (checked here with the official clients: the Unity
SDK's TemporaryCredentialsApi and pyiceberg's RestCatalog), minting through moto's STS behind
the S3 policy gate (`CatalogGrants`). The adapter runs with vending on and no role to assume,
so every credential a client gets can only have come from the catalog; a client with no
credentials of its own then writes and reads through the gate with them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from unitycatalog.client import (
    ApiClient,
    CatalogsApi,
    Configuration,
    SchemasApi,
    TablesApi,
    TemporaryCredentialsApi,
)
from unitycatalog.client.models import (
    ColumnInfo,
    CreateCatalog,
    CreateSchema,
    CreateTable,
    DataSourceFormat,
    GenerateTemporaryTableCredential,
    TableOperation,
    TableType,
)

import backends.unity.namespace as unity_namespace
from backends.unity.catalog import s3_credentials
from backends.vending.vendor import S3Credentials
from tests.support.iceberg_stand_in import running_iceberg_stand_in
from tests.support.unity_stand_in import API, running_unity_stand_in
from tests.support.vending import (
    BUCKET,
    REGION,
    SERVER_KEY,
    SERVER_SECRET,
    CatalogGrants,
    Storage,
    adapter,
    run_client,
    server_storage,
)


def relaying(gate_url: str, **settings: str) -> dict[str, str]:
    """Vending on (also unasked), no `vending.role-arn`: nothing can be minted by the adapter."""
    vending = {"vending.enabled": "true", "vending.unasked": "true", "vending.region": REGION}
    vending |= {f"vending.{key}": value for key, value in settings.items()}
    return {**server_storage(gate_url), **vending}


def describe(url: str, table_id: list[str], **fields: Any) -> dict[str, Any]:
    answer = httpx.post(f"{url}/DescribeTable", json={"id": table_id, **fields}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


# ---------------------------------------------------------------- Unity


def sdk_table_credentials(url: str, operation: TableOperation) -> Any:
    """Create a table with the official SDK and ask its temporary credentials."""

    async def main() -> Any:
        async with ApiClient(Configuration(host=f"{url}{API}")) as client:
            await CatalogsApi(client).create_catalog(CreateCatalog(name="sdk"))
            await SchemasApi(client).create_schema(CreateSchema(name="s", catalog_name="sdk"))
            column = ColumnInfo(name="id", type_text="bigint", type_json="{}", type_name="LONG",
                                position=0, nullable=True)
            table = await TablesApi(client).create_table(CreateTable(
                name="t", catalog_name="sdk", schema_name="s", table_type=TableType.EXTERNAL,
                data_source_format=DataSourceFormat.DELTA, columns=[column],
                storage_location=f"s3://{BUCKET}/sdk/s/t"))
            asked = GenerateTemporaryTableCredential(table_id=table.table_id, operation=operation)
            return await TemporaryCredentialsApi(
                client).generate_temporary_table_credentials(asked)

    return asyncio.run(main())


def test_the_unity_stand_in_vends_as_the_sdk_reads_it(storage: Storage) -> None:
    grants = CatalogGrants(storage)
    with running_unity_stand_in(grants) as unity:
        answer = sdk_table_credentials(unity.url, TableOperation.READ)
    aws = answer.aws_temp_credentials
    assert aws is not None and [aws.access_key_id] == grants.issued
    assert aws.secret_access_key and aws.session_token
    assert answer.expiration_time > 0
    s3 = storage.s3({"aws_access_key_id": aws.access_key_id,
                     "aws_secret_access_key": aws.secret_access_key,
                     "aws_session_token": aws.session_token})
    storage.s3().put_object(Bucket=BUCKET, Key="sdk/s/t/probe", Body=b"x")
    assert s3.get_object(Bucket=BUCKET, Key="sdk/s/t/probe")["Body"].read() == b"x"


def unity_properties(unity_url: str, gate_url: str, **settings: str) -> dict[str, str]:
    return {"endpoint": unity_url, "root": f"s3://{BUCKET}/unity", **relaying(gate_url, **settings)}


def create_namespace(url: str, parts: list[str]) -> None:
    answer = httpx.post(f"{url}/CreateNamespace", json={"id": parts}, timeout=30)
    assert answer.status_code == 200, answer.text


def unity_catalog(unity: Any, name: str) -> None:
    """Catalogs are created in Unity itself."""
    answer = httpx.post(f"{unity.url}{API}/catalogs", json={"name": name}, timeout=30)
    assert answer.status_code == 200, answer.text


def test_unity_relays_its_credentials_to_a_client_without_any(storage: Storage) -> None:
    grants = CatalogGrants(storage)
    with running_unity_stand_in(grants) as unity:
        unity_catalog(unity, "lake")
        properties = unity_properties(unity.url, storage.gate.url, access="read-write")
        before = storage.gate.keys_used()
        with adapter(properties, impl="unity") as url:
            create_namespace(url, ["lake", "db"])
            assert run_client("write", url, "lake$db$u1") == {"rows": 1000}
            assert run_client("append", url, "lake$db$u1") == {"rows": 1001}
            options = describe(url, ["lake", "db", "u1"])["storage_options"]
            metrics = httpx.get(f"{url}/metrics").text
        operations = {operation for _, operation in unity.state.credential_requests}
    assert operations == {"READ_WRITE"}
    assert options["aws_access_key_id"] in grants.issued
    assert int(options["expires_at_millis"]) > 0 and options["aws_endpoint"] == storage.gate.url
    used = storage.gate.keys_used() - before
    assert used and used <= set(grants.issued), "the client used only keys Unity issued"
    assert 'source="relayed"' in metrics


def test_unity_is_asked_for_the_callers_access(storage: Storage) -> None:
    """Read callers get Unity's READ credentials, which the gate refuses for writing."""
    grants = CatalogGrants(storage)
    with running_unity_stand_in(grants) as unity:
        unity_catalog(unity, "lake")
        with adapter(unity_properties(unity.url, storage.gate.url), impl="unity") as url:
            create_namespace(url, ["lake", "db"])
            httpx.post(f"{url}/DeclareTable", json={"id": ["lake", "db", "u2"]}, timeout=30)
            options = describe(url, ["lake", "db", "u2"])["storage_options"]
        # DeclareTable's credentials are reused for DescribeTable: one call to Unity
        assert [op for _, op in unity.state.credential_requests] == ["READ"]
    s3 = storage.s3(options)
    with pytest.raises(ClientError, match=r"\(AccessDenied\) when calling the PutObject"):
        s3.put_object(Bucket=BUCKET, Key="unity/lake/db/u2/data", Body=b"x")


def test_without_credentials_from_unity_nothing_is_vended(storage: Storage) -> None:
    """A Unity that vends no AWS credentials (as for local paths): no role, so no credential."""
    with running_unity_stand_in() as unity:
        unity_catalog(unity, "lake")
        with adapter(unity_properties(unity.url, storage.gate.url), impl="unity") as url:
            create_namespace(url, ["lake", "db"])
            httpx.post(f"{url}/DeclareTable", json={"id": ["lake", "db", "u3"]}, timeout=30)
            options = describe(url, ["lake", "db", "u3"]).get("storage_options") or {}
        assert len(unity.state.credential_requests) == 2
    assert "aws_access_key_id" not in options and "expires_at_millis" not in options


def unity_long_read(storage: Storage, table: str) -> dict[str, Any]:
    """A client reading one dataset for 4.5 s while the credentials Unity vends live 2 s."""
    grants = CatalogGrants(storage, duration_s=2)
    with running_unity_stand_in(grants) as unity:
        unity_catalog(unity, "lake")
        properties = unity_properties(unity.url, storage.gate.url, access="read-write")
        with adapter(properties, impl="unity") as url:
            create_namespace(url, ["lake", "db"])
            assert run_client("write", url, f"lake$db${table}") == {"rows": 1000}
            before = storage.gate.keys_used()
            answer = run_client("read-for", url, f"lake$db${table}", "{}", "4.5")
    answer["keys used"] = storage.gate.keys_used() - before
    answer["keys issued"] = set(grants.issued)
    return answer


def test_a_long_read_outlives_unitys_credentials_through_refresh(storage: Storage) -> None:
    """pylance's provider calls DescribeTable again near `expires_at_millis`; the adapter asks
    Unity again for new credentials, and the read goes on."""
    answer = unity_long_read(storage, "long1")
    assert "error" not in answer, answer
    assert set(answer["reads"]) == {1000} and len(answer["reads"]) >= 3
    assert len(answer["keys used"]) >= 2, "Unity was asked again for new credentials"
    assert answer["keys used"] <= answer["keys issued"]


def test_dropping_unitys_expiry_is_caught(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defect: Unity's `expiration_time` lost on the way. The client never refreshes and
    the read fails once Unity's credentials expire, so the refresh test above would fail."""

    def without_expiry(answer: Any) -> S3Credentials | None:
        relayed = s3_credentials(answer)
        return None if relayed is None else replace(relayed, expires_at_millis=None)

    monkeypatch.setattr(unity_namespace, "s3_credentials", without_expiry)
    answer = unity_long_read(storage, "long2")
    assert "ExpiredToken" in answer.get("stderr", ""), answer


# ---------------------------------------------------------------- Iceberg REST


@pytest.fixture
def iceberg_grants(storage: Storage) -> CatalogGrants:
    return CatalogGrants(storage)


@pytest.fixture
def iceberg(storage: Storage, iceberg_grants: CatalogGrants, tmp_path: Path) -> Iterator[Any]:
    # The stand-in's own FileIO: it writes table metadata under the table's S3 location.
    io = {"s3.endpoint": storage.gate.url, "s3.access-key-id": SERVER_KEY,
          "s3.secret-access-key": SERVER_SECRET, "s3.region": REGION}
    with running_iceberg_stand_in(tmp_path, ("wh",), iceberg_grants, io) as stand_in:
        yield stand_in


def test_the_iceberg_stand_in_vends_as_pyiceberg_reads_it(
    iceberg: Any, iceberg_grants: CatalogGrants
) -> None:
    catalog = RestCatalog("official", uri=iceberg.url, warehouse="wh")
    catalog.create_namespace("pi")
    schema = Schema(NestedField(1, "n", LongType(), required=False))
    catalog.create_table(("pi", "t"), schema, location=f"s3://{BUCKET}/pyiceberg/pi/t")
    loaded = catalog.load_table(("pi", "t"))  # pyiceberg asks for vended-credentials
    assert loaded.io.properties["s3.access-key-id"] == iceberg_grants.issued[-1]
    assert int(loaded.io.properties["s3.session-token-expires-at-ms"]) > 0
    assert iceberg.state.delegations[-1] == f"s3://{BUCKET}/pyiceberg/pi/t/"
    unasked = RestCatalog("unasked", uri=iceberg.url, warehouse="wh",
                          **{"header.X-Iceberg-Access-Delegation": "remote-signing"})
    plain = unasked.load_table(("pi", "t"))
    assert "s3.access-key-id" not in plain.io.properties


def iceberg_properties(iceberg_url: str, gate_url: str, **settings: str) -> dict[str, str]:
    return {"endpoint": iceberg_url, "root": f"s3://{BUCKET}/iceberg",
            **relaying(gate_url, **settings)}


def test_iceberg_relays_its_credentials_to_a_client_without_any(
    storage: Storage, iceberg: Any, iceberg_grants: CatalogGrants
) -> None:
    properties = iceberg_properties(iceberg.url, storage.gate.url, access="read-write")
    before = storage.gate.keys_used()
    with adapter(properties, impl="iceberg") as url:
        answer = httpx.post(f"{url}/CreateNamespace", json={"id": ["wh", "db"]}, timeout=30)
        assert answer.status_code == 200, answer.text
        assert run_client("write", url, "wh$db$i1") == {"rows": 1000}
        options = describe(url, ["wh", "db", "i1"])["storage_options"]
    assert options["aws_access_key_id"] in iceberg_grants.issued
    assert int(options["expires_at_millis"]) > 0
    used = storage.gate.keys_used() - before
    assert used and used <= set(iceberg_grants.issued), "the client used keys the catalog issued"
    assert f"s3://{BUCKET}/iceberg/wh/db/i1/" in iceberg.state.delegations
