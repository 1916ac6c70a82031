"""The metadata cache: it answers from memory where it can validate (a local root), writes
through the server, outside writes (pylance, boto3, the metastore client, the Iceberg and Unity
REST APIs) and drops are seen on the next request at default settings, and its metrics count
what it does."""

from __future__ import annotations

import datetime
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import lance
import pytest
from lance.namespace import DirectoryNamespace
from lance_namespace import CreateTableRequest, InsertIntoTableRequest

from app.cache import CACHED_OPERATIONS, MISS, Generations, MetadataCache
from tests.support.adapter import metric, running_server
from tests.support.glue import MotoEndpoint, glue_properties
from tests.support.hive import HiveMetastoreProcess, metastore_client
from tests.support.iceberg_rest_server import IcebergRestServer
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.unity_stand_in import API as UNITY_API
from tests.support.unity_stand_in import running_unity_stand_in

TABLE = "ns$t"


def describe(client: httpx.Client, table: str = TABLE) -> httpx.Response:
    return client.post(f"/v1/table/{table}/describe", json={"load_detailed_metadata": True})


def listed(client: httpx.Client, namespace: str = "ns") -> list[str]:
    response = client.get(f"/v1/namespace/{namespace}/table/list")
    assert response.status_code == 200, response.text
    return response.json()["tables"]


def settle(root: Path) -> None:
    """Dates everything under `root` a minute back: the storage last changed long before the
    next read, beyond the file clock's margin, so that read's answer is stored."""
    past = time.time() - 60
    for place, directories, files in os.walk(root):
        for name in [*directories, *files]:
            os.utime(Path(place) / name, (past, past))
    os.utime(root, (past, past))


def cache_metrics(client: httpx.Client, operation: str = "DescribeTable") -> dict[str, float]:
    text = client.get("/metrics").text
    return {
        "hits": metric(text, "lance_adapter_metadata_cache_lookups_total",
                       operation=operation, result="hit"),
        "misses": metric(text, "lance_adapter_metadata_cache_lookups_total",
                         operation=operation, result="miss"),
        "fresh": metric(text, "lance_adapter_metadata_cache_validations_total",
                        operation=operation, result="fresh"),
        "changed": metric(text, "lance_adapter_metadata_cache_validations_total",
                          operation=operation, result="changed"),
        "backend calls": metric(text, "lance_adapter_backend_call_duration_seconds_count",
                                operation=operation, outcome="ok"),
    }


@pytest.fixture
def dir_client(tmp_path: Path) -> Iterator[httpx.Client]:
    with running_server("dir", {"root": str(tmp_path / "root")}) as url, httpx.Client(
        base_url=url, timeout=30
    ) as client:
        assert client.post("/v1/namespace/ns/create", json={}).status_code == 200
        created = client.post(f"/v1/table/{TABLE}/create", content=arrow_stream(sample_table(3)))
        assert created.status_code == 200, created.text
        yield client


def test_a_describe_on_a_local_root_is_answered_from_the_cache(
    dir_client: httpx.Client, tmp_path: Path
) -> None:
    settle(tmp_path / "root")
    first = describe(dir_client)
    before = cache_metrics(dir_client)
    again = describe(dir_client)
    after = cache_metrics(dir_client)
    assert again.json() == first.json()
    assert after["hits"] == before["hits"] + 1
    assert after["fresh"] == before["fresh"] + 1  # validated against the storage on the hit
    assert after["misses"] == before["misses"]
    assert after["backend calls"] == before["backend calls"] >= 1  # a hit calls no backend


def test_a_write_through_the_server_is_described_at_once(dir_client: httpx.Client) -> None:
    first = describe(dir_client).json()["version"]
    assert describe(dir_client).json()["version"] == first  # now from the cache
    inserted = dir_client.post(
        f"/v1/table/{TABLE}/insert", content=arrow_stream(sample_table(2, start=10))
    )
    assert inserted.status_code == 200, inserted.text
    assert describe(dir_client).json()["version"] == first + 1


def test_a_dropped_table_is_never_described(dir_client: httpx.Client) -> None:
    assert describe(dir_client).status_code == 200
    assert dir_client.post(f"/v1/table/{TABLE}/exists", json={}).status_code == 200
    assert listed(dir_client) == ["t"]
    assert dir_client.post(f"/v1/table/{TABLE}/drop", json={}).status_code == 200
    assert describe(dir_client).status_code == 404
    assert dir_client.post(f"/v1/table/{TABLE}/exists", json={}).status_code == 404
    assert listed(dir_client) == []


def test_outside_writes_to_a_local_root_are_seen_on_the_next_request(
    dir_client: httpx.Client, tmp_path: Path
) -> None:
    settle(tmp_path / "root")
    version = describe(dir_client).json()["version"]
    assert listed(dir_client) == ["t"]
    assert describe(dir_client).json()["version"] == version
    assert cache_metrics(dir_client)["hits"] == 1  # the answers above are cached
    outside = DirectoryNamespace(root=str(tmp_path / "root"))
    outside.create_table(CreateTableRequest(id=["ns", "u"]), arrow_stream(sample_table(1)))
    outside.insert_into_table(
        InsertIntoTableRequest(id=["ns", "t"]), arrow_stream(sample_table(1, start=50))
    )
    assert sorted(listed(dir_client)) == ["t", "u"]
    assert describe(dir_client).json()["version"] == version + 1
    assert cache_metrics(dir_client)["changed"] == 1  # the cached answer failed validation


def counted(client: httpx.Client, predicate: str | None = None) -> int:
    response = client.post(f"/v1/table/{TABLE}/count_rows",
                           json={} if predicate is None else {"predicate": predicate})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_count_on_a_local_root_is_answered_from_the_cache_until_rows_change(
    dir_client: httpx.Client, tmp_path: Path
) -> None:
    """A count is validated against the table's own directories: a write through the
    server, and one by pylance beside it, are counted on the next request."""
    settle(tmp_path / "root")
    assert counted(dir_client) == 3 and counted(dir_client, "id > 0") == 2
    before = cache_metrics(dir_client, "CountTableRows")
    assert counted(dir_client) == 3 and counted(dir_client, "id > 0") == 2
    after = cache_metrics(dir_client, "CountTableRows")
    assert after["hits"] == before["hits"] + 2
    assert after["fresh"] == before["fresh"] + 2
    assert after["backend calls"] == before["backend calls"]
    inserted = dir_client.post(f"/v1/table/{TABLE}/insert",
                               content=arrow_stream(sample_table(2, start=10)))
    assert inserted.status_code == 200, inserted.text
    assert counted(dir_client) == 5
    settle(tmp_path / "root")
    assert counted(dir_client) == 5
    assert counted(dir_client) == 5  # from the cache again
    outside = DirectoryNamespace(root=str(tmp_path / "root"))
    outside.insert_into_table(
        InsertIntoTableRequest(id=["ns", "t"]), arrow_stream(sample_table(1, start=50)))
    assert counted(dir_client) == 6
    assert cache_metrics(dir_client, "CountTableRows")["changed"] == 1


def test_outside_writes_to_a_branch_and_a_moved_tag_are_seen_on_the_next_request(
    dir_client: httpx.Client, tmp_path: Path
) -> None:
    """A branch's commits and a tag's move leave the table's main versions as they were,
    which is what a stamp watches: such requests are answered by the backend each time."""
    inserted = dir_client.post(f"/v1/table/{TABLE}/insert",
                               content=arrow_stream(sample_table(1, start=200)))
    assert inserted.status_code == 200, inserted.text
    for route, body in (("branches/create", {"name": "b", "from_version": 1}),
                        ("tags/create", {"tag": "v", "version": 1})):
        answer = dir_client.post(f"/v1/table/{TABLE}/{route}", json=body)
        assert answer.status_code == 200, answer.text
    settle(tmp_path / "root")

    def branch_and_tag() -> tuple[int, int, int]:
        count = dir_client.post(f"/v1/table/{TABLE}/count_rows", json={"branch": "b"})
        on_branch = dir_client.post(f"/v1/table/{TABLE}/describe",
                                    json={"branch": "b", "load_detailed_metadata": True})
        tagged = dir_client.post(f"/v1/table/{TABLE}/describe",
                                 json={"tag": "v", "load_detailed_metadata": True})
        return count.json(), on_branch.json()["version"], tagged.json()["version"]

    assert branch_and_tag() == branch_and_tag() == (3, 1, 1)
    location = describe(dir_client).json()["location"]
    lance.dataset(location).checkout_version(("b", None)).insert(sample_table(2, start=100))
    assert branch_and_tag() == (5, 2, 1)
    lance.dataset(location).tags.update("v", 2)
    assert branch_and_tag() == (5, 2, 2)


def test_a_version_removed_by_another_writer_no_longer_exists_on_the_next_request(
    dir_client: httpx.Client, tmp_path: Path
) -> None:
    for start in (100, 200):
        inserted = dir_client.post(f"/v1/table/{TABLE}/insert",
                                   content=arrow_stream(sample_table(1, start=start)))
        assert inserted.status_code == 200, inserted.text
    settle(tmp_path / "root")

    def exists() -> int:
        return dir_client.post(f"/v1/table/{TABLE}/exists", json={"version": 1}).status_code

    assert exists() == exists() == 200
    location = describe(dir_client).json()["location"]
    lance.dataset(location).cleanup_old_versions(older_than=datetime.timedelta(0))
    assert exists() == 404


def test_a_count_is_never_kept_on_a_time_bound_alone(tmp_path: Path) -> None:
    """Without a stamp from the backend, `metadata_cache_ttl` keeps metadata answers, but
    never a count: rows written by another tool would be hidden."""
    cache = MetadataCache(Generations(), ttl=60, validated_ttl=60, max_entries=10)
    fields = {"id": ["ns", "t"]}
    key = cache.key("CountTableRows", fields)
    cache.store(cache.begin(key, "CountTableRows", fields), 3)
    assert cache.lookup(key, "CountTableRows") is MISS
    unvouched = MetadataCache(Generations(), ttl=60, validated_ttl=60, max_entries=10,
                              stamper=lambda operation, table, answer: None)
    unvouched.store(unvouched.begin(key, "CountTableRows", fields), 3)
    assert unvouched.lookup(key, "CountTableRows") is MISS


def test_answers_differ_by_identity_and_request_fields() -> None:
    cache = MetadataCache(Generations(), ttl=60, validated_ttl=60, max_entries=10)
    plain = {"id": ["ns", "t"], "identity": None}
    keys = {
        cache.key("DescribeTable", plain),
        cache.key("DescribeTable", {**plain, "identity": {"auth_token": "a"}}),
        cache.key("DescribeTable", {**plain, "identity": {"auth_token": "b"}}),
        cache.key("DescribeTable", {**plain, "version": 3}),
        cache.key("DescribeTable", {**plain, "load_detailed_metadata": True}),
        cache.key("ListTables", {"id": ["ns"], "page_token": "x"}),
        cache.key("ListTables", {"id": ["ns"]}),
    }
    assert len(keys) == 7
    with_request_id = {**plain, "context": {"header.x-request-id": "r1", "header.x-t": "1"}}
    other_request_id = {**plain, "context": {"header.x-request-id": "r2", "header.x-t": "1"}}
    assert cache.key("DescribeTable", with_request_id) == cache.key(
        "DescribeTable", other_request_id
    )
    assert cache.key("CountTableRows", plain) != cache.key(
        "CountTableRows", {**plain, "predicate": "id > 1"})
    assert cache.key("DropTable", plain) is None
    assert "DescribeTable" in CACHED_OPERATIONS


def test_a_read_that_overlaps_a_write_is_not_kept(tmp_path: Path) -> None:
    shared = tmp_path / "generation"
    worker_a = MetadataCache(Generations(shared), ttl=60, validated_ttl=60, max_entries=10)
    worker_b = MetadataCache(Generations(shared), ttl=60, validated_ttl=60, max_entries=10)
    fields = {"id": ["t"]}
    key = worker_b.key("DescribeTable", fields)
    read = worker_b.begin(key, "DescribeTable", fields)
    worker_a.invalidate("InsertIntoTable", fields)  # a write on the other worker ends first
    worker_b.store(read, "answer read before the write")
    assert worker_b.lookup(key, "DescribeTable") is MISS
    worker_b.store(worker_b.begin(key, "DescribeTable", fields), "fresh")
    assert worker_b.lookup(key, "DescribeTable") == "fresh"
    worker_a.invalidate("InsertIntoTable", fields)
    assert worker_b.lookup(key, "DescribeTable") is MISS


def cached(cache: MetadataCache, operation_id: str, identifier: list[str]) -> bytes:
    fields = {"id": identifier}
    key = cache.key(operation_id, fields)
    cache.store(cache.begin(key, operation_id, fields), f"{operation_id} {identifier}")
    assert cache.lookup(key, operation_id) != MISS
    return key


@pytest.mark.parametrize(("write", "fields", "dropped"), [
    ("InsertIntoTable", {"id": ["a", "t"]}, {"describe a$t"}),
    ("CreateTable", {"id": ["a", "u"]}, {"list a"}),
    ("DropTable", {"id": ["a", "t"]}, {"describe a$t", "list a"}),
    ("RenameTable", {"id": ["a", "t"], "new_table_name": "t2", "new_namespace_id": ["b"]},
     {"describe a$t", "list a", "list b"}),
    ("RenameTable", {"id": ["a", "u"], "new_table_name": "t"}, {"describe a$t", "list a"}),
    ("CreateNamespace", {"id": ["c"]}, {"namespaces of the root"}),
    ("DropNamespace", {"id": ["a"]},
     {"describe a$t", "list a", "namespace a", "namespaces of the root"}),
    # A namespace write drops what is inside it too (a drop takes the tables with it).
    ("AlterNamespace", {"id": ["b"]},
     {"describe b$t", "list b", "namespace b", "namespaces of the root"}),
    ("BatchCreateTableVersions", {"entries": []},
     {"describe a$t", "describe b$t", "list a", "list b", "namespace a", "namespace b",
      "namespaces of the root"}),
])
def test_a_write_drops_only_the_answers_it_may_change(
    write: str, fields: dict, dropped: set[str]
) -> None:
    cache = MetadataCache(Generations(), ttl=60, validated_ttl=60, max_entries=100)
    keys = {
        "describe a$t": ("DescribeTable", cached(cache, "DescribeTable", ["a", "t"])),
        "describe b$t": ("DescribeTable", cached(cache, "DescribeTable", ["b", "t"])),
        "list a": ("ListTables", cached(cache, "ListTables", ["a"])),
        "list b": ("ListTables", cached(cache, "ListTables", ["b"])),
        "namespace a": ("DescribeNamespace", cached(cache, "DescribeNamespace", ["a"])),
        "namespace b": ("DescribeNamespace", cached(cache, "DescribeNamespace", ["b"])),
        "namespaces of the root": ("ListNamespaces", cached(cache, "ListNamespaces", [])),
    }
    cache.invalidate(write, fields)
    gone = {name for name, (operation, key) in keys.items()
            if cache.lookup(key, operation) is MISS}
    assert gone == dropped


def test_an_unconfirmed_answer_lives_at_most_the_ttl() -> None:
    now = [100.0]
    cache = MetadataCache(Generations(), ttl=0.2, validated_ttl=60, max_entries=2,
                          clock=lambda: now[0])
    key = cache.key("ListNamespaces", {"id": []})
    cache.store(cache.begin(key, "ListNamespaces", {"id": []}), "old")
    now[0] += 0.19
    assert cache.lookup(key, "ListNamespaces") == "old"
    now[0] += 0.02
    assert cache.lookup(key, "ListNamespaces") is MISS


def test_glue_outside_changes_are_seen_on_the_next_request_at_defaults(
    clean_moto: MotoEndpoint, tmp_path: Path
) -> None:
    properties = glue_properties(clean_moto.url, root=str(tmp_path / "warehouse"))
    with running_server("glue", properties) as url, httpx.Client(base_url=url, timeout=30) as (
        client
    ):
        assert client.post("/v1/namespace/ns/create", json={}).status_code == 200
        created = client.post(f"/v1/table/{TABLE}/create", content=arrow_stream(sample_table(2)))
        assert created.status_code == 200, created.text
        assert (listed(client), describe(client).status_code) == (["t"], 200)
        clean_moto.client("glue").delete_table(DatabaseName="ns", Name="t")
        assert (listed(client), describe(client).status_code) == ([], 404)
        assert cache_metrics(client)["hits"] == 0


@pytest.mark.parametrize(("impl", "fixture", "catalog"), [
    ("hive2", "hive_metastore", ""), ("hive3", "hive3_metastore", "hive$")])
def test_hive_outside_changes_are_seen_on_the_next_request_at_defaults(
    impl: str, fixture: str, catalog: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The metastore's own Thrift client drops the table (hive2 on HMS 2.3, hive3 on HMS 3)."""
    hive_metastore: HiveMetastoreProcess = request.getfixturevalue(fixture)
    database = f"cache_{uuid.uuid4().hex[:8]}"
    namespace, table = f"{catalog}{database}", f"{catalog}{database}$t"
    properties = {"uri": hive_metastore.uri, "root": str(tmp_path / "lake")}
    with running_server(impl, properties) as url, httpx.Client(base_url=url, timeout=30) as (
        client
    ):
        assert client.post(f"/v1/namespace/{namespace}/create", json={}).status_code == 200
        created = client.post(f"/v1/table/{table}/create", content=arrow_stream(sample_table(2)))
        assert created.status_code == 200, created.text
        assert (listed(client, namespace), describe(client, table).status_code) == (["t"], 200)
        with metastore_client(hive_metastore.port) as metastore:
            metastore.drop_table(database, "t", False)
        assert (listed(client, namespace), describe(client, table).status_code) == ([], 404)
        assert cache_metrics(client)["hits"] == 0


def test_glue_outside_changes_are_seen_within_an_opted_in_ttl(
    clean_moto: MotoEndpoint, tmp_path: Path
) -> None:
    properties = glue_properties(clean_moto.url, root=str(tmp_path / "warehouse"))
    with running_server("glue", properties, metadata_cache_ttl=1.0) as url, httpx.Client(
        base_url=url, timeout=30
    ) as client:
        assert client.post("/v1/namespace/ns/create", json={}).status_code == 200
        created = client.post(f"/v1/table/{TABLE}/create", content=arrow_stream(sample_table(2)))
        assert created.status_code == 200, created.text
        assert listed(client) == ["t"]
        started = time.monotonic()
        clean_moto.client("glue").delete_table(DatabaseName="ns", Name="t")
        while True:
            asked = time.monotonic()
            if listed(client) != ["t"]:
                break
            assert asked - started < 1.0 + 0.5, "stale beyond the TTL"
            time.sleep(0.05)
        assert describe(client).status_code == 404


def test_iceberg_outside_changes_are_seen_on_the_next_request_at_defaults(
    iceberg_rest_server: IcebergRestServer, tmp_path: Path
) -> None:
    """Another client of the same Iceberg REST catalog (its own REST API, as pyiceberg or
    Spark would call it) drops the table and makes a namespace."""
    namespace = f"cache_{uuid.uuid4().hex[:8]}"
    properties = {"endpoint": iceberg_rest_server.url, "root": str(tmp_path / "lance"),
                  "warehouses": "wh"}
    catalog = httpx.Client(base_url=f"{iceberg_rest_server.url}/v1", timeout=30)
    with running_server("iceberg", properties) as url, catalog, httpx.Client(
        base_url=url, timeout=30
    ) as client:
        assert client.post(f"/v1/namespace/wh${namespace}/create", json={}).status_code == 200
        table = f"wh${namespace}$t"
        created = client.post(f"/v1/table/{table}/create", content=arrow_stream(sample_table(2)))
        assert created.status_code == 200, created.text
        assert (listed(client, f"wh${namespace}"), describe(client, table).status_code) == (
            ["t"], 200)
        assert catalog.delete(f"/namespaces/{namespace}/tables/t").is_success
        assert catalog.post("/namespaces", json={"namespace": [f"{namespace}_other"]}).is_success
        assert (listed(client, f"wh${namespace}"), describe(client, table).status_code) == (
            [], 404)
        namespaces = client.get("/v1/namespace/wh/list", params={"limit": 1000}).json()
        assert f"{namespace}_other" in namespaces["namespaces"]


def test_unity_outside_changes_are_seen_on_the_next_request_at_defaults(tmp_path: Path) -> None:
    """Another Unity client drops the table. Unity's own server cannot be fetched from the
    registries this project reaches (docs: backends/unity), so this runs on the stand-in."""
    with running_unity_stand_in() as unity, httpx.Client(
        base_url=f"{unity.url}{UNITY_API}", timeout=30
    ) as catalog:
        catalog.post("/catalogs", json={"name": "cat"}).raise_for_status()
        properties = {"endpoint": unity.url, "root": str(tmp_path / "lake")}
        with running_server("unity", properties) as url, httpx.Client(
            base_url=url, timeout=30
        ) as client:
            assert client.post("/v1/namespace/cat$ns/create", json={}).status_code == 200
            created = client.post("/v1/table/cat$ns$t/create",
                                  content=arrow_stream(sample_table(2)))
            assert created.status_code == 200, created.text
            assert (listed(client, "cat$ns"), describe(client, "cat$ns$t").status_code) == (
                ["t"], 200)
            assert catalog.delete("/tables/cat.ns.t").is_success
            assert (listed(client, "cat$ns"), describe(client, "cat$ns$t").status_code) == (
                [], 404)
            assert cache_metrics(client)["hits"] == 0
