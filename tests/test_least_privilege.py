"""The server on `glue` with tables on S3 runs as an IAM user holding exactly the policy
docs/security.md documents ("Least privilege on AWS"), on moto with IAM enforcement on: every
operation of a namespace's and a table's life answers 200, and the operations that need a
removed Glue action, or S3 beyond the documented prefix, are refused."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pyarrow as pa

from tests.support.adapter import running_server
from tests.support.doc_blocks import blocks_run_by
from tests.support.glue import MOTO_ACCOUNT_ID, REGION
from tests.support.moto_iam import Moto

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
# What the documented policy names, as moto's account, region and bucket.
DOCUMENTED = {"111122223333": MOTO_ACCOUNT_ID, "eu-west-1": REGION, "my-lake": "lake"}


def documented_policy() -> dict[str, Any]:
    (block,) = blocks_run_by("tests/test_least_privilege.py",
                             "test_the_documented_policy_serves_every_operation")
    text = block.code
    for documented, here in DOCUMENTED.items():
        text = text.replace(documented, here)
    policy = json.loads(text)
    # moto evaluates Glue actions against the resource `*` only (S3 by object and bucket).
    glue = next(s for s in policy["Statement"] if s["Sid"] == "GlueCatalog")
    glue["Resource"] = "*"
    return policy


def server_properties(moto: Moto, policy: dict[str, Any]) -> dict[str, str]:
    """The set-up as moto's admin (its first requests), then the glue backend's properties
    as the one user holding `policy`."""
    user, secret = moto.user_holding(policy, bucket="lake")
    return {"endpoint": moto.url, "region": REGION, "hierarchy": "databases",
            "access_key_id": user, "secret_access_key": secret,
            "client.max-retries": "0", "root": "s3://lake/warehouse",
            "storage.aws_endpoint": moto.url, "storage.aws_region": REGION,
            "storage.aws_access_key_id": user, "storage.aws_secret_access_key": secret,
            "storage.allow_http": "true"}


def _rows() -> bytes:
    table = pa.table({"id": [1, 2, 3]})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


LIFE = [  # (name, method, path, keywords)
    ("CreateNamespace", "POST", "/v1/namespace/sales/create", {"json": {}}),
    ("ListNamespaces", "GET", "/v1/namespace/$/list", {}),
    ("CreateTable", "POST", "/v1/table/sales$orders/create", {"content": _rows(),
                                                               "headers": ARROW}),
    ("InsertIntoTable", "POST", "/v1/table/sales$orders/insert", {"content": _rows(),
                                                                   "headers": ARROW}),
    ("CountTableRows", "POST", "/v1/table/sales$orders/count_rows", {"json": {}}),
    ("DescribeTable", "POST", "/v1/table/sales$orders/describe", {"json": {}}),
    ("ListTables", "GET", "/v1/namespace/sales/table/list", {}),
    ("QueryTable", "POST", "/v1/table/sales$orders/query", {"json": {"k": 10, "vector": {}}}),
    ("RenameTable", "POST", "/v1/table/sales$orders/rename", {"json": {"new_table_name": "o2"}}),
    ("DropTable", "POST", "/v1/table/sales$o2/drop", {"json": {}}),
    ("DropNamespace", "POST", "/v1/namespace/sales/drop", {"json": {}}),
]


def live(url: str) -> dict[str, int]:
    """Each step of the life, in order: its status."""
    with httpx.Client(base_url=url, timeout=60) as client:
        return {name: client.request(method, path, **keywords).status_code
                for name, method, path, keywords in LIFE}


def test_the_documented_policy_serves_every_operation(moto_enforcing: Moto) -> None:
    properties = server_properties(moto_enforcing, documented_policy())
    with running_server("glue", properties) as url:
        assert live(url) == {name: 200 for name, *_ in LIFE}


def test_without_a_documented_glue_action_its_operations_are_refused(
        moto_enforcing: Moto) -> None:
    policy = documented_policy()
    policy["Statement"][0]["Action"].remove("glue:CreateTable")
    with running_server("glue", server_properties(moto_enforcing, policy)) as url:
        statuses = live(url)
    assert statuses["CreateNamespace"] == 200 and statuses["ListNamespaces"] == 200
    assert statuses["CreateTable"] == 403


def test_with_the_s3_prefix_elsewhere_no_table_is_written(moto_enforcing: Moto) -> None:
    policy = documented_policy()
    for statement in policy["Statement"][1:]:
        text = json.dumps(statement).replace("lake/warehouse", "lake/elsewhere")
        statement.update(json.loads(text.replace('"warehouse/*"', '"elsewhere/*"')))
    with running_server("glue", server_properties(moto_enforcing, policy)) as url:
        statuses = live(url)
    assert statuses["CreateNamespace"] == 200  # the catalog alone
    assert statuses["CreateTable"] == 403  # code 15, the storage's refusal, not an error 500
    assert statuses["InsertIntoTable"] == 404  # no table was made
