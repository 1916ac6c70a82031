"""A table reaches only its own bytes (issue 68) on S3 with credential vending, behind the
enforcing policy gate (`tests/support/s3_policy_gate.py`): a tenant holding read-write keys
vended for its own table commits, with those keys alone, a version naming another table's
folder as a base; the server then answers none of that table's rows, and the tenant's keys
cannot rewrite the ownership record that would make its table pass for a server-made clone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import lance
import pyarrow as pa
import pytest

from tests.support.foreign_bytes import append_foreign_rows, post_as
from tests.support.vending import (
    BUCKET,
    REGION,
    ROOT,
    SERVER_KEY,
    SERVER_SECRET,
    Storage,
    adapter,
    vending_on,
)

TOKENS = {"admin": "tok-admin", "sales": "tok-sales"}


def post(url: str, path: str, who: str, body: pa.Table | dict[str, Any]) -> httpx.Response:
    return post_as(url, path, TOKENS[who], body, timeout=60)


def test_vended_keys_cannot_make_the_server_read_another_tables_rows(
    storage: Storage, tmp_path: Path,
) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("".join(f"{name} {token}\n" for name, token in TOKENS.items()))
    properties = vending_on(storage.gate.url, **{"access.sales": "read-write"})
    server_keys = {"aws_access_key_id": SERVER_KEY, "aws_secret_access_key": SERVER_SECRET,
                   "aws_endpoint": storage.gate.url, "allow_http": "true",
                   "aws_region": REGION}
    with adapter(properties, auth_mode="token", auth_tokens_file=str(tokens),
                 access={"admin": "admin", "sales": "write@sales"},
                 access_default="none") as url:
        for namespace in ("sales", "hr"):
            post(url, f"namespace/{namespace}/create", "admin", {}).raise_for_status()
        post(url, "table/hr$secret/create", "admin",
             pa.table({"v": ["hr-secret-row-1", "hr-secret-row-2"]})).raise_for_status()
        post(url, "table/sales$t/create", "sales",
             pa.table({"v": ["sales-own-0"]})).raise_for_status()
        secret = post(url, "table/hr$secret/describe", "admin",
                      {"load_detailed_metadata": False}).json()["location"]
        own = post(url, "table/sales$t/describe", "sales", {"load_detailed_metadata": False})
        vended = own.json()["storage_options"]
        assert vended["aws_session_token"], own.text

        append_foreign_rows(own.json()["location"], secret, vended, server_keys)
        for path, body in (("query", {"k": 10, "vector": {}}), ("count_rows", {}),
                           ("describe", {"load_detailed_metadata": True})):
            answer = post(url, f"table/sales$t/{path}", "sales", body)
            assert (answer.status_code, answer.json()["code"]) == (400, 13), answer.text
            assert "outside this table" in answer.json()["error"]
            assert "hr-secret" not in answer.text

        prefix = own.json()["location"].removeprefix(f"s3://{BUCKET}/").rstrip("/")
        tenant = storage.s3(vended)
        forged = json.dumps({"owner_id": ["sales", "t"], "sources": [secret]}).encode()
        with pytest.raises(Exception, match="AccessDenied"):
            tenant.put_object(Bucket=BUCKET, Key=f"{prefix}/_lance_adapter_owner", Body=forged)
        tenant.put_object(Bucket=BUCKET, Key=f"{prefix}/data/own-file", Body=b"x")  # its own
        count = post(url, "table/hr$secret/count_rows", "admin", {})
        assert (count.status_code, count.json()) == (200, 2), count.text


def test_keys_vended_for_a_multi_base_table_cover_its_recorded_bases_alone(
    storage: Storage,
) -> None:
    """A table whose rows lie in an extra base, in an external location bound to its
    namespace: registered, it is served, and the keys vended for it read the base (its
    record there they cannot write), nothing else of the external location."""
    external = f"s3://{BUCKET}/ext/mkt"
    server_keys = {"aws_access_key_id": SERVER_KEY, "aws_secret_access_key": SERVER_SECRET,
                   "aws_endpoint": storage.gate.url, "allow_http": "true",
                   "aws_region": REGION}
    admin = storage.s3()
    admin.put_object(Bucket=BUCKET, Key="ext/mkt/other/probe", Body=b"x")
    with adapter(vending_on(storage.gate.url), external_locations={external: "mkt"}) as url:
        httpx.post(f"{url}/v1/namespace/mkt/create", json={}).raise_for_status()
        location = f"{ROOT}/mkt/mb"
        lance.write_dataset(pa.table({"v": [1, 2, 3]}), location, storage_options=server_keys,
                            initial_bases=[lance.DatasetBasePath(f"{external}/b1", name="b1")],
                            target_bases=["b1"])
        registered = httpx.post(f"{url}/v1/table/mkt$mb/register",
                                json={"location": location}, timeout=60)
        assert registered.status_code == 200, registered.text
        described = httpx.post(f"{url}/v1/table/mkt$mb/describe", timeout=60,
                               json={"load_detailed_metadata": False}).json()
        vended = described["storage_options"]
        assert vended["aws_session_token"], described
        rows = lance.dataset(location, storage_options=vended).to_table()  # the base's files
        assert sorted(rows.column("v").to_pylist()) == [1, 2, 3]

    tenant = storage.s3(vended)
    with pytest.raises(Exception, match="AccessDenied"):
        tenant.put_object(Bucket=BUCKET, Key="ext/mkt/b1/_lance_adapter_owner", Body=b"x")
    with pytest.raises(Exception, match="AccessDenied"):
        tenant.get_object(Bucket=BUCKET, Key="ext/mkt/other/probe")
