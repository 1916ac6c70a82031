"""Several catalogs in one server (`catalogs`, `backends.federation`): two `dir` roots and Glue
on moto under one URL, each a top-level namespace; the root lists them; grants on one reach
nothing in the others; what would span catalogs is refused with a sentence; one catalog's
outage leaves the others serving."""

from __future__ import annotations

import io
import json
import logging
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import lance
import lance_namespace
import lancedb
import pytest
import yaml
from lance_namespace import (
    CreateNamespaceRequest,
    CreateTableRequest,
    DescribeTableRequest,
    DropTableRequest,
    RegisterTableRequest,
)
from pyspark.sql import SparkSession

import lance_adapter_spark
from app.cli import effective_settings
from app.cli import main as cli_main
from app.config import load_settings, served_backend
from app.maintenance import maintains
from backends.core.settings import ConfigurationError
from backends.maintenance import MaintenancePolicy, maintain_all
from backends.ownership_claims import claim_location
from tests.support.adapter import metric, running_server
from tests.support.cli import start_adapter
from tests.support.doc_blocks import blocks_run_by
from tests.support.glue import MotoEndpoint, glue_properties, start_moto
from tests.support.hive import HiveMetastoreProcess
from tests.support.iceberg_rest_server import IcebergRestServer
from tests.support.lance_data import VECTOR_DIMENSION, arrow_stream, sample_table
from tests.support.vending import SERVER_KEY, Storage, vending_on


def catalogs(tmp_path: Path, glue_url: str) -> dict[str, dict[str, str]]:
    return {
        "lake": {"impl": "dir", "root": str(tmp_path / "lake")},
        "scratch": {"impl": "dir", "root": str(tmp_path / "scratch")},
        "aws": {"impl": "glue", **glue_properties(glue_url, root=str(tmp_path / "warehouse"))},
    }


@pytest.fixture
def glue_url(clean_moto: MotoEndpoint) -> str:
    return clean_moto.url


@pytest.fixture
def federated(tmp_path: Path, glue_url: str) -> Iterator[httpx.Client]:
    with running_server(catalogs=catalogs(tmp_path, glue_url)) as url, httpx.Client(
            base_url=url, timeout=30) as client:
        yield client


def ok(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    return response.json() if response.content else {}


def test_each_catalog_serves_its_tables_under_its_name(
    federated: httpx.Client, tmp_path: Path
) -> None:
    assert ok(federated.get("/v1/namespace/$/list"))["namespaces"] == ["aws", "lake", "scratch"]
    for catalog in ("lake", "scratch", "aws"):
        ok(federated.post(f"/v1/namespace/{catalog}$sales/create", json={}))
        ok(federated.post(f"/v1/table/{catalog}$sales$orders/create",
                          content=arrow_stream(sample_table(3))))
        ok(federated.post(f"/v1/table/{catalog}$sales$orders/insert",
                          content=arrow_stream(sample_table(2, start=10))))
        assert ok(federated.post(f"/v1/table/{catalog}$sales$orders/count_rows", json={})) == 5
        assert ok(federated.get(f"/v1/namespace/{catalog}$sales/table/list"))["tables"] == [
            "orders"]
        assert ok(federated.post(f"/v1/namespace/{catalog}/describe", json={}))[
            "properties"] == {"catalog.impl": "glue" if catalog == "aws" else "dir"}
    # Each catalog's data lies in its own storage, readable there by pylance.
    lake = ok(federated.post("/v1/table/lake$sales$orders/describe", json={}))["location"]
    assert lake.startswith(f"file://{tmp_path / 'lake'}")
    assert lance.dataset(lake).count_rows() == 5
    every = ok(federated.get("/v1/table", params={"limit": 2}))
    tables = list(every["tables"])
    while every.get("page_token"):
        every = ok(federated.get("/v1/table", params={"limit": 2,
                                                       "page_token": every["page_token"]}))
        tables += every["tables"]
    assert tables == ["aws$sales$orders", "lake$sales$orders", "scratch$sales$orders"]


def test_answers_name_ids_as_the_client_sent_them(federated: httpx.Client) -> None:
    """DescribeTable's namespace and DropTable's id lead with the catalog, as the request's
    id did (the catalog's own answer names them inside it)."""
    for catalog in ("lake", "aws"):
        ok(federated.post(f"/v1/namespace/{catalog}$sales/create", json={}))
        ok(federated.post(f"/v1/table/{catalog}$sales$orders/create",
                          content=arrow_stream(sample_table(3))))
        for _ in range(2):  # a second answer (from the cache, on dir) is the same
            described = ok(federated.post(f"/v1/table/{catalog}$sales$orders/describe",
                                          json={}))
            # dir names the table's namespace; glue's answer names none
            assert described.get("namespace") == (None if catalog == "aws"
                                                   else [catalog, "sales"])
        dropped = ok(federated.post(f"/v1/table/{catalog}$sales$orders/drop", json={}))
        assert dropped["id"] == [catalog, "sales", "orders"]


def test_what_spans_catalogs_or_changes_them_is_refused(federated: httpx.Client) -> None:
    ok(federated.post("/v1/namespace/lake$ns/create", json={}))
    ok(federated.post("/v1/namespace/scratch$ns/create", json={}))
    ok(federated.post("/v1/table/lake$ns$t/create", content=arrow_stream(sample_table(1))))
    moved = federated.post("/v1/table/lake$ns$t/rename",
                           json={"new_table_name": "t", "new_namespace_id": ["scratch", "ns"]})
    assert moved.status_code == 406 and "each catalog commits its own" in moved.json()["error"]
    renamed = federated.post("/v1/table/lake$ns$t/rename",
                             json={"new_table_name": "u", "new_namespace_id": ["lake", "ns"]})
    ok(renamed)
    for path in ("/v1/namespace/new/create", "/v1/namespace/lake/drop",
                 "/v1/namespace/lake/create"):
        refused = federated.post(path, json={})
        assert refused.status_code == 406, refused.text
        assert "`catalogs` setting" in refused.json()["error"]
    missing = federated.post("/v1/table/nowhere$ns$t/describe", json={})
    assert missing.status_code == 404 and "no catalog nowhere" in missing.json()["error"]
    assert ok(federated.get("/v1/namespace/$/table/list"))["tables"] == []


def test_a_grant_on_one_catalog_reaches_nothing_in_the_others(
    tmp_path: Path, glue_url: str
) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("admin tok-admin\netl tok-etl\n")
    with running_server(catalogs=catalogs(tmp_path, glue_url), auth_mode="token",
                        auth_tokens_file=str(tokens), access_default="none",
                        access={"admin": "admin", "etl": "write@lake$sales"}) as url:
        admin = httpx.Client(base_url=url, headers={"authorization": "Bearer tok-admin"})
        etl = httpx.Client(base_url=url, headers={"authorization": "Bearer tok-etl"})
        for catalog in ("lake", "scratch", "aws"):
            ok(admin.post(f"/v1/namespace/{catalog}$sales/create", json={}))
            ok(admin.post(f"/v1/table/{catalog}$sales$t/create",
                          content=arrow_stream(sample_table(2))))
        ok(etl.post("/v1/table/lake$sales$t/insert", content=arrow_stream(sample_table(1, 9))))
        assert ok(etl.post("/v1/table/lake$sales$t/count_rows", json={})) == 3
        for catalog in ("scratch", "aws"):
            for path, body in ((f"/v1/table/{catalog}$sales$t/count_rows", {}),
                               (f"/v1/table/{catalog}$sales$t/describe", {}),
                               (f"/v1/namespace/{catalog}$sales/table/list", None)):
                answer = etl.post(path, json=body) if body is not None else etl.get(path)
                assert answer.status_code in (401, 403), (path, answer.text)
        assert ok(admin.post("/v1/table/aws$sales$t/count_rows", json={})) == 2


def test_one_catalog_down_leaves_the_others_serving(
    tmp_path: Path, clean_moto: MotoEndpoint, hive_metastore: HiveMetastoreProcess,
    iceberg_rest_server: IcebergRestServer,
) -> None:
    """dir, glue (moto), hive2 (the real metastore) and iceberg (the reference server) as four
    catalogs; Glue's server stopped: the other three keep serving, its ids answer 503."""
    server, url = start_moto()  # a server of its own, stopped below (the state is shared)
    configured = {
        "lake": {"impl": "dir", "root": str(tmp_path / "lake")},
        "aws": {"impl": "glue", **glue_properties(url, root=str(tmp_path / "warehouse"))},
        "hms": {"impl": "hive2", "uri": hive_metastore.uri, "root": str(tmp_path / "hms")},
        "ice": {"impl": "iceberg", "endpoint": iceberg_rest_server.url,
                "root": str(tmp_path / "ice"), "warehouses": "wh"},
    }
    namespaces = {"lake": "lake$ns", "hms": f"hms$fed_{uuid.uuid4().hex[:8]}",
                  "ice": f"ice$wh$fed_{uuid.uuid4().hex[:8]}", "aws": "aws$ns"}
    with running_server(catalogs=configured, backend_timeout=20) as served:
        client = httpx.Client(base_url=served, timeout=30)
        for namespace in namespaces.values():
            ok(client.post(f"/v1/namespace/{namespace}/create", json={}))
        server.stop()
        for catalog in ("lake", "hms", "ice"):
            table = f"{namespaces[catalog]}$t"
            ok(client.post(f"/v1/table/{table}/create", content=arrow_stream(sample_table(2))))
            assert ok(client.post(f"/v1/table/{table}/count_rows", json={})) == 2
        down = client.post("/v1/namespace/aws$ns/describe", json={})
        assert down.status_code == 503 and down.json()["code"] == 17, down.text
        ready = ok(client.get("/readyz"))  # the others serve
        assert ready == {"status": "ready", "degraded": {"aws": "code 17"}}, ready


def test_catalogs_are_checked_at_start(tmp_path: Path) -> None:
    one = {"impl": "dir", "root": str(tmp_path / "one")}
    for configured, message in (
        ({"catalogs": {"c": {"root": "x"}}}, "needs an 'impl'"),
        ({"catalogs": {"a$b": one}}, "must not contain"),
        ({"catalogs": {"c": one}, "properties": {"root": "x"}}, "not both"),
        ({"catalogs": {"lance": one}}, "LanceDB root database"),
        ({"catalogs": {"c": one, "d": {**one, "manifest_enable": "false"}}},
         "catalog 'd': unknown property 'manifest_enable'"),
    ):
        with pytest.raises(ConfigurationError, match=message):
            served_backend(load_settings(overrides=configured))


def test_catalogs_whose_roots_nest_are_refused_at_start(tmp_path: Path) -> None:
    """A root inside another's (also through a link), or the same root: one catalog's table
    could be registered at the other's data and delete it. The switch serves them anyway."""
    lake = tmp_path / "lake"
    (lake / "inner").mkdir(parents=True)
    (tmp_path / "link").symlink_to(lake / "inner")
    for other in (lake / "hive", lake, tmp_path / "link", lake / "inner"):
        catalogs = {"lake": {"impl": "dir", "root": str(lake)},
                    "hive": {"impl": "dir", "root": str(other)}}
        with pytest.raises(ConfigurationError, match="catalogs 'hive' and 'lake'"):
            served_backend(load_settings(overrides={"catalogs": catalogs}))
        served = served_backend(load_settings(
            overrides={"catalogs": catalogs, "catalogs_nested_roots": True}))
        assert sorted(served.catalogs) == ["hive", "lake"]
    apart = {"lake": {"impl": "dir", "root": str(lake)},
             "side": {"impl": "dir", "root": str(tmp_path / "lake-side")}}  # a shared prefix
    assert sorted(served_backend(load_settings(overrides={"catalogs": apart})).catalogs) == [
        "lake", "side"]


def test_nested_catalogs_never_take_each_others_data(tmp_path: Path) -> None:
    """`a`'s root inside `b`'s (allowed by the switch): a table of `b` with the id of `a`'s
    table cannot register `a`'s data (the record names the catalog), so its DropTable cannot
    delete it; before records named catalogs, both could. Nor can it take a location `a` is
    registering under the same id (the claim names the catalog too)."""
    root = tmp_path / "lake"
    catalogs = {"a": {"impl": "dir", "root": str(root / "inner")},
                "b": {"impl": "dir", "root": str(root)}}
    served = served_backend(load_settings(
        overrides={"catalogs": catalogs, "catalogs_nested_roots": True}))
    first, second = served.catalogs["a"], served.catalogs["b"]
    for catalog in (first, second):
        catalog.create_namespace(CreateNamespaceRequest(id=["ns"]))
    first.create_table(CreateTableRequest(id=["ns", "t"]), arrow_stream(sample_table(3)))
    location = first.describe_table(DescribeTableRequest(id=["ns", "t"])).location
    for table in (["ns", "t"], ["ns", "u"]):
        with pytest.raises(lance_namespace.InvalidInputError, match="another catalog owns"):
            second.register_table(RegisterTableRequest(id=table, location=location))
    with pytest.raises(lance_namespace.TableNotFoundError):
        second.drop_table(DropTableRequest(id=["ns", "t"]))
    assert lance.dataset(location).count_rows() == 3


    claimed = str(root / "inner" / "ns" / "claimed")  # `a`'s registration under way
    lance.write_dataset(sample_table(2), claimed)
    assert claim_location(claimed, None, ["ns", "c"], "a") is None
    with pytest.raises(lance_namespace.InvalidInputError, match="being registered by table"):
        second.register_table(RegisterTableRequest(id=["ns", "c"], location=claimed))


def test_each_external_location_belongs_to_one_catalog(tmp_path: Path) -> None:
    """An external location is bound within one catalog (its name first), and no two
    catalogs' places overlap: otherwise a table of one could register another's data."""
    catalogs = {"lake": {"impl": "dir", "root": str(tmp_path / "lake")},
                "hive": {"impl": "dir", "root": str(tmp_path / "hive")}}
    legacy = str(tmp_path / "legacy")
    for external, message in (
        ({legacy: ""}, "bound to a namespace of one catalog"),
        ({legacy: "nowhere$hr"}, "bound to a namespace of one catalog"),
        ({legacy: "lake$hr", f"{legacy}/inner": "hive$hr"}, "catalogs 'hive' and 'lake'"),
        ({str(tmp_path / "lake" / "x"): "hive$hr"}, "catalogs 'hive' and 'lake'"),
    ):
        with pytest.raises(ConfigurationError, match=message):
            served_backend(load_settings(overrides={"catalogs": catalogs,
                                                    "external_locations": external}))
    served = served_backend(load_settings(overrides={
        "catalogs": catalogs, "external_locations": {legacy: "lake$hr"}}))
    assert [(entry.prefix.uri, entry.namespace)
            for entry in served.catalogs["lake"].containment.external] == [(legacy, ("hr",))]
    assert served.catalogs["hive"].containment.external == ()


def test_a_clone_works_in_every_catalog_and_never_across(tmp_path: Path) -> None:
    catalogs = {name: {"impl": "dir", "root": str(tmp_path / name)} for name in ("a", "b")}
    with running_server("dir", {}, catalogs=catalogs) as url, \
            httpx.Client(base_url=url, timeout=60) as http:
        locations = {}
        for catalog in catalogs:
            http.post(f"/v1/namespace/{catalog}$hr/create", json={}).raise_for_status()
            http.post(f"/v1/table/{catalog}$hr$t/create",
                      content=arrow_stream(sample_table(2))).raise_for_status()
            locations[catalog] = http.post(f"/v1/table/{catalog}$hr$t/describe",
                                           json={}).json()["location"]
            cloned = http.post(f"/v1/table/{catalog}$hr$c/clone",
                               json={"source_location": locations[catalog]})
            assert cloned.status_code == 200, cloned.text
            assert http.post(f"/v1/table/{catalog}$hr$c/count_rows", json={}).json() == 2
        across = http.post("/v1/table/b$hr$x/clone", json={"source_location": locations["a"]})
        assert (across.status_code, across.json()["code"]) == (406, 0), across.text
        nowhere = http.post("/v1/table/b$hr$y/clone",
                            json={"source_location": str(tmp_path / "elsewhere")})
        assert (nowhere.status_code, nowhere.json()["code"]) == (400, 13), nowhere.text


def test_the_documented_catalogs_serve_as_written(tmp_path: Path, glue_url: str) -> None:
    """docs/operations.md's `catalogs` as written, served by `lance-adapter serve` (Glue on
    moto: its endpoint and keys added to the aws catalog; the roots and tokens file here)."""
    (block,) = blocks_run_by("tests/test_federation.py",
                             "test_the_documented_catalogs_serve_as_written")
    config = yaml.safe_load(block.code)
    config["catalogs"]["aws"] = {**config["catalogs"]["aws"], **glue_properties(
        glue_url, root=str(tmp_path / "warehouse"))}
    config["catalogs"]["scratch"]["root"] = str(tmp_path / "scratch")
    tokens = tmp_path / "tokens"
    tokens.write_text("etl etl-token\nplatform platform-token\n")
    config["auth_tokens_file"] = str(tokens)
    config["access"]["platform"] = "admin"
    (tmp_path / "adapter.yaml").write_text(yaml.safe_dump(config))
    adapter = start_adapter(tmp_path, "--config", str(tmp_path / "adapter.yaml"),
                            "--impl", "dir", "--workers", "2")
    try:
        def call(path: str, token: str, **body: object) -> httpx.Response:
            return httpx.post(f"{adapter.url}{path}", headers={
                "authorization": f"Bearer {token}"}, timeout=30, **body)

        for namespace in ("aws$sales", "scratch$ml"):
            ok(call(f"/v1/namespace/{namespace}/create", "platform-token", json={}))
            ok(call(f"/v1/table/{namespace}$t/create", "platform-token",
                    content=arrow_stream(sample_table(2))))
        ok(call("/v1/table/aws$sales$t/insert", "etl-token",
                content=arrow_stream(sample_table(1, 5))))
        assert ok(call("/v1/table/scratch$ml$t/count_rows", "etl-token", json={})) == 2
        refused = call("/v1/table/scratch$ml$t/insert", "etl-token",
                       content=arrow_stream(sample_table(1, 5)))
        assert refused.status_code == 403, refused.text
        listed = httpx.get(f"{adapter.url}/v1/namespace/$/list", timeout=30,
                           headers={"authorization": "Bearer platform-token"})
        assert ok(listed)["namespaces"] == ["aws", "scratch"]
    finally:
        adapter.stop()


@pytest.mark.parametrize("database", ["scratch$ml", "aws$sales"])
def test_lancedb_reaches_a_catalog_namespace_as_a_database(
    federated: httpx.Client, database: str, tmp_path: Path
) -> None:
    """LanceDB's remote client on a namespace inside a catalog (its whole id as the database)
    answers as embedded LanceDB does."""
    ok(federated.post(f"/v1/namespace/{database}/create", json={}))
    remote = lancedb.connect(f"db://{database}", api_key="any", host_override=str(
        federated.base_url).rstrip("/"), region="local")
    embedded = lancedb.connect(str(tmp_path / "embedded"))
    for db in (remote, embedded):
        table = db.create_table("items", sample_table(20))
        table.add(sample_table(5, start=100))
    assert remote.table_names() == embedded.table_names() == ["items"]
    for db in (remote, embedded):
        assert db.open_table("items").count_rows("id >= 10") == 15
    query = [0.5] * VECTOR_DIMENSION
    found = [db.open_table("items").search(query).limit(3).select(["id"]).to_arrow()
             .column("id").to_pylist() for db in (remote, embedded)]
    assert found[0] == found[1] and len(found[0]) == 3
    catalog = lancedb.connect_catalog(str(federated.base_url).rstrip("/"), api_key="any")
    assert catalog.list_databases().databases == ["aws", "lake", "scratch"]
    # A database of `connect_catalog` is one name (LanceDB refuses a `$` in it): a catalog,
    # whose namespaces `table_names(namespace_path=...)` reaches.
    top, namespace = database.split("$")
    assert list(catalog.connect_database(top).table_names(namespace_path=[namespace])) == [
        "items"]
    with pytest.raises(RuntimeError, match="`catalogs` setting"):
        catalog.create_database("other")


def test_operations_and_metrics_are_told_per_catalog(federated: httpx.Client) -> None:
    every = set(ok(federated.post("/ListOperations", json={}))["operations"])
    lake = set(ok(federated.post("/ListOperations", json={"id": ["lake"]}))["operations"])
    aws = set(ok(federated.post("/ListOperations", json={"id": ["aws"]}))["operations"])
    assert every == lake & aws and "DescribeTable" in every
    assert "AlterNamespace" in aws - lake  # Glue alters databases; a dir root does not
    assert not {"BatchCommitTables", "BatchCreateTableVersions"} & (lake | aws)
    missing = federated.post("/ListOperations", json={"id": ["nowhere"]})
    assert missing.status_code == 404, missing.text
    ok(federated.post("/v1/namespace/lake$ns/create", json={}))
    assert federated.post("/v1/namespace/aws$none/describe", json={}).status_code == 404
    text = federated.get("/metrics").text
    assert metric(text, "lance_adapter_catalog_requests_total", catalog="lake",
                  operation="CreateNamespace", outcome="ok") == 1
    assert metric(text, "lance_adapter_catalog_requests_total", catalog="aws",
                  operation="DescribeNamespace", outcome="error") == 1


def test_no_catalog_secret_is_shown_by_config_or_logged(
    tmp_path: Path, glue_url: str, log_lines: io.StringIO
) -> None:
    """`lance-adapter config` masks each catalog's credentials, and the log hides them as
    it hides a single backend's."""
    configured = catalogs(tmp_path, glue_url)
    secret = configured["aws"]["secret_access_key"]
    shown = effective_settings(load_settings(overrides={"catalogs": configured}))
    assert shown["catalogs"]["aws"]["secret_access_key"] == "****"
    assert shown["catalogs"]["aws"]["impl"] == "glue"
    assert secret not in json.dumps(shown)
    with running_server(catalogs=configured):
        logging.getLogger("lance_adapter").warning("a message holding %s", secret)
    assert secret not in log_lines.getvalue() and "a message holding" in log_lines.getvalue()


def test_each_catalog_vends_with_its_own_settings(storage: Storage, tmp_path: Path) -> None:
    """A catalog on S3 with `vending.*` vends keys for its tables' prefixes only; a catalog
    without vends none; the keys reach the table they were vended for."""
    configured = {"vended": {"impl": "dir", **vending_on(storage.gate.url)},
                  "plain": {"impl": "dir", "root": str(tmp_path / "plain")}}
    with running_server(catalogs=configured, metadata_cache=False) as url:
        client = httpx.Client(base_url=url, timeout=60)
        for catalog in configured:
            ok(client.post(f"/v1/namespace/{catalog}$ns/create", json={}))
            ok(client.post(f"/v1/table/{catalog}$ns$t/create",
                           content=arrow_stream(sample_table(3))))
        vended = ok(client.post("/v1/table/vended$ns$t/describe", json={}))
        plain = ok(client.post("/v1/table/plain$ns$t/describe", json={}))
        text = client.get("/metrics").text
    options = vended["storage_options"]
    assert options["aws_access_key_id"] != SERVER_KEY and options["aws_session_token"]
    assert "aws_access_key_id" not in (plain.get("storage_options") or {})
    assert lance.dataset(vended["location"], storage_options=options).count_rows() == 3
    assert metric(text, "lance_adapter_credentials_vended_total", identity="none") >= 1


def test_pylance_and_lancedb_namespace_clients_reach_every_catalog(
    federated: httpx.Client,
) -> None:
    """pylance through the namespace client, and LanceDB's namespace connection, write and
    read tables of each catalog through the one URL."""
    url = str(federated.base_url).rstrip("/")
    client = lance_namespace.connect("rest", {"uri": url})
    rows = sample_table(40)
    for catalog in ("lake", "aws"):
        client.create_namespace(CreateNamespaceRequest(id=[catalog, "team"]))
        table_id = [catalog, "team", "written"]
        lance.write_dataset(rows, namespace_client=client, table_id=table_id, mode="create")
        lance.write_dataset(rows, namespace_client=client, table_id=table_id, mode="append")
        dataset = lance.dataset(namespace_client=client, table_id=table_id)
        assert dataset.count_rows() == 80 and dataset.version == 2
    db = lancedb.connect_namespace("rest", {"uri": url})
    for catalog in ("scratch", "aws"):
        path = [catalog, "team"] if catalog == "aws" else [catalog, "other"]
        if catalog == "scratch":
            client.create_namespace(CreateNamespaceRequest(id=path))
        db.create_table("made", rows, namespace_path=path)
        db.open_table("made", namespace_path=path).add(rows)
        assert db.open_table("made", namespace_path=path).count_rows() == 80
        assert "made" in list(db.table_names(namespace_path=path))


def test_the_spark_source_writes_and_reads_tables_of_every_catalog(
    spark: SparkSession, federated: httpx.Client
) -> None:
    url = str(federated.base_url).rstrip("/")
    frame = spark.range(300, numPartitions=3).selectExpr("id", "CONCAT('row-', id) AS label")
    for catalog in ("lake", "aws"):
        ok(federated.post(f"/v1/namespace/{catalog}$spark/create", json={}))
        options = lance_adapter_spark.source_options(f"{catalog}.spark.rows", uri=url)
        frame.write.format("lance").options(**options).mode("append").save()
        read = spark.read.format("lance").options(**options).load()
        assert read.count() == 300
        labels = read.where("id >= 250").select("label").toArrow().column(0).to_pylist()
        assert sorted(labels) == sorted(f"row-{index}" for index in range(250, 300))
        assert ok(federated.post(f"/v1/table/{catalog}$spark$rows/count_rows", json={})) == 300


DETAILED = {"load_detailed_metadata": True}


def test_a_dir_catalogs_answers_are_cached_and_validated_against_its_root(
    federated: httpx.Client, tmp_path: Path
) -> None:
    """The metadata cache answers a `dir` catalog's DescribeTable and CountTableRows from
    memory, validated against that catalog's root on each hit: pylance's write to the table
    beside the server is seen by the next request."""
    ok(federated.post("/v1/namespace/lake$ns/create", json={}))
    ok(federated.post("/v1/table/lake$ns$t/create", content=arrow_stream(sample_table(3))))
    past = time.time() - 60  # the storage last changed well before the reads below
    for place, directories, files in os.walk(tmp_path / "lake"):
        for name in [*directories, *files]:
            os.utime(Path(place) / name, (past, past))
    os.utime(tmp_path / "lake", (past, past))
    for _ in range(3):
        described = ok(federated.post("/v1/table/lake$ns$t/describe", json=DETAILED))
        assert ok(federated.post("/v1/table/lake$ns$t/count_rows", json={})) == 3
    text = federated.get("/metrics").text
    for operation in ("DescribeTable", "CountTableRows"):
        assert metric(text, "lance_adapter_metadata_cache_validations_total",
                      operation=operation, result="fresh") == 2
    lance.write_dataset(sample_table(2, start=50), described["location"], mode="append")
    assert ok(federated.post("/v1/table/lake$ns$t/count_rows", json={})) == 5
    assert ok(federated.post("/v1/table/lake$ns$t/describe", json=DETAILED))["version"] == (
        described["version"] + 1)


def test_maintenance_passes_over_every_catalog(tmp_path: Path, glue_url: str) -> None:
    """The maintenance worker of a server of several catalogs maintains the tables of each
    (here two `dir` roots and Glue): small writes compacted, rows intact."""
    with running_server(catalogs=catalogs(tmp_path, glue_url)) as url:
        client = httpx.Client(base_url=url, timeout=30)
        for catalog in ("lake", "scratch", "aws"):
            ok(client.post(f"/v1/namespace/{catalog}$ns/create", json={}))
            ok(client.post(f"/v1/table/{catalog}$ns$t/create",
                           content=arrow_stream(sample_table(2))))
            for start in (10, 20, 30):
                ok(client.post(f"/v1/table/{catalog}$ns$t/insert",
                               content=arrow_stream(sample_table(2, start=start))))
    namespace = served_backend(load_settings(overrides={"catalogs": catalogs(tmp_path,
                                                                                glue_url)}))
    assert maintains(namespace)  # the server starts its maintenance worker on it
    outcomes = maintain_all(namespace, MaintenancePolicy(min_small_fragments=2))
    assert sorted(outcome.table for outcome in outcomes) == [
        "aws$ns$t", "lake$ns$t", "scratch$ns$t"]
    assert all(outcome.error is None for outcome in outcomes), outcomes
    for catalog in ("lake", "scratch", "aws"):
        dataset = namespace.open(DescribeTableRequest(id=[catalog, "ns", "t"]))
        assert len(dataset.get_fragments()) == 1 and dataset.count_rows() == 8


def test_the_maintain_and_record_owners_commands_cover_every_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configured = {"lake": {"impl": "dir", "root": str(tmp_path / "lake")},
                  "scratch": {"impl": "dir", "root": str(tmp_path / "scratch")}}
    with running_server(catalogs=configured) as url:
        for catalog in configured:
            ok(httpx.post(f"{url}/v1/namespace/{catalog}$ns/create", json={}))
            ok(httpx.post(f"{url}/v1/table/{catalog}$ns$t/create",
                          content=arrow_stream(sample_table(2))))
    config = tmp_path / "adapter.yaml"
    config.write_text(yaml.safe_dump({"catalogs": configured}))
    assert cli_main(["maintain", "--config", str(config)]) == 0
    maintained = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(line["table"] for line in maintained) == ["lake$ns$t", "scratch$ns$t"]
    assert cli_main(["record-owners", "--config", str(config)]) == 0
    recorded = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(line["catalog"] for line in recorded) == ["lake", "scratch"]
