"""Fixtures of the credential-vending tests: moto behind the S3 policy gate, the adapter on a
`dir` root in S3 with vending on, a catalog's own vending (`CatalogGrants`, for the Unity and
Iceberg stand-ins), and a client process with no credentials of its own."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from moto.moto_server.threaded_moto_server import ThreadedMotoServer

from backends.vending import READ, READ_WRITE, TablePrefix, session_policy
from tests.support.adapter import running_server
from tests.support.common import run_python
from tests.support.rest_catalog_stand_in import Grant
from tests.support.s3_policy_gate import S3PolicyGate

REGION = "us-east-1"
BUCKET = "lance-vend"
ROOT = f"s3://{BUCKET}/warehouse"
# The server's own keys (moto accepts any); the gate trusts them as an IAM user of the bucket.
SERVER_KEY = "server-key"
SERVER_SECRET = "server-secret"
ROLE_ARN = "arn:aws:iam::123456789012:role/lance-vend"
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Storage:
    """moto's S3 and STS, reached only through the gate."""

    gate: S3PolicyGate

    def s3(self, options: dict[str, str] | None = None) -> Any:
        """An S3 client with vended `options`, or with the server's own keys."""
        options = options or {
            "aws_access_key_id": SERVER_KEY, "aws_secret_access_key": SERVER_SECRET,
        }
        return boto3.client(
            "s3", endpoint_url=self.gate.url, region_name=REGION,
            aws_access_key_id=options["aws_access_key_id"],
            aws_secret_access_key=options["aws_secret_access_key"],
            aws_session_token=options.get("aws_session_token"),
        )


@dataclass
class CatalogGrants:
    """What a catalog that vends (Unity, Polaris) does, standing in with the gate's STS: an
    AssumeRole scoped to the table's prefix, lasting `duration_s`. `issued` lists the keys."""

    storage: Storage
    duration_s: int = 900
    issued: list[str] = field(default_factory=list)

    def __call__(self, location: str, write: bool) -> Grant:
        table = TablePrefix.of(location)
        assert table is not None, location
        policy = session_policy(table, READ_WRITE if write else READ)
        # botocore checks DurationSeconds >= 900 before sending; STS (moto's) decides instead,
        # so that short grants can show refresh.
        sts = boto3.client("sts", endpoint_url=self.storage.gate.url, region_name=REGION,
                           aws_access_key_id=SERVER_KEY, aws_secret_access_key=SERVER_SECRET,
                           config=Config(parameter_validation=False))
        answer = sts.assume_role(RoleArn=ROLE_ARN, RoleSessionName="catalog",
                                 DurationSeconds=self.duration_s, Policy=json.dumps(policy))
        credentials = answer["Credentials"]
        self.issued.append(credentials["AccessKeyId"])
        expiration = credentials["Expiration"].astimezone(UTC)
        return Grant(credentials["AccessKeyId"], credentials["SecretAccessKey"],
                     credentials["SessionToken"], int(expiration.timestamp() * 1000))


@pytest.fixture(scope="module")
def storage() -> Iterator[Storage]:
    """The gated moto of one test module (a shared fixture)."""
    quiet_moto()
    with gated_storage() as gated:
        yield gated


@contextlib.contextmanager
def gated_storage() -> Iterator[Storage]:
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    try:
        with S3PolicyGate(f"http://{host}:{port}", frozenset({SERVER_KEY})) as gate:
            storage = Storage(gate)
            storage.s3().create_bucket(Bucket=BUCKET)
            yield storage
    finally:
        moto.stop()


def server_storage(gate_url: str) -> dict[str, str]:
    """The server's own `storage.*` options: the gated S3 with its trusted keys."""
    return {
        "storage.aws_endpoint": gate_url,
        "storage.allow_http": "true",
        "storage.aws_region": REGION,
        "storage.aws_access_key_id": SERVER_KEY,
        "storage.aws_secret_access_key": SERVER_SECRET,
    }


def adapter_properties(gate_url: str, **vending: str) -> dict[str, str]:
    """A `dir` root in the gated bucket; `vending` adds `vending.<key>` properties."""
    properties = {"root": ROOT, **server_storage(gate_url)}
    properties.update({f"vending.{key.replace('_', '-')}": value for key, value in vending.items()})
    return properties


def vending_on(gate_url: str, **vending: str) -> dict[str, str]:
    """Vending on, also for requests that leave `vend_credentials` unset (pylance's)."""
    settings = {"unasked": "true", **vending}
    return adapter_properties(
        gate_url, enabled="true", role_arn=ROLE_ARN, sts_endpoint=gate_url, region=REGION,
        **settings,
    )


@contextlib.contextmanager
def adapter(properties: dict[str, str], impl: str = "dir", **settings: Any) -> Iterator[str]:
    with running_server(impl, properties, metadata_cache=False, **settings) as url:
        yield url


CLIENT = """
import json, sys, time
import lance, lance_namespace, pyarrow as pa
command, url, table, *rest = sys.argv[1:]
table_id = table.split("$")  # an id's parts are joined by $
ns = lance_namespace.connect("rest", {"uri": url, **json.loads(rest[0] if rest else "{}")})
if command == "write":
    rows = pa.table({"id": list(range(1000)), "text": [f"row {i}" for i in range(1000)]})
    lance.write_dataset(rows, namespace_client=ns, table_id=table_id, mode="create",
                        max_rows_per_file=100)
    print(json.dumps({"rows": lance.dataset(namespace_client=ns, table_id=table_id).count_rows()}))
elif command == "append":
    rows = pa.table({"id": [-1], "text": ["appended"]})
    lance.write_dataset(rows, namespace_client=ns, table_id=table_id, mode="append")
    print(json.dumps({"rows": lance.dataset(namespace_client=ns, table_id=table_id).count_rows()}))
elif command == "read-for":
    dataset = lance.dataset(namespace_client=ns, table_id=table_id)
    seconds, reads, deadline = float(rest[1]), [], time.time() + float(rest[1])
    while time.time() < deadline:
        reads.append(dataset.to_table().num_rows)
        time.sleep(0.5)
    print(json.dumps({"reads": reads}))
elif command == "lancedb":  # LanceDB's namespace connection: create, append, read
    import lancedb
    db = lancedb.connect_namespace("rest", {"uri": url})
    namespace, name = table_id[:-1], table_id[-1]
    rows = pa.table({"id": list(range(500)), "text": [f"row {i}" for i in range(500)]})
    db.create_table(name, rows, namespace_path=namespace)
    db.open_table(name, namespace_path=namespace).add(rows)
    table = db.open_table(name, namespace_path=namespace)
    print(json.dumps({"rows": table.count_rows(), "first": table.to_arrow()["id"][0].as_py()}))
elif command == "open-with":
    options = json.loads(rest[1])
    print(json.dumps({"rows": lance.dataset(table, storage_options=options).count_rows()}))
"""


def run_client(*arguments: str, timeout: float = 120, script: str = CLIENT) -> dict[str, Any]:
    """Run `script` (pylance's and LanceDB's CLIENT unless told) in a process whose environment
    holds no credentials (no AWS_* variables, an empty HOME, so no ~/.aws either); its JSON
    answer, or {"error": stderr's last line}."""
    home = Path(os.environ.get("TMPDIR", "/tmp")) / "vending-client-home"
    home.mkdir(exist_ok=True)
    environment = {"PATH": os.environ.get("PATH", ""), "HOME": str(home),
                   "AWS_EC2_METADATA_DISABLED": "true"}
    done = run_python(script, *arguments, env=environment, cwd=home, timeout=timeout)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["(no output)"]
        return {"error": lines[-1], "stderr": done.stderr}
    return json.loads(done.stdout.strip().splitlines()[-1])


def quiet_moto() -> None:
    """moto's server logs every request; the gate's decisions are what the tests read."""
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
