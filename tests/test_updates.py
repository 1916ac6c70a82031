"""UpdateTable and DeleteFromTable through the server (`backends.tables.updates`, which
commits them itself so that their commits hold the write's mark and key) leave a table as
Lance's own `update` and `delete` leave a copy of it, answer the same counts, keep its
indexes answering, and refuse what Lance's own refuse; a table with stable row ids is
updated by Lance's own update, which takes no key."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import httpx
import lance
import pyarrow as pa
import pytest

from tests.support.adapter import running_server
from tests.support.lance_data import VECTOR_DIMENSION, arrow_stream, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
ROWS = sample_table(300).append_column("n", pa.array(range(300), pa.int32()))
_names = (f"t{index}" for index in itertools.count())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    copies = tmp_path_factory.mktemp("copies")
    with running_server("dir", {"root": str(tmp_path_factory.mktemp("root"))}) as url:
        httpx.post(f"{url}/v1/namespace/ns/create", json={}, timeout=30).raise_for_status()
        yield url, copies


def _table_and_copy(server: tuple[str, Path]) -> tuple[str, str, str]:
    """A new table of ROWS served (in fragments of 100 rows, with a BTREE index on `id`),
    its name, location, and an in-process copy's location."""
    url, copies = server
    name = next(_names)
    created = httpx.post(f"{url}/v1/table/ns${name}/create", headers=ARROW, timeout=60,
                         content=arrow_stream(ROWS.slice(0, 100)))
    assert created.status_code == 200, created.text
    for first in (100, 200):
        httpx.post(f"{url}/v1/table/ns${name}/insert", headers=ARROW, timeout=60,
                   content=arrow_stream(ROWS.slice(first, 100))).raise_for_status()
    location = httpx.post(f"{url}/v1/table/ns${name}/describe", json={},
                          timeout=30).json()["location"]
    copy = str(copies / f"{name}.lance")
    lance.write_dataset(ROWS, copy, max_rows_per_file=100)
    for table in (location, copy):
        lance.dataset(table).create_scalar_index("id", "BTREE")
    return name, location, copy


def _same_tables(location: str, copy: str) -> None:
    ours, theirs = lance.dataset(location), lance.dataset(copy)
    assert ours.to_table().sort_by("id").equals(theirs.to_table().sort_by("id"))
    for predicate in ("id < 40 AND id > 3", "id = 16", "id >= 250"):  # through the index
        assert (ours.to_table(filter=predicate).sort_by("id")
                == theirs.to_table(filter=predicate).sort_by("id"))


VECTOR = "[" + ", ".join(["0.5"] * VECTOR_DIMENSION) + "]"
UPDATES = [
    ({"name": "'x'"}, "id < 10"),
    ({"id": "id * 2", "n": "n + 1"}, "id % 3 = 0"),
    ({"n": "NULL"}, "id = 5"),
    ({"n": "'12'"}, "id = 6"),
    ({"n": "1.5"}, "id = 7"),  # as Lance's own update: an integer set to 1.5 is 1
    ({"vector": VECTOR}, "id = 8"),
    ({"n": "n + 1"}, None),
    ({"name": "'none'"}, "id < 0"),
]


@pytest.mark.parametrize(("assignments", "predicate"), UPDATES)
def test_an_update_leaves_the_table_as_lances_own_update(
    server: tuple[str, Path], assignments: dict[str, str], predicate: str | None,
) -> None:
    name, location, copy = _table_and_copy(server)
    answer = httpx.post(f"{server[0]}/v1/table/ns${name}/update", timeout=60, json={
        "updates": [[column, value] for column, value in assignments.items()],
        **({"predicate": predicate} if predicate else {})})
    assert answer.status_code == 200, answer.text
    theirs = lance.dataset(copy).update(assignments, where=predicate)
    assert answer.json()["updated_rows"] == theirs["num_rows_updated"]
    assert answer.json()["version"] == lance.dataset(location).version
    _same_tables(location, copy)


@pytest.mark.parametrize("predicate", ["id < 10", "id % 7 = 0", "id >= 0", "id < 0"])
def test_a_delete_leaves_the_table_as_lances_own_delete(
    server: tuple[str, Path], predicate: str,
) -> None:
    name, location, copy = _table_and_copy(server)
    answer = httpx.post(f"{server[0]}/v1/table/ns${name}/delete", timeout=60,
                        json={"predicate": predicate})
    assert answer.status_code == 200, answer.text
    lance.dataset(copy).delete(predicate)
    assert answer.json()["version"] == lance.dataset(location).version
    _same_tables(location, copy)


@pytest.mark.parametrize(("assignments", "status", "why"), [
    ({"n": "3000000000"}, 400, "cannot set column 'n' (int32) to '3000000000'"),
    ({"n": "'abc'"}, 400, "cannot set column 'n' (int32)"),
    ({"nope": "1"}, 404, "sets column 'nope', which does not exist"),
    ({"n": "nope + 1"}, 400, "nope"),
])
def test_an_update_lance_refuses_is_refused_and_changes_nothing(
    server: tuple[str, Path], assignments: dict[str, str], status: int, why: str,
) -> None:
    name, location, copy = _table_and_copy(server)
    version = lance.dataset(location).version
    answer = httpx.post(f"{server[0]}/v1/table/ns${name}/update", timeout=60, json={
        "updates": [[column, value] for column, value in assignments.items()],
        "predicate": "id = 9"})
    assert answer.status_code == status, answer.text
    assert why in answer.json()["error"]
    with pytest.raises(ValueError):  # Lance's own refuses it too
        lance.dataset(copy).update(assignments, where="id = 9")
    assert lance.dataset(location).version == version
    _same_tables(location, copy)


def test_a_table_with_stable_row_ids_is_updated_by_lance_and_refuses_a_key(
    server: tuple[str, Path],
) -> None:
    url, _ = server
    _, location, _ = _table_and_copy(server)
    stable = str(Path(location).parent / "imported" / "stable.lance")
    lance.write_dataset(ROWS, stable, enable_stable_row_ids=True)
    registered = httpx.post(f"{url}/v1/table/ns$stable/register", timeout=60,
                            json={"location": stable})
    assert registered.status_code == 200, registered.text
    update = {"predicate": "id < 3", "updates": [["n", "n + 1000"]]}
    keyed = httpx.post(f"{url}/v1/table/ns$stable/update", json=update, timeout=60,
                       headers={"Idempotency-Key": "k"})
    assert (keyed.status_code, keyed.json()["code"]) == (400, 13), keyed.text
    assert "no idempotency key on a table with stable row ids" in keyed.json()["error"]
    answer = httpx.post(f"{url}/v1/table/ns$stable/update", json=update, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json()["updated_rows"] == 3
    table = lance.dataset(stable)
    assert table.has_stable_row_ids
    assert table.to_table(filter="id < 3", columns=["n"]).column("n").to_pylist() == [
        1000, 1001, 1002]
