"""Credential vending (issue 18): table-scoped STS credentials, enforced for real.

The enforcement point is `tests/support/s3_policy_gate.py`, a stand-in for AWS in front of
moto (moto ignores session policies and expiry): it verifies each request's signature against
the session moto's STS minted and evaluates that session's policy and expiry. The defect tests
widen the minted policy or drop the expiry and show the same checks then come out the other way,
so it is the gate, not luck, that denies.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import botocore.exceptions
import httpx
import pytest

from app.auth import load_identities
from app.settings import Settings
from backends.core.secrets import is_credential
from backends.core.settings import ConfigurationError
from backends.vending import (
    READ,
    READ_WRITE,
    CredentialVendor,
    TablePrefix,
    VendingSettings,
    credential_vendor,
    session_policy,
)
from tests.support.doc_blocks import blocks_run_by
from tests.support.fault_proxy import FaultProxy
from tests.support.glue import glue_properties
from tests.support.hive import HiveMetastoreProcess
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.vending import (
    BUCKET,
    REGION,
    ROLE_ARN,
    SERVER_KEY,
    SERVER_SECRET,
    Storage,
    adapter,
    adapter_properties,
    run_client,
    vending_on,
)


def describe(url: str, table: str, **fields: Any) -> dict[str, Any]:
    answer = httpx.post(f"{url}/v1/table/{table}/describe", json=fields, timeout=30,
                        headers=fields.pop("headers", None))
    assert answer.status_code == 200, answer.text
    return answer.json()


def reached(s3: Any, call: str, **arguments: Any) -> bool:
    """True when the gate let the call through; False on its denial."""
    try:
        getattr(s3, call)(**arguments)
    except botocore.exceptions.ClientError as error:
        assert error.response["Error"]["Code"] in ("AccessDenied", "ExpiredToken"), error
        return False
    return True


def reach(storage: Storage, options: dict[str, str], own: str, neighbour: str) -> dict[str, bool]:
    """What credentials vended for the table under `own` reach (both are key prefixes)."""
    s3 = storage.s3(options)
    return {
        "own object": reached(s3, "get_object", Bucket=BUCKET, Key=f"{own}/probe"),
        "own listing": reached(s3, "list_objects_v2", Bucket=BUCKET, Prefix=f"{own}/"),
        "neighbour object": reached(s3, "get_object", Bucket=BUCKET, Key=f"{neighbour}/probe"),
        "neighbour listing": reached(s3, "list_objects_v2", Bucket=BUCKET, Prefix=own),
        "bucket root": reached(s3, "list_objects_v2", Bucket=BUCKET),
        "object outside tables": reached(s3, "get_object", Bucket=BUCKET, Key="top-level"),
    }


ONLY_OWN = {"own object": True, "own listing": True, "neighbour object": False,
            "neighbour listing": False, "bucket root": False, "object outside tables": False}


def put_probes(storage: Storage, *prefixes: str) -> None:
    admin = storage.s3()
    admin.put_object(Bucket=BUCKET, Key="top-level", Body=b"x")
    for prefix in prefixes:
        admin.put_object(Bucket=BUCKET, Key=f"{prefix}/probe", Body=b"x")


def vendor_for(storage: Storage, duration_ms: int = 900_000,
               policy: Callable[..., dict] = session_policy,
               **extra: str) -> CredentialVendor:
    settings = VendingSettings.from_properties({
        "vending.enabled": "true", "vending.role-arn": ROLE_ARN, "vending.region": REGION,
        "vending.sts-endpoint": storage.gate.url, "vending.duration-ms": str(duration_ms),
        **extra,
    })
    server_keys = {"aws_access_key_id": SERVER_KEY, "aws_secret_access_key": SERVER_SECRET,
                   "aws_endpoint": storage.gate.url}
    return CredentialVendor(settings, server_keys, policy=policy)


# ---------------------------------------------------------------- the policy and the settings


def test_the_minted_policy_allows_only_the_tables_prefix() -> None:
    table = TablePrefix.of("s3://bucket/db/t1")
    assert table == TablePrefix("bucket", "db/t1/")
    (documented,) = blocks_run_by("tests/test_vending.py",
                                  "test_the_minted_policy_allows_only_the_tables_prefix")
    assert session_policy(table, READ_WRITE) == json.loads(documented.code)  # docs/security.md
    assert session_policy(table, READ_WRITE) == {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "TableObjects", "Effect": "Allow",
             "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject",
                        "s3:AbortMultipartUpload"],
             "Resource": "arn:aws:s3:::bucket/db/t1/*"},
            {"Sid": "TableListing", "Effect": "Allow", "Action": "s3:ListBucket",
             "Resource": "arn:aws:s3:::bucket",
             "Condition": {"StringLike": {"s3:prefix": "db/t1/*"}}},
            {"Sid": "ServerRecords", "Effect": "Deny",
             "Action": ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
             "Resource": "arn:aws:s3:::bucket/db/t1/_lance_adapter_owner*"},
        ],
    }
    assert session_policy(table, READ)["Statement"][0]["Action"] == ["s3:GetObject"]
    assert len(session_policy(table, READ)["Statement"]) == 2


def test_wildcards_in_a_location_are_literals_and_only_s3_is_vended_for() -> None:
    policy = session_policy(TablePrefix("b", "ns$t*?/"), READ)
    assert policy["Statement"][0]["Resource"] == "arn:aws:s3:::b/ns${$}t${*}${?}/*"
    assert TablePrefix.of("/data/t1.lance") is None
    assert TablePrefix.of("gs://bucket/t1") is None
    assert TablePrefix.of("s3://bucket") is None  # a table at the root: never the whole bucket


def test_vending_is_off_by_default_and_checked_when_on() -> None:
    assert VendingSettings.from_backend_properties({"root": "/x"}).enabled is False
    with pytest.raises(ConfigurationError, match=r"vending\.role-arn"):
        credential_vendor({"vending.enabled": "true"})  # a backend that relays nothing
    with pytest.raises(ConfigurationError, match=r"vending\.access\.bi"):
        VendingSettings.from_properties({"vending.access.bi": "admin"})
    settings = VendingSettings.from_properties({"vending.access.etl": "READ-WRITE"})
    assert (settings.access_of("etl"), settings.access_of("bi"), settings.access_of(None)) == (
        READ_WRITE, READ, READ)


def test_token_entries_name_identities() -> None:
    settings = Settings(auth_mode="token", auth_tokens="etl tok-etl, tok-plain")
    assert load_identities(settings) == {b"tok-etl": "etl", b"tok-plain": None}
    with pytest.raises(ConfigurationError, match="identity"):
        load_identities(Settings(auth_mode="token", auth_tokens="a b c"))


# ---------------------------------------------------------------- scoping, enforced by the gate


def test_credentials_reach_their_prefix_and_not_a_neighbouring_one(storage: Storage) -> None:
    """t1 and t10 side by side (as Hive and Glue place tables): t1's credentials stay in t1/."""
    put_probes(storage, "db/t1", "db/t10")
    vended = vendor_for(storage).vend(f"s3://{BUCKET}/db/t1", None, ["db", "t1"])
    assert vended is not None
    assert reach(storage, dict(vended.storage_options), "db/t1", "db/t10") == ONLY_OWN


def test_a_widened_policy_is_caught(storage: Storage) -> None:
    """The defect the checks above exist for: a policy of the whole bucket. Minted through it,
    the same credentials reach the neighbour and the root, so the assertion above fails."""
    put_probes(storage, "db/w1", "db/w10")

    def whole_bucket(table: TablePrefix, access: str, region: str | None = None,
                     bases: Sequence[TablePrefix] = ()) -> dict:
        return session_policy(TablePrefix(table.bucket, ""), access, region, bases)

    widened = vendor_for(storage, policy=whole_bucket)
    vended = widened.vend(f"s3://{BUCKET}/db/w1", None, ["db", "w1"])
    assert vended is not None
    seen = reach(storage, dict(vended.storage_options), "db/w1", "db/w10")
    assert seen != ONLY_OWN
    assert seen["neighbour object"] and seen["bucket root"] and seen["object outside tables"]


def test_read_credentials_cannot_write(storage: Storage) -> None:
    vendor = vendor_for(storage, **{"vending.access.etl": "read-write"})
    reader = vendor.vend(f"s3://{BUCKET}/db/r1", "bi", ["db", "r1"])
    writer = vendor.vend(f"s3://{BUCKET}/db/r1", "etl", ["db", "r1"])
    assert reader is not None and writer is not None
    put = {"Bucket": BUCKET, "Key": "db/r1/data.lance", "Body": b"x"}
    assert not reached(storage.s3(dict(reader.storage_options)), "put_object", **put)
    assert reached(storage.s3(dict(writer.storage_options)), "put_object", **put)
    assert not reached(storage.s3(dict(writer.storage_options)), "put_object",
                       **{**put, "Key": "db/r10/data.lance"})
    for record in ("_lance_adapter_owner", "_lance_adapter_owner.claim/_versions/1.manifest"):
        assert not reached(storage.s3(dict(writer.storage_options)), "put_object",
                           **{**put, "Key": f"db/r1/{record}"})
        assert not reached(storage.s3(dict(writer.storage_options)), "delete_object",
                           Bucket=BUCKET, Key=f"db/r1/{record}")


def test_expired_credentials_are_refused(storage: Storage) -> None:
    put_probes(storage, "db/e1")
    vended = vendor_for(storage, duration_ms=2000).vend(f"s3://{BUCKET}/db/e1", None, ["db", "e1"])
    assert vended is not None
    s3 = storage.s3(dict(vended.storage_options))
    assert reached(s3, "get_object", Bucket=BUCKET, Key="db/e1/probe")
    lifetime = vended.expires_at_millis / 1000 - time.time()
    past_expiry = storage.gate.ahead_by(timedelta(seconds=lifetime + 1))
    with past_expiry, pytest.raises(botocore.exceptions.ClientError, match="ExpiredToken"):
        s3.get_object(Bucket=BUCKET, Key="db/e1/probe")
    assert reached(s3, "get_object", Bucket=BUCKET, Key="db/e1/probe")  # not yet, really


def test_a_burst_of_vends_costs_one_sts_call(storage: Storage) -> None:
    vendor = vendor_for(storage)
    before = len(storage.gate.sessions)
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(
        vendor.vend(f"s3://{BUCKET}/db/b1", None, ["db", "b1"]))) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(storage.gate.sessions) == before + 1
    assert len({r.storage_options["aws_access_key_id"] for r in results}) == 1


# ---------------------------------------------------------------- through the namespace


def test_a_client_without_credentials_writes_and_reads(
    storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lance_adapter.vending")
    properties = vending_on(storage.gate.url, access="read-write")
    with adapter(properties) as url:
        assert run_client("write", url, "t1") == {"rows": 1000}
        assert run_client("append", url, "t1") == {"rows": 1001}
        assert run_client("write", url, "t10") == {"rows": 1000}
        options = describe(url, "t1")["storage_options"]
        t10 = run_client("open-with", url, f"s3://{BUCKET}/warehouse/t10.lance", "{}",
                         json.dumps(options))
        metrics = httpx.get(f"{url}/metrics").text
    assert "error" in t10 and "AccessDenied" in t10["stderr"]
    assert storage.gate.keys_used(), "the client used vended session keys"
    put_probes(storage, "warehouse/t1.lance", "warehouse/t10.lance")
    assert reach(storage, options, "warehouse/t1.lance", "warehouse/t10.lance") == ONLY_OWN
    assert 'lance_adapter_credentials_vended_total{access="read-write",identity="none"' in metrics
    audit = [r.getMessage() for r in caplog.records if r.name == "lance_adapter.vending"]
    assert any("read-write credentials for table t1 " in line for line in audit)
    assert not any(options["aws_secret_access_key"] in line for line in audit)


def test_identities_get_their_own_access(storage: Storage, tmp_path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("etl token-etl\nbi token-bi\n")
    properties = vending_on(storage.gate.url, **{"access.etl": "read-write"})
    with adapter(properties, auth_mode="token", auth_tokens_file=str(tokens)) as url:
        assert run_client("write", url, "i1", json.dumps(
            {"header.Authorization": "Bearer token-etl"})) == {"rows": 1000}
        etl = describe(url, "i1", headers={"Authorization": "Bearer token-etl"})
        bi = describe(url, "i1", headers={"Authorization": "Bearer token-bi"})
    put = {"Bucket": BUCKET, "Key": "warehouse/i1.lance/new", "Body": b"x"}
    assert reached(storage.s3(etl["storage_options"]), "put_object", **put)
    assert not reached(storage.s3(bi["storage_options"]), "put_object", **put)
    assert reached(storage.s3(bi["storage_options"]), "get_object", Bucket=BUCKET,
                   Key="warehouse/i1.lance/new")


def test_vended_keys_never_exceed_the_callers_access(storage: Storage, tmp_path) -> None:
    """`bi` may vend read-write keys, but the server lets it only read: its keys only read."""
    tokens = tmp_path / "tokens"
    tokens.write_text("etl token-etl\nbi token-bi\n")
    properties = vending_on(storage.gate.url, **{"access.etl": "read-write",
                                                 "access.bi": "read-write"})
    audit = tmp_path / "audit.jsonl"
    with adapter(properties, auth_mode="token", auth_tokens_file=str(tokens),
                 access={"bi": "read"}, audit_log_file=str(audit)) as url:
        assert run_client("write", url, "i2", json.dumps(
            {"header.Authorization": "Bearer token-etl"})) == {"rows": 1000}
        bi = describe(url, "i2", headers={"Authorization": "Bearer token-bi"})
        appended = run_client("append", url, "i2", json.dumps(
            {"header.Authorization": "Bearer token-bi"}))
    assert "error" in appended, appended
    put = {"Bucket": BUCKET, "Key": "warehouse/i2.lance/new", "Body": b"x"}
    assert not reached(storage.s3(bi["storage_options"]), "put_object", **put)
    listed = storage.s3().list_objects_v2(Bucket=BUCKET, Prefix="warehouse/i2.lance/_versions/")
    assert reached(storage.s3(bi["storage_options"]), "get_object", Bucket=BUCKET,
                   Key=listed["Contents"][0]["Key"])
    vends = [json.loads(line) for line in audit.read_text().splitlines()]
    vends = {(line["identity"], line["access"]) for line in vends if line["event"] == "vend"}
    assert {("etl", "read-write"), ("bi", "read")} <= vends  # the audit trail's vend lines
    assert "token-" not in audit.read_text()


def long_read(storage: Storage, table: str,
              answers: Callable[[bytes], bytes] | None = None) -> dict[str, Any]:
    """A client reading one dataset for 4 s while its credentials live 2 s; through a fault
    proxy rewriting the server's answers with `answers`, when given."""
    properties = vending_on(storage.gate.url, access="read-write", duration_ms="2000")
    with adapter(properties) as url, FaultProxy(url, answers=answers) as proxy:
        assert run_client("write", url, table) == {"rows": 1000}
        before = set(storage.gate.sessions)
        answer = run_client("read-for", proxy.url if answers else url, table, "{}", "4.5")
    answer["sessions used"] = storage.gate.keys_used() - before
    return answer


def test_a_long_read_outlives_its_credentials_through_refresh(storage: Storage) -> None:
    answer = long_read(storage, "long1")
    assert "error" not in answer, answer
    assert set(answer["reads"]) == {1000} and len(answer["reads"]) >= 3
    assert len(answer["sessions used"]) >= 2, "DescribeTable was called again for new keys"


def _without_expiry(body: bytes) -> bytes:
    try:
        answer = json.loads(body)
    except ValueError:  # not JSON: as it is
        return body
    if isinstance(answer, dict) and isinstance(answer.get("storage_options"), dict):
        answer["storage_options"].pop("expires_at_millis", None)
    return json.dumps(answer).encode()


def test_dropping_the_expiry_is_caught(storage: Storage) -> None:
    """The defect: no `expires_at_millis` (the server's answers stripped of it by a fault
    proxy). The client never refreshes and the read fails once the credentials expire, so
    the refresh test above would fail."""
    answer = long_read(storage, "long2", _without_expiry)
    assert "ExpiredToken" in answer.get("stderr", ""), answer


def test_no_credential_is_answered_with_vending_off_or_refused(storage: Storage) -> None:
    with adapter(adapter_properties(storage.gate.url)) as url:
        assert httpx.post(f"{url}/v1/table/off1/declare", json={"vend_credentials": True},
                          timeout=30).status_code == 200
        answers = [describe(url, "off1", vend_credentials=True), describe(url, "off1")]
    with adapter(vending_on(storage.gate.url)) as url:
        httpx.post(f"{url}/v1/table/off2/declare", json={}, timeout=30)
        answers.append(describe(url, "off2", vend_credentials=False))
    with adapter(vending_on(storage.gate.url, unasked="false")) as url:
        httpx.post(f"{url}/v1/table/off3/declare", json={}, timeout=30)
        answers.append(describe(url, "off3"))
        asked = describe(url, "off3", vend_credentials=True)
    assert "expires_at_millis" in (asked.get("storage_options") or {}), asked
    for answer in answers:
        options = answer.get("storage_options") or {}
        assert not [key for key in options if is_credential(key)], options
        assert "expires_at_millis" not in options


def test_lancedb_without_credentials_writes_and_reads(storage: Storage) -> None:
    """LanceDB's namespace connection (`lancedb.connect_namespace("rest", ...)`) in a process
    with no credentials: create, append and read through the gate on vended keys only."""
    before = storage.gate.keys_used()
    with adapter(vending_on(storage.gate.url, access="read-write")) as url:
        assert run_client("lancedb", url, "ldb1") == {"rows": 1000, "first": 0}
    used = storage.gate.keys_used() - before
    assert used, "LanceDB used vended session keys"
    assert not [d for d in storage.gate.denials() if d.access_key_id in used]


def test_glue_tables_on_s3_get_credentials_through_the_same_path(storage: Storage) -> None:
    """Glue (moto's, reached directly) with its tables in the gated bucket: the app's one
    vending path mints for them as for `dir`."""
    upstream = storage.gate.upstream
    glue = glue_properties(f"http://{upstream.hostname}:{upstream.port}")
    properties = {**glue, **vending_on(storage.gate.url, access="read-write"),
                  "root": f"s3://{BUCKET}/glue"}
    before = storage.gate.keys_used()
    with adapter(properties, impl="glue") as url:
        created = httpx.post(f"{url}/CreateNamespace", json={"id": ["gdb"]}, timeout=30)
        assert created.status_code == 200, created.text
        assert run_client("write", url, "gdb$g1") == {"rows": 1000}
        answer = describe(url, "gdb$g1")
    assert storage.gate.keys_used() - before, "the client used vended session keys"
    own = answer["location"].removeprefix(f"s3://{BUCKET}/").rstrip("/")
    put_probes(storage, own, own + "0")
    assert reach(storage, answer["storage_options"], own, own + "0") == ONLY_OWN


@pytest.mark.parametrize(("impl", "levels"), [("hive2", []), ("hive3", ["hive"])])
def test_hive_tables_on_s3_get_credentials_through_the_same_path(
    storage: Storage, hive_metastore: HiveMetastoreProcess, impl: str, levels: list[str]
) -> None:
    """hive2 and hive3 (its catalog `hive` on a metastore without catalogs) on the real HMS
    2.3.10 with the root in the gated bucket (HMS takes the `s3://` locations through
    `_s3_as_local` of tests/support/hive.py): Hive places tables side by side, `h1` next to
    `h10`, and `h1`'s credentials stay in `h1/`."""
    database = f"vend_{impl}"
    properties = {**vending_on(storage.gate.url, access="read-write"),
                  "uri": hive_metastore.uri, "root": f"s3://{BUCKET}/{impl}"}
    before = storage.gate.keys_used()
    table = "$".join([*levels, database, "h1"])
    with adapter(properties, impl=impl) as url:
        created = httpx.post(f"{url}/CreateNamespace", json={"id": [*levels, database]},
                             timeout=60)
        assert created.status_code == 200, created.text
        assert run_client("write", url, table) == {"rows": 1000}
        assert run_client("append", url, table) == {"rows": 1001}
        answer = describe(url, table)
    own = f"{impl}/{database}.db/h1"
    assert answer["location"] == f"s3://{BUCKET}/{own}"
    used = storage.gate.keys_used() - before
    assert used, "the client used vended session keys"
    assert not [d for d in storage.gate.denials() if d.access_key_id in used]
    put_probes(storage, own, own + "0")
    assert reach(storage, answer["storage_options"], own, own + "0") == ONLY_OWN


# ---------------------------------------------------------------- hostile locations (issue 24)

OTHER_BUCKET = "other-bucket"


@pytest.mark.parametrize("impl", ["dir", "glue"])
def test_hostile_locations_are_refused_and_nothing_outside_is_reached(
    storage: Storage, impl: str
) -> None:
    """Each form once made the server (glue, and the code hive, unity and iceberg share) vend
    keys for, read or write another bucket's data: a fragment or a query that Lance drops, a
    wildcard bucket, an encoded `?`, `file:` without `//`."""
    s3 = storage.s3()
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(Bucket=OTHER_BUCKET)
    s3.put_object(Bucket=OTHER_BUCKET, Key="victim/_versions/1.manifest", Body=b"victim")
    properties = vending_on(storage.gate.url, access="read-write")
    table, inside = "h1", f"{BUCKET}/warehouse"
    if impl == "glue":
        upstream = storage.gate.upstream
        glue = glue_properties(f"http://{upstream.hostname}:{upstream.port}")
        properties = {**glue, **properties, "root": f"s3://{BUCKET}/hostile"}
        table, inside = "hdb$h1", f"{BUCKET}/hostile/hdb"
    hostile = [
        f"s3://{OTHER_BUCKET}/secret#/../../{inside}/h1",
        f"s3://{OTHER_BUCKET}/victim?x=/../../{inside}/h1",
        f"s3://*/secret#/../../{inside}/h1",
        f"s3://{OTHER_BUCKET}/victim%3F/../../{inside}/h1",
        "file:/tmp/lance-vend-outside/h1",
    ]
    sessions_before = set(storage.gate.sessions)
    with adapter(properties, impl=impl) as url:
        if impl == "glue":
            httpx.post(f"{url}/CreateNamespace", json={"id": ["hdb"]}).raise_for_status()
        for location in hostile:
            for operation in ("declare", "register"):
                answer = httpx.post(f"{url}/v1/table/{table}/{operation}", timeout=30, json={
                    "location": location, "vend_credentials": True})
                assert (answer.status_code, answer.json()["code"]) == (400, 13), (
                    operation, location, answer.text)
            assert httpx.post(f"{url}/v1/table/{table}/exists", json={}).status_code == 404
    assert set(storage.gate.sessions) == sessions_before, "keys were minted"
    listed = s3.list_objects_v2(Bucket=OTHER_BUCKET)["Contents"]
    assert [item["Key"] for item in listed] == ["victim/_versions/1.manifest"]
    assert not Path("/tmp/lance-vend-outside").exists()


def test_a_table_named_like_url_syntax_gets_no_key_wider_than_itself(storage: Storage) -> None:
    """A root table named `?`: its answer once named `.../warehouse/?.lance` and the key
    minted for it, cut at the `?`, covered the whole root (the catalog included)."""
    with adapter(vending_on(storage.gate.url, access="read-write")) as url:
        created = httpx.post(f"{url}/v1/table/%3F/create", timeout=60,
                             content=arrow_stream(sample_table(3)),
                             headers={"content-type": "application/vnd.apache.arrow.stream"})
        assert created.status_code == 200, created.text
        described = describe(url, "%3F", vend_credentials=True)
        counted = httpx.post(f"{url}/v1/table/%3F/count_rows", json={}, timeout=30)
    # The answer names the place Lance opens: the `?` escaped once, as where it was written.
    assert described["location"] == f"s3://{BUCKET}/warehouse/%3F.lance"
    assert counted.json() == 3
    options = described["storage_options"]
    manifest = storage.s3().list_objects_v2(Bucket=BUCKET, Prefix="warehouse/__manifest/")
    key = manifest["Contents"][0]["Key"]
    assert not reached(storage.s3(options), "get_object", Bucket=BUCKET, Key=key)
    put_probes(storage, "warehouse/?.lance", "warehouse/?.lance0")
    assert reach(storage, options, "warehouse/?.lance", "warehouse/?.lance0") == ONLY_OWN


def test_no_key_is_minted_for_a_location_that_holds_other_tables(storage: Storage) -> None:
    """An entry another tool put in Glue at a namespace's directory (where the layout puts
    other tables' own paths): DescribeTable answers it without keys, while the table created
    beside it at its own path gets keys for that path alone."""
    upstream = storage.gate.upstream
    glue = glue_properties(f"http://{upstream.hostname}:{upstream.port}")
    properties = {**glue, **vending_on(storage.gate.url, access="read-write"),
                  "root": f"s3://{BUCKET}/holding"}
    with adapter(properties, impl="glue") as url:
        httpx.post(f"{url}/CreateNamespace", json={"id": ["hold"]}).raise_for_status()
        created = httpx.post(f"{url}/v1/table/hold$own/create", timeout=60,
                             content=arrow_stream(sample_table(3)),
                             headers={"content-type": "application/vnd.apache.arrow.stream"})
        assert created.status_code == 200, created.text
        boto3_glue(glue).create_table(DatabaseName="hold", TableInput={
            "Name": "wide", "TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "lance"},
            "StorageDescriptor": {"Location": f"s3://{BUCKET}/holding/hold"}})
        own = describe(url, "hold$own", vend_credentials=True)
        wide = describe(url, "hold$wide", vend_credentials=True)
        # Another tool's entry at the created table's location: the record there names
        # hold$own, so no keys are minted for the alias.
        boto3_glue(glue).create_table(DatabaseName="hold", TableInput={
            "Name": "alias", "TableType": "EXTERNAL_TABLE", "Parameters": {"table_type": "lance"},
            "StorageDescriptor": {"Location": own["location"]}})
        alias = describe(url, "hold$alias", vend_credentials=True)
    assert "aws_access_key_id" in (own.get("storage_options") or {})
    assert wide["location"] == f"s3://{BUCKET}/holding/hold"
    assert "aws_access_key_id" not in (wide.get("storage_options") or {})
    assert alias["location"] == own["location"]
    assert "aws_access_key_id" not in (alias.get("storage_options") or {})


def boto3_glue(properties: dict[str, str]) -> Any:
    import boto3

    return boto3.client(
        "glue", endpoint_url=properties["endpoint"], region_name=properties["region"],
        aws_access_key_id=properties["access_key_id"],
        aws_secret_access_key=properties["secret_access_key"])


def test_a_hung_sts_answers_17_within_the_backend_timeout(storage: Storage) -> None:
    """Vending runs on the backend calls' bounded pool with their timeout: an STS that
    accepts and never answers (a stand-in for an outage) costs the caller the backend
    timeout, then 503 / code 17, and the server keeps answering."""
    with socket.create_server(("127.0.0.1", 0)) as hung:
        properties = {**vending_on(storage.gate.url),
                      "vending.sts-endpoint": f"http://127.0.0.1:{hung.getsockname()[1]}"}
        with adapter(properties, backend_timeout=1.0) as url:
            started = time.monotonic()
            answer = httpx.post(f"{url}/v1/table/hung/declare", timeout=30,
                                json={"vend_credentials": True})
            took = time.monotonic() - started
            assert httpx.get(f"{url}/v1/namespace/$/list").status_code == 200
    assert answer.status_code == 503 and answer.json()["code"] == 17, answer.text
    assert "VendCredentials" in answer.json()["error"]
    assert 1.0 <= took < 5.0
