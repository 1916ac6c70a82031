"""`Idempotency-Key` on InsertIntoTable, MergeInsertIntoTable, UpdateTable and
DeleteFromTable: a retry of a write that took
effect (its answer lost on the way: here, simply sent again) is answered as that write and
writes nothing, however many commits others made since; an attempt that did not commit
leaves the retry free to write; every other operation, and a plug-in's own insert, refuses
the key. The notes of keys (`backends.tables.keys`) go with the versions they point into."""

from __future__ import annotations

import concurrent.futures
import datetime
import os
from pathlib import Path
from typing import Any

import httpx
import lance
import pyarrow as pa
import pytest
from lance_namespace import InsertIntoTableResponse, InvalidInputError, LanceNamespace

from backends.core.locations import local_directory
from backends.maintenance import MaintenancePolicy, maintain_table
from backends.tables.datasets import TableLocation
from backends.tables.keys import NOTES_DIRECTORY, KeyNote
from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}


def _insert(url: str, rows: int, first: int, key: str | None) -> httpx.Response:
    headers = {**ARROW, **({"Idempotency-Key": key} if key else {})}
    return httpx.post(f"{url}/v1/table/ns$t/insert", headers=headers, timeout=60,
                      content=arrow_stream(sample_table(rows, first)))


def _count(url: str) -> int:
    return httpx.post(f"{url}/v1/table/ns$t/count_rows", json={}, timeout=30).json()


def _merge(url: str, first: int, key: str | None) -> httpx.Response:
    """An upsert of ids first..first+3 (updated where present, inserted where not)."""
    headers = {**ARROW, **({"Idempotency-Key": key} if key else {})}
    return httpx.post(
        f"{url}/v1/table/ns$t/merge_insert?on=id&when_matched_update_all=true"
        "&when_not_matched_insert_all=true", headers=headers, timeout=60,
        content=arrow_stream(sample_table(4, first, seed=11)))


def _table(url: str) -> TableLocation:
    described = httpx.post(f"{url}/v1/table/ns$t/describe", json={}, timeout=30).json()
    return TableLocation(["ns", "t"], described["location"])


def _notes(url: str) -> Path:
    directory = local_directory(_table(url).location)
    assert directory is not None
    return directory / NOTES_DIRECTORY


@pytest.fixture
def url(tmp_path: Path) -> Any:
    with running_server("dir", {"root": str(tmp_path / "root")}) as served:
        httpx.post(f"{served}/v1/namespace/ns/create", json={}, timeout=30).raise_for_status()
        httpx.post(f"{served}/v1/table/ns$t/create", headers=ARROW, timeout=60,
                   content=arrow_stream(sample_table(2))).raise_for_status()
        yield served


def test_a_keyed_insert_sent_again_is_answered_as_done_and_writes_nothing(url: str) -> None:
    first = _insert(url, 5, 100, "load-2026-11-29-part-1")
    assert first.status_code == 200, first.text
    assert _count(url) == 7
    _insert(url, 3, 200, "another-key").raise_for_status()  # a write between the two
    again = _insert(url, 5, 100, "load-2026-11-29-part-1")
    assert again.status_code == 200, again.text
    assert again.json() == first.json()  # the same version, the same rows inserted
    assert _count(url) == 10
    assert _insert(url, 5, 100, None).status_code == 200  # without a key: written again
    assert _count(url) == 15


def test_a_keyed_retry_is_recognised_after_many_commits_by_others(url: str) -> None:
    first = _insert(url, 5, 100, "batch-7")
    assert first.status_code == 200, first.text
    for others in range(100):  # more than the 64 latest commits a key was once looked for in
        _insert(url, 1, 1000 + others, None).raise_for_status()
    again = _insert(url, 5, 100, "batch-7")
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert _count(url) == 2 + 5 + 100


def test_an_attempt_that_did_not_commit_leaves_the_retry_free_to_write(
    url: str) -> None:
    # A note without its commit: what an attempt killed between the two leaves.
    KeyNote(_table(url), "batch-8").write(lance.dataset(_table(url).location).version)
    _insert(url, 1, 300, None).raise_for_status()
    written = _insert(url, 5, 100, "batch-8")
    assert written.status_code == 200, written.text
    assert _count(url) == 2 + 1 + 5
    assert _insert(url, 5, 100, "batch-8").json() == written.json()
    assert _count(url) == 2 + 1 + 5


def test_a_note_cut_short_is_no_note(url: str) -> None:
    notes = _notes(url)
    _insert(url, 1, 300, "batch-9").raise_for_status()
    (note,) = notes.iterdir()
    note.write_text('{"key": "batch-9", "read_')  # its writer killed while writing it
    assert _insert(url, 1, 400, "batch-9").status_code == 200
    assert _count(url) == 2 + 1 + 1


def test_a_retry_after_too_many_commits_is_refused_not_made_slow(url: str) -> None:
    table = _table(url)
    note = KeyNote(table, "old-batch")
    note.write(lance.dataset(table.location).version)
    for others in range(4):
        _insert(url, 1, 1000 + others, None).raise_for_status()
    with pytest.raises(InvalidInputError, match="started 4 commits ago, more than the 3"):
        note.earlier_write(lance.dataset(table.location), most=3)
    assert note.earlier_write(lance.dataset(table.location), most=4) is None


def test_a_keyed_merge_sent_again_is_answered_as_done_and_merges_nothing(url: str) -> None:
    first = _merge(url, 1, "merge-1")
    assert first.status_code == 200, first.text
    assert first.json()["num_updated_rows"] == 1  # id 1 was there; 2, 3, 4 were not
    assert first.json()["num_inserted_rows"] == 3
    _insert(url, 2, 500, None).raise_for_status()  # a write between the two
    again = _merge(url, 1, "merge-1")
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert _count(url) == 2 + 3 + 2
    unkeyed = _merge(url, 1, None).json()  # merged again: everything matched this time
    assert (unkeyed["num_updated_rows"], unkeyed["num_inserted_rows"]) == (4, 0)
    assert unkeyed["version"] == again.json()["version"] + 2


def test_a_keys_note_goes_with_the_versions_it_points_into(url: str) -> None:
    _insert(url, 1, 300, "old").raise_for_status()
    notes = _notes(url)
    (old,) = notes.iterdir()
    _insert(url, 1, 301, "new").raise_for_status()
    a_day_ago = (datetime.datetime.now() - datetime.timedelta(days=1)).timestamp()
    os.utime(old, (a_day_ago, a_day_ago))
    done = maintain_table(lance.dataset(_table(url).location),
                          MaintenancePolicy(version_retention=3600.0))
    assert "key notes removed" in done.actions
    assert len(list(notes.iterdir())) == 1 and old.exists() is False


def _update(url: str, key: str | None, predicate: str = "id >= 0") -> httpx.Response:
    """`id = id + 1000` where `predicate`: sent twice without a key, it adds 2000."""
    return httpx.post(f"{url}/v1/table/ns$t/update", timeout=60,
                      headers={"Idempotency-Key": key} if key else {},
                      json={"predicate": predicate, "updates": [["id", "id + 1000"]]})


def _ids(url: str) -> list[int]:
    answer = httpx.post(f"{url}/v1/table/ns$t/query", timeout=60,
                        json={"k": 1000, "vector": {}, "columns": {"column_names": ["id"]}})
    return sorted(pa.ipc.open_file(pa.BufferReader(answer.content)).read_all()
                  .column("id").to_pylist())


def test_a_keyed_update_sent_again_is_answered_as_done_and_updates_nothing(url: str) -> None:
    first = _update(url, "bump-1")
    assert first.status_code == 200, first.text
    assert first.json()["updated_rows"] == 2
    _insert(url, 1, 5, "another").raise_for_status()  # a write between the two
    again = _update(url, "bump-1")
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert _ids(url) == [5, 1000, 1001]
    assert _update(url, None, "id >= 1000").status_code == 200  # without a key: again
    assert _ids(url) == [5, 2000, 2001]


def test_a_keyed_delete_sent_again_deletes_nothing_written_since(url: str) -> None:
    first = httpx.post(f"{url}/v1/table/ns$t/delete", headers={"Idempotency-Key": "d-1"},
                       json={"predicate": "id >= 0"}, timeout=60)
    assert first.status_code == 200, first.text
    _insert(url, 2, 10, "refill").raise_for_status()
    again = httpx.post(f"{url}/v1/table/ns$t/delete", headers={"Idempotency-Key": "d-1"},
                       json={"predicate": "id >= 0"}, timeout=60)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert _ids(url) == [10, 11]


def test_updates_beside_each_other_each_land_once(url: str) -> None:
    """Six clients add 1000 to the same rows at once: an update whose commit conflicts with
    another's is done again on the then latest version, so none is lost."""
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda n: _update(url, f"beside-{n}"), range(6)))
    assert [answer.status_code for answer in answers] == [200] * 6, [a.text for a in answers]
    assert _ids(url) == [6000, 6001]


def test_a_key_on_an_operation_that_does_not_act_on_it_is_refused(url: str) -> None:
    tagged = httpx.post(f"{url}/v1/table/ns$t/tags/create", headers={"Idempotency-Key": "k"},
                        json={"tag": "t1", "version": 1}, timeout=60)
    assert tagged.status_code == 400
    assert "CreateTableTag does not take an idempotency key" in tagged.json()["error"]
    counted = httpx.post(f"{url}/v1/table/ns$t/count_rows", json={},
                         headers={"Idempotency-Key": "k"}, timeout=30)
    assert counted.status_code == 400
    assert _count(url) == 2


def test_a_key_too_long_is_refused(url: str) -> None:
    answer = _insert(url, 1, 500, "x" * 256)
    assert answer.status_code == 400
    assert "idempotency key must be 1 to 255 printable characters" in answer.json()["error"]
    assert _count(url) == 2


class OwnInserts(LanceNamespace):
    """A plug-in with its own InsertIntoTable, which knows nothing of keys."""

    def __init__(self, **_: str) -> None:
        pass

    def namespace_id(self) -> str:
        return "OwnInserts"

    def insert_into_table(self, request: Any, request_data: bytes) -> InsertIntoTableResponse:
        return InsertIntoTableResponse(version=1)


def test_a_plugins_own_insert_refuses_a_key() -> None:
    with running_server("tests.test_idempotency_keys.OwnInserts") as served:
        answer = httpx.post(f"{served}/v1/table/ns$t/insert",
                            headers={**ARROW, "Idempotency-Key": "k"}, timeout=30,
                            content=arrow_stream(sample_table(1)))
        assert answer.status_code == 400
        assert "does not take an idempotency key" in answer.json()["error"]
        plain = httpx.post(f"{served}/v1/table/ns$t/insert", headers=ARROW, timeout=30,
                           content=arrow_stream(sample_table(1)))
        assert plain.status_code == 200, plain.text


def test_merges_beside_each_other_each_land_once(url: str) -> None:
    """Four clients upsert the same keys at once: commits that conflict are merged again on
    the then latest version, so every merge is answered 200 and each key is there once."""
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda n: _merge(url, 1, f"beside-{n}"), range(8)))
    assert [answer.status_code for answer in answers] == [200] * 8, [a.text for a in answers]
    assert sorted(answer.json()["version"] for answer in answers) == sorted(
        {answer.json()["version"] for answer in answers})  # eight commits
    assert sum(answer.json()["num_inserted_rows"] for answer in answers) == 3
    assert _count(url) == 2 + 3
