"""End to end: the adapter serving `--impl glue`, moto as Glue and S3, official clients.

Lance tables are written by the generic data operations into moto's S3 bucket, registered in
moto's Glue, and read back by pylance through the adapter (namespace_client=RestNamespace).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import lance
import lance_namespace
import pyarrow as pa
import pytest
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DeregisterTableRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    InvalidInputError,
    ListNamespacesRequest,
    ListTablesRequest,
    RegisterTableRequest,
    TableNotFoundError,
)
from moto.core.authorization import enable_iam_authentication

from tests.support.adapter import running_server
from tests.support.common import free_port
from tests.support.glue import (
    MotoEndpoint,
    create_user_keys,
    glue_properties,
    s3_storage,
)
from tests.support.lance_data import arrow_stream, sample_table

BUCKET = "lance-lake"


@dataclass(frozen=True)
class GlueAdapter:
    url: str
    moto: MotoEndpoint
    storage_options: dict[str, str]


@pytest.fixture(scope="module")
def glue_adapter(moto_endpoint: MotoEndpoint) -> Iterator[GlueAdapter]:
    moto_endpoint.reset()
    moto_endpoint.client("s3").create_bucket(Bucket=BUCKET)  # type: ignore[attr-defined]
    storage = s3_storage(moto_endpoint.url)
    properties = glue_properties(
        moto_endpoint.url,
        root=f"s3://{BUCKET}/warehouse",
        **{f"storage.{key}": value for key, value in storage.items()},
    )
    with running_server("glue", properties) as url:
        yield GlueAdapter(url, moto_endpoint, storage)


def s3_keys(adapter: GlueAdapter, prefix: str) -> list[str]:
    s3 = adapter.moto.client("s3")
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)  # type: ignore[attr-defined]
    return [item["Key"] for item in listed.get("Contents", [])]


def post(url: str, operation: str, body: dict) -> tuple[int, dict]:
    response = httpx.post(f"{url}/{operation}", json=body, timeout=30)
    return response.status_code, (response.json() if response.content else {})


def test_lance_table_on_s3_written_registered_and_read_back(glue_adapter: GlueAdapter):
    client = lance_namespace.connect("rest", {"uri": glue_adapter.url})
    table_id = ["sales", "orders"]
    client.create_namespace(CreateNamespaceRequest(id=["sales"], properties={"team": "core"}))
    first = sample_table(50)
    created = client.create_table(CreateTableRequest(id=table_id), arrow_stream(first))
    location = f"s3://{BUCKET}/warehouse/sales/orders.lance"
    assert created.location == location

    prefix = "warehouse/sales/orders.lance/"
    assert any(key.startswith(f"{prefix}_versions/") for key in s3_keys(glue_adapter, prefix))
    glue = glue_adapter.moto.client("glue")
    stored = glue.get_table(DatabaseName="sales", Name="orders")["Table"]  # type: ignore[attr-defined]
    assert stored["TableType"] == "EXTERNAL_TABLE"
    assert stored["Parameters"]["table_type"] == "lance"
    assert stored["StorageDescriptor"]["Location"] == location

    # The server never answers its own credentials: the client brings its own.
    own = glue_adapter.storage_options
    dataset = lance.dataset(namespace_client=client, table_id=table_id, storage_options=own)
    assert dataset.to_table().sort_by("id").equals(first)
    more = sample_table(10, start=50)
    lance.write_dataset(
        more, namespace_client=client, table_id=table_id, mode="append", storage_options=own
    )
    assert client.count_table_rows(CountTableRowsRequest(id=table_id)).count == 60
    assert client.list_tables(ListTablesRequest(id=["sales"])).tables == ["orders"]
    described = client.describe_table(DescribeTableRequest(id=table_id))
    assert described.location == location
    assert described.storage_options["aws_endpoint"] == glue_adapter.moto.url
    assert not {"aws_access_key_id", "aws_secret_access_key"} & set(described.storage_options)

    # Deregistering and dropping the namespace only touch Glue, never the data in S3.
    before = s3_keys(glue_adapter, prefix)
    client.deregister_table(DeregisterTableRequest(id=table_id))
    with pytest.raises(TableNotFoundError, match="table orders not found"):
        client.describe_table(DescribeTableRequest(id=table_id))
    # RegisterTable checks the S3 location with the storage options, then adopts it again.
    adopted = RegisterTableRequest(id=["sales", "again"], location=location)
    assert client.register_table(adopted).location == location
    again = lance.dataset(namespace_client=client, table_id=["sales", "again"], storage_options=own)
    assert again.count_rows() == 60
    missing = RegisterTableRequest(id=["sales", "nothing"], location=f"s3://{BUCKET}/nothing")
    with pytest.raises(
        InvalidInputError, match="a table location must lie inside the server's storage root"
    ):
        client.register_table(missing)
    client.deregister_table(DeregisterTableRequest(id=["sales", "again"]))
    client.drop_namespace(DropNamespaceRequest(id=["sales"]))
    assert "sales" not in client.list_namespaces(ListNamespacesRequest(id=[])).namespaces
    assert s3_keys(glue_adapter, prefix) == before
    reopened = lance.dataset(location, storage_options=glue_adapter.storage_options)
    assert reopened.to_table().sort_by("id").equals(pa.concat_tables([first, more]))


def test_error_codes_through_the_adapter(glue_adapter: GlueAdapter):
    """Glue's own name rules; the error codes every backend shares (missing, existing, not
    empty, cascade) are the contract suite's, tests/contract/test_error_codes.py."""
    url = glue_adapter.url
    assert post(url, "CreateNamespace", {"id": ["errs"]})[0] == 200
    cases = [
        ("CreateNamespace", {"id": ["Not_Lower"]}, 400, 13),
        ("DeclareTable", {"id": ["errs", "bad name"]}, 400, 13),
    ]
    for operation, body, status, code in cases:
        got_status, payload = post(url, operation, body)
        assert (operation, got_status, payload.get("code")) == (operation, status, code)
    assert post(url, "DropNamespace", {"id": ["errs"]})[0] == 200


def test_unreachable_glue_is_503_promptly():
    properties = glue_properties(f"http://127.0.0.1:{free_port()}")
    with running_server("glue", properties) as url:
        started = time.monotonic()
        status, payload = post(url, "ListNamespaces", {})
        elapsed = time.monotonic() - started
    assert (status, payload["code"]) == (503, 17)
    assert elapsed < 5


def test_denied_and_unknown_credentials_through_the_adapter(moto_endpoint: MotoEndpoint):
    moto_endpoint.reset()
    nobody = create_user_keys(moto_endpoint, "nobody", [])
    cases = [(nobody, 403, 15), (("AKIAUNKNOWN000000000", "secret"), 401, 16)]
    for (access_key, secret_key), status, code in cases:
        properties = glue_properties(
            moto_endpoint.url, access_key_id=access_key, secret_access_key=secret_key
        )
        with running_server("glue", properties) as url, enable_iam_authentication():
            assert post(url, "ListNamespaces", {})[0:1] == (status,)
            assert post(url, "ListNamespaces", {})[1]["code"] == code
