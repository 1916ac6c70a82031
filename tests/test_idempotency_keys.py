"""`Idempotency-Key` on InsertIntoTable: a retry of a write that took effect (its answer lost
on the way: here, simply sent again) is answered as that write and writes nothing; every
other operation, and a plug-in's own insert, refuses the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from lance_namespace import InsertIntoTableResponse, LanceNamespace

from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}


def _insert(url: str, rows: int, first: int, key: str | None) -> httpx.Response:
    headers = {**ARROW, **({"Idempotency-Key": key} if key else {})}
    return httpx.post(f"{url}/v1/table/ns$t/insert", headers=headers, timeout=60,
                      content=arrow_stream(sample_table(rows, first)))


def _count(url: str) -> int:
    return httpx.post(f"{url}/v1/table/ns$t/count_rows", json={}, timeout=30).json()


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


def test_a_key_on_an_operation_that_does_not_act_on_it_is_refused(url: str) -> None:
    merged = httpx.post(
        f"{url}/v1/table/ns$t/merge_insert?on=id&when_matched_update_all=true",
        headers={**ARROW, "Idempotency-Key": "k"}, timeout=60,
        content=arrow_stream(sample_table(2)))
    assert merged.status_code == 400
    assert "MergeInsertIntoTable does not take an idempotency key" in merged.json()["error"]
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
