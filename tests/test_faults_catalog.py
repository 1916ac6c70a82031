"""Faults of what the server depends on, through the fault proxy (`tests.support.fault_proxy`,
a stand-in for outages that moto cannot have on cue): writes that took effect are answered as
done whatever the catalog does afterwards (Glue refusing the update that records a declared
table now has data: a retryable answer would make a client write the rows twice), and storage
that does not answer is 503 / code 17, not a server failure or a table without data."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import httpx
import pyarrow as pa
import pytest

from tests.support.adapter import running_server
from tests.support.common import free_port
from tests.support.fault_proxy import Fault, FaultProxy
from tests.support.glue import MotoEndpoint, glue_properties, s3_storage
from tests.support.lance_data import arrow_stream, sample_table

BUCKET = "faults"
ARROW = {"content-type": "application/vnd.apache.arrow.stream"}


def _refuse_updates(method: str, path: str, action: str) -> Fault | None:
    return Fault.REFUSE if action == "AWSGlue.UpdateTable" else None


@pytest.fixture
def glue_behind_proxy(moto_endpoint: MotoEndpoint) -> Iterator[tuple[str, FaultProxy]]:
    moto_endpoint.reset()
    moto_endpoint.client("s3").create_bucket(Bucket=BUCKET)  # type: ignore[attr-defined]
    storage = s3_storage(moto_endpoint.url)  # the data's S3 is reached directly
    with FaultProxy(moto_endpoint.url) as proxy:
        properties = glue_properties(
            proxy.url, root=f"s3://{BUCKET}/warehouse",
            **{f"storage.{key}": value for key, value in storage.items()})
        with running_server("glue", properties, metadata_cache=False) as url:
            yield url, proxy


def _mark_empty(moto_endpoint: MotoEndpoint) -> None:
    """Flag the table `empty_table=true`, as lance-namespace-impls declare one."""
    glue = moto_endpoint.client("glue")
    table = glue.get_table(DatabaseName="ns", Name="t")["Table"]  # type: ignore[attr-defined]
    update = {key: table[key] for key in ("Name", "StorageDescriptor", "TableType")
              if key in table}
    update["Parameters"] = {**table.get("Parameters", {}), "empty_table": "true"}
    glue.update_table(DatabaseName="ns", TableInput=update)  # type: ignore[attr-defined]


def _empty_table_flag(moto_endpoint: MotoEndpoint) -> str | None:
    glue = moto_endpoint.client("glue")
    table = glue.get_table(DatabaseName="ns", Name="t")["Table"]  # type: ignore[attr-defined]
    return table.get("Parameters", {}).get("empty_table")


def test_a_committed_insert_is_200_when_the_catalog_cannot_take_note(
    glue_behind_proxy: tuple[str, FaultProxy], moto_endpoint: MotoEndpoint
) -> None:
    url, proxy = glue_behind_proxy
    httpx.post(f"{url}/v1/namespace/ns/create", json={}, timeout=30).raise_for_status()
    httpx.post(f"{url}/v1/table/ns$t/declare", json={}, timeout=30).raise_for_status()
    _mark_empty(moto_endpoint)
    assert _empty_table_flag(moto_endpoint) == "true"

    proxy.faults = _refuse_updates
    answer = httpx.post(f"{url}/v1/table/ns$t/insert", headers=ARROW, timeout=60,
                        content=arrow_stream(sample_table(3)))
    assert answer.status_code == 200, answer.text
    assert any(seen.fault is Fault.REFUSE for seen in proxy.log)  # the fault did happen
    counted = httpx.post(f"{url}/v1/table/ns$t/count_rows", json={}, timeout=30)
    assert counted.json() == 3
    assert _empty_table_flag(moto_endpoint) == "true"  # not recorded yet

    proxy.faults = lambda method, path, action: None
    answer = httpx.post(f"{url}/v1/table/ns$t/insert", headers=ARROW, timeout=60,
                        content=arrow_stream(sample_table(2, start=3)))
    assert answer.status_code == 200, answer.text
    assert httpx.post(f"{url}/v1/table/ns$t/count_rows", json={}, timeout=30).json() == 5
    assert _empty_table_flag(moto_endpoint) == "false"  # the next write took note


@pytest.fixture
def s3_behind_proxy(moto_endpoint: MotoEndpoint) -> Iterator[tuple[str, FaultProxy]]:
    """A `dir` server whose root is on moto's S3, reached through the fault proxy."""
    moto_endpoint.reset()
    moto_endpoint.client("s3").create_bucket(Bucket=BUCKET)  # type: ignore[attr-defined]
    with FaultProxy(moto_endpoint.url) as proxy:
        storage = {**s3_storage(proxy.url), "client_max_retries": "1",
                   "client_retry_timeout": "2"}
        properties = {"root": f"s3://{BUCKET}/root",
                      **{f"storage.{key}": value for key, value in storage.items()}}
        with running_server("dir", properties, metadata_cache=False) as url:
            yield url, proxy


@pytest.mark.parametrize("outage", [Fault.REFUSE, "down"])
def test_storage_that_does_not_answer_is_503_code_17(
    s3_behind_proxy: tuple[str, FaultProxy], outage: Fault | str
) -> None:
    """Reads and writes of a table whose storage answers 503 (or nothing: the proxy forwards
    to a closed port) are answered 503 / code 17, which clients retry; afterwards they work."""
    url, proxy = s3_behind_proxy
    created = httpx.post(f"{url}/v1/table/t/create", headers=ARROW, timeout=60,
                         content=arrow_stream(sample_table(4)))
    assert created.status_code == 200, created.text

    if outage is Fault.REFUSE:
        proxy.faults = lambda method, path, action: Fault.REFUSE
    else:
        proxy.redirect(f"http://127.0.0.1:{free_port()}")
    calls = {
        "count_rows": lambda: httpx.post(f"{url}/v1/table/t/count_rows", json={}, timeout=60),
        "query": lambda: httpx.post(f"{url}/v1/table/t/query", json={"k": 10, "vector": {}},
                                    timeout=60),
        "insert": lambda: httpx.post(f"{url}/v1/table/t/insert", headers=ARROW, timeout=60,
                                     content=arrow_stream(sample_table(1, start=9))),
        "describe": lambda: httpx.post(f"{url}/v1/table/t/describe",
                                       json={"load_detailed_metadata": True}, timeout=60),
    }
    for name, call in calls.items():
        answer = call()
        assert (answer.status_code, answer.json()["code"]) == (503, 17), (name, answer.text)
        assert "storage did not answer" in answer.json()["error"], name
        assert "127.0.0.1" not in answer.json()["error"], name

    proxy.faults = lambda method, path, action: None
    proxy.redirect(None)
    counted = httpx.post(f"{url}/v1/table/t/count_rows", json={}, timeout=60)
    assert counted.json() == 4


def _refuse_deletes(method: str, path: str, action: str) -> Fault | None:
    return Fault.REFUSE if action == "AWSGlue.DeleteTable" else None


def test_a_rename_cut_off_half_way_leaves_the_data_to_the_new_name(
    glue_behind_proxy: tuple[str, FaultProxy],
) -> None:
    """Glue refuses to delete the old entry of a rename (and so the undo of the new one):
    both entries name the data. DropTable of the old name then deregisters it and keeps the
    data, which the new name reads; DropTable of the new name deletes it."""
    url, proxy = glue_behind_proxy
    httpx.post(f"{url}/v1/namespace/ns/create", json={}, timeout=30).raise_for_status()
    httpx.post(f"{url}/v1/table/ns$a/create", headers=ARROW, timeout=60,
               content=arrow_stream(sample_table(4))).raise_for_status()
    location = httpx.post(f"{url}/v1/table/ns$a/describe", json={}, timeout=30).json()[
        "location"]

    proxy.faults = _refuse_deletes
    renamed = httpx.post(f"{url}/v1/table/ns$a/rename", json={"new_table_name": "b"},
                         timeout=60)
    assert renamed.status_code >= 500, renamed.text
    proxy.faults = lambda method, path, action: None
    both = [httpx.post(f"{url}/v1/table/ns${name}/describe", json={}, timeout=30).json()
            for name in ("a", "b")]
    assert [entry["location"] for entry in both] == [location, location]

    assert httpx.post(f"{url}/v1/table/ns$a/drop", json={}, timeout=60).status_code == 200
    assert httpx.post(f"{url}/v1/table/ns$b/count_rows", json={}, timeout=30).json() == 4
    assert httpx.post(f"{url}/v1/table/ns$b/drop", json={}, timeout=60).status_code == 200
    recreated = httpx.post(f"{url}/v1/table/ns$b/create", headers=ARROW, timeout=60,
                           content=arrow_stream(sample_table(1)))
    assert recreated.status_code == 200, recreated.text  # nothing was left at its place


def _keys(moto_endpoint: MotoEndpoint, location: str) -> list[str]:
    prefix = location.removeprefix(f"s3://{BUCKET}/").rstrip("/") + "/"
    listed = moto_endpoint.client("s3").list_objects_v2(  # type: ignore[attr-defined]
        Bucket=BUCKET, Prefix=prefix)
    return [item["Key"] for item in listed.get("Contents", [])]


def test_a_rename_to_a_taken_name_leaves_the_record_as_it_was(
    glue_behind_proxy: tuple[str, FaultProxy], moto_endpoint: MotoEndpoint
) -> None:
    """A refused rename hands the data to no one: DropTable of the table still deletes it."""
    url, _ = glue_behind_proxy
    httpx.post(f"{url}/v1/namespace/ns/create", json={}, timeout=30).raise_for_status()
    for name, rows in (("a", 4), ("b", 2)):
        httpx.post(f"{url}/v1/table/ns${name}/create", headers=ARROW, timeout=60,
                   content=arrow_stream(sample_table(rows))).raise_for_status()
    location = httpx.post(f"{url}/v1/table/ns$a/describe", json={}, timeout=30).json()[
        "location"]
    refused = httpx.post(f"{url}/v1/table/ns$a/rename", json={"new_table_name": "b"},
                         timeout=60)
    assert refused.status_code == 409, refused.text
    assert _keys(moto_endpoint, location)
    assert httpx.post(f"{url}/v1/table/ns$a/drop", json={}, timeout=60).status_code == 200
    assert _keys(moto_endpoint, location) == []
    assert httpx.post(f"{url}/v1/table/ns$b/count_rows", json={}, timeout=30).json() == 2


def _lose_commit_answers(namespace_manifest: bool) -> Callable[[str, str, str], Fault | None]:
    """A rule: every third PUT of a table's manifest version (or, with `namespace_manifest`,
    of the dir namespace's `__manifest`) takes effect with its answer lost, and the next ten
    HEADs of it answer a length of 0, so that Lance cannot read its commit back."""
    commits = itertools.count(1)
    malformed: dict[str, int] = {}

    def rule(method: str, path: str, action: str) -> Fault | None:
        ours = "/_versions/" in path and ("/__manifest/" in path) == namespace_manifest
        if method == "PUT" and ours and path not in malformed and next(commits) % 3 == 0:
            malformed[path] = 10
            return Fault.DROP_ANSWER
        if method == "HEAD" and malformed.get(path, 0) > 0:
            malformed[path] -= 1
            return Fault.EMPTY_HEAD
        return None

    return rule


def test_a_commit_whose_answer_was_lost_is_answered_as_what_happened(
    s3_behind_proxy: tuple[str, FaultProxy],
) -> None:
    """Inserts whose commit S3 applied but whose answer it lost, Lance failing to read it
    back (it calls the result unknown), are read back by the server: each is answered 200,
    never a code clients retry, and every row reads back exactly once."""
    url, proxy = s3_behind_proxy
    created = httpx.post(f"{url}/v1/table/t/create", headers=ARROW, timeout=60,
                         content=arrow_stream(sample_table(3)))
    assert created.status_code == 200, created.text
    proxy.faults = _lose_commit_answers(namespace_manifest=False)
    for start in range(100, 112):
        answer = httpx.post(f"{url}/v1/table/t/insert", headers=ARROW, timeout=60,
                            content=arrow_stream(sample_table(1, start=start)))
        assert answer.status_code == 200, answer.text
    assert sum(seen.fault is Fault.DROP_ANSWER for seen in proxy.log) >= 3
    proxy.faults = lambda method, path, action: None
    rows = httpx.post(f"{url}/v1/table/t/query", json={"k": 100, "vector": {}}, timeout=60)
    ids = pa.ipc.open_file(pa.BufferReader(rows.content)).read_all().column("id").to_pylist()
    assert sorted(ids) == [0, 1, 2, *range(100, 112)]


def _table_losing_commit_answers(
    s3_behind_proxy: tuple[str, FaultProxy], rows: int,
) -> tuple[str, FaultProxy]:
    """The table `t` of `rows` rows, made; from now on S3 loses its commits' answers."""
    url, proxy = s3_behind_proxy
    created = httpx.post(f"{url}/v1/table/t/create", headers=ARROW, timeout=60,
                         content=arrow_stream(sample_table(rows)))
    assert created.status_code == 200, created.text
    proxy.faults = _lose_commit_answers(namespace_manifest=False)
    return url, proxy


def test_a_merge_whose_commit_answer_was_lost_is_answered_as_what_happened(
    s3_behind_proxy: tuple[str, FaultProxy],
) -> None:
    """Upserts whose commit S3 applied but whose answer it lost are read back too: each is
    answered 200 with its counts, and the table holds each key once, as the last one set it."""
    url, proxy = _table_losing_commit_answers(s3_behind_proxy, rows=3)
    for round_ in range(9):
        rows = sample_table(4, 2).set_column(1, "name", pa.array([f"round {round_}"] * 4))
        answer = httpx.post(
            f"{url}/v1/table/t/merge_insert?on=id&when_matched_update_all=true"
            "&when_not_matched_insert_all=true", headers=ARROW, timeout=60,
            content=arrow_stream(rows))
        assert answer.status_code == 200, answer.text
        merged = answer.json()
        assert (merged["num_updated_rows"], merged["num_inserted_rows"]) == (
            (1, 3) if round_ == 0 else (4, 0))
    assert sum(seen.fault is Fault.DROP_ANSWER for seen in proxy.log) >= 2
    proxy.faults = lambda method, path, action: None
    answer = httpx.post(f"{url}/v1/table/t/query", timeout=60,
                        json={"k": 100, "vector": {}, "columns": {"column_names": ["id", "name"]}})
    table = pa.ipc.open_file(pa.BufferReader(answer.content)).read_all().sort_by("id")
    assert table.column("id").to_pylist() == [0, 1, 2, 3, 4, 5]
    assert table.column("name").to_pylist()[2:] == ["round 8"] * 4


def test_updates_and_deletes_whose_commit_answer_was_lost_are_answered_as_what_happened(
    s3_behind_proxy: tuple[str, FaultProxy],
) -> None:
    """Updates that compute from the row (`id = id + 100`) and deletes, whose commits S3
    applied but whose answers it lost, are read back: each answered 200 (an update with its
    count), and each took effect once."""
    url, proxy = _table_losing_commit_answers(s3_behind_proxy, rows=6)
    for _round in range(6):
        answer = httpx.post(f"{url}/v1/table/t/update", timeout=60, json={
            "predicate": "id % 100 < 3", "updates": [["id", "id + 100"]]})
        assert answer.status_code == 200, answer.text
        assert answer.json()["updated_rows"] == 3
    for first in (3, 4):
        answer = httpx.post(f"{url}/v1/table/t/delete", timeout=60,
                            json={"predicate": f"id = {first}"})
        assert answer.status_code == 200, answer.text
    assert sum(seen.fault is Fault.DROP_ANSWER for seen in proxy.log) >= 2
    proxy.faults = lambda method, path, action: None
    answer = httpx.post(f"{url}/v1/table/t/query", timeout=60,
                        json={"k": 100, "vector": {}, "columns": {"column_names": ["id"]}})
    table = pa.ipc.open_file(pa.BufferReader(answer.content)).read_all()
    assert sorted(table.column("id").to_pylist()) == [5, 600, 601, 602]


def test_a_namespace_manifest_left_naming_a_deleted_file_is_repaired(
    s3_behind_proxy: tuple[str, FaultProxy],
) -> None:
    """pylance's native namespace, unable to read back a `__manifest` commit whose answer
    was lost, deletes the data file that commit stored: the namespace's catalog then names a
    file that is gone. The server restores its last whole version, answers the call that
    found the damage 503 / code 17 (retry), and never 500; a CreateTable so answered leaves no
    table behind, so its retry succeeds; every table acknowledged is listed and read."""
    url, proxy = s3_behind_proxy
    proxy.faults = _lose_commit_answers(namespace_manifest=True)
    answers = {}
    for index in range(9):
        for _attempt in range(3):  # a client retrying code 17, as clients do
            answer = httpx.post(f"{url}/v1/table/t{index}/create", headers=ARROW, timeout=60,
                                content=arrow_stream(sample_table(2, start=index)))
            answers[index] = answer
            if answer.status_code != 503:
                break
            assert answer.json()["code"] == 17, answer.text
    proxy.faults = lambda method, path, action: None
    # The rolled-back create leaves nothing at its own path: its retry creates the table.
    assert {answer.status_code for answer in answers.values()} == {200}, answers
    assert sum(seen.fault is Fault.DROP_ANSWER for seen in proxy.log) >= 2
    acknowledged = list(answers)
    listed = httpx.get(f"{url}/v1/namespace/$/table/list", timeout=60)
    assert listed.status_code == 200, listed.text
    assert {f"t{index}" for index in acknowledged} <= set(listed.json()["tables"])
    for index in acknowledged:
        counted = httpx.post(f"{url}/v1/table/t{index}/count_rows", json={}, timeout=60)
        assert counted.json() == 2, counted.text


def test_drop_table_under_storage_faults_is_200_or_503_and_finishes(
    s3_behind_proxy: tuple[str, FaultProxy],
) -> None:
    """DropTable while the catalog's manifest cannot be read is 503 / code 17 (not 500), the
    table kept; while the data's deletes fail twice in three (refused, or applied with their
    answer lost) it is 200, or 503 while the table is still found by its data, and finishes
    when asked again: every dropped name is then created anew, nothing of the old table
    left in its way (before: 200 with the data left, and CreateTable refused with 409)."""
    url, proxy = s3_behind_proxy
    names = ["t0", "t1", "t2", "ns$u0", "ns$u1"]
    httpx.post(f"{url}/v1/namespace/ns/create", json={}, timeout=60).raise_for_status()
    for name in names:
        created = httpx.post(f"{url}/v1/table/{name}/create", headers=ARROW, timeout=60,
                             content=arrow_stream(sample_table(4)))
        assert created.status_code == 200, created.text

    proxy.faults = lambda method, path, action: Fault.REFUSE if "__manifest" in path else None
    answer = httpx.post(f"{url}/v1/table/t0/drop", json={}, timeout=60)
    proxy.faults = lambda method, path, action: None
    assert (answer.status_code, answer.json()["code"]) == (503, 17), answer.text
    assert httpx.post(f"{url}/v1/table/t0/count_rows", json={}, timeout=60).json() == 4

    deletes = itertools.count()
    for fault in (Fault.REFUSE, Fault.DROP_ANSWER):
        proxy.faults = lambda method, path, action, fault=fault: (
            fault if _is_delete(method, path) and next(deletes) % 3 != 2 else None)
        answers = {name: _dropped(url, name) for name in names}
        proxy.faults = lambda method, path, action: None
        assert all(codes[-1] == (200, None) and set(codes[:-1]) <= {(503, 17)}
                   for codes in answers.values()), answers
        for name in names:
            again = httpx.post(f"{url}/v1/table/{name}/create", headers=ARROW, timeout=60,
                               content=arrow_stream(sample_table(2)))
            assert again.status_code == 200, (name, again.text)
            count = httpx.post(f"{url}/v1/table/{name}/count_rows", json={}, timeout=60)
            assert count.json() == 2, (name, count.text)


def _is_delete(method: str, path: str) -> bool:
    """An S3 DeleteObject, or a DeleteObjects batch (`POST /bucket?delete`)."""
    return method == "DELETE" or (method == "POST" and "?delete" in path)


def _dropped(url: str, name: str) -> list[tuple[int, int | None]]:
    """DropTable of `name`, asked again after each 503 (at most 8 times): each answer's
    status and code."""
    codes = []
    for _ in range(8):
        answer = httpx.post(f"{url}/v1/table/{name}/drop", json={}, timeout=60)
        codes.append((answer.status_code, answer.json().get("code")))
        if answer.status_code != 503:
            break
    return codes


def test_data_a_drop_could_not_delete_is_deleted_before_the_id_is_created_again(
    moto_endpoint: MotoEndpoint,
) -> None:
    """Glue on S3, every delete of S3 refused while `ns$t` is dropped: the entry goes, the
    drop is answered 200 (it took effect) and the data it could not delete is marked as a
    dropped table's; CreateTable of `ns$t` then deletes it first and creates the table, where
    before it was refused (13, "a Lance table not registered ... lies at its own path")."""
    moto_endpoint.reset()
    moto_endpoint.client("s3").create_bucket(Bucket=BUCKET)  # type: ignore[attr-defined]
    with FaultProxy(moto_endpoint.url) as proxy:
        storage = {**s3_storage(proxy.url), "client_max_retries": "1",
                   "client_retry_timeout": "2"}
        properties = glue_properties(
            proxy.url, root=f"s3://{BUCKET}/warehouse",
            **{f"storage.{key}": value for key, value in storage.items()})
        with running_server("glue", properties, metadata_cache=False) as url:
            httpx.post(f"{url}/v1/namespace/ns/create", json={}, timeout=60).raise_for_status()
            created = httpx.post(f"{url}/v1/table/ns$t/create", headers=ARROW, timeout=60,
                                 content=arrow_stream(sample_table(4)))
            assert created.status_code == 200, created.text
            proxy.faults = lambda method, path, action: (
                Fault.REFUSE if _is_delete(method, path) else None)
            dropped = httpx.post(f"{url}/v1/table/ns$t/drop", json={}, timeout=60)
            proxy.faults = lambda method, path, action: None
            assert dropped.status_code == 200, dropped.text
            assert httpx.post(f"{url}/v1/table/ns$t/exists", json={},
                              timeout=60).status_code == 404
            again = httpx.post(f"{url}/v1/table/ns$t/create", headers=ARROW, timeout=60,
                               content=arrow_stream(sample_table(2)))
            assert again.status_code == 200, again.text
            count = httpx.post(f"{url}/v1/table/ns$t/count_rows", json={}, timeout=60)
            assert count.json() == 2, count.text
