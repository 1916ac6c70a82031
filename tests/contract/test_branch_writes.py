"""Every write names the branch it changes: rows inserted, merged, updated and deleted, columns
added and indexes built on a branch change that branch, and main reads as it was; on the
directory backend (whose native writes act on main: the generic ones serve a branch) and on
Glue."""

from __future__ import annotations

import httpx
import pyarrow as pa
import pytest

from tests.support.contract_backends import ContractBackend
from tests.support.lance_data import arrow_stream, read_arrow_file

pytestmark = pytest.mark.parametrize("backend", ["dir", "glue"], indirect=True)
ARROW = {"content-type": "application/vnd.apache.arrow.stream"}


def _rows(ids: list[int]) -> bytes:
    return arrow_stream(pa.table({"id": pa.array(ids, pa.int64()),
                                  "score": pa.array([float(i) for i in ids], pa.float64())}))


def _read(url: str, table: str, branch: str | None) -> dict[str, list]:
    body = {"k": 1000, "vector": {}, **({"branch": branch} if branch else {})}
    answer = httpx.post(f"{url}/v1/table/{table}/query", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    return read_arrow_file(answer.content).sort_by("id").to_pydict()


def test_writes_on_a_branch_change_only_that_branch(backend: ContractBackend) -> None:
    table = "$".join([*backend.new_layout().namespace, "branched"])
    url = backend.url

    def write(suffix: str, **keywords: object) -> None:
        answer = httpx.post(f"{url}/v1/table/{table}/{suffix}", timeout=60, **keywords)
        assert answer.status_code == 200, (suffix, answer.text)

    write("create", headers=ARROW, content=_rows([1, 2, 3, 4]))
    write("branches/create", json={"name": "dev"})
    main_before = _read(url, table, None)

    write("insert", params={"branch": "dev"}, headers=ARROW, content=_rows([10]))
    write("merge_insert", params={"branch": "dev", "on": "id", "when_matched_update_all": "true",
                                  "when_not_matched_insert_all": "true"},
          headers=ARROW, content=_rows([1, 11]))
    write("update", json={"branch": "dev", "predicate": "id = 2", "updates": [["score", "20.0"]]})
    write("delete", json={"branch": "dev", "predicate": "id = 3"})
    write("add_columns", json={"branch": "dev",
                               "new_columns": [{"name": "doubled", "expression": "id * 2"}]})
    write("create_index", json={"branch": "dev", "column": "id", "index_type": "BTREE"})

    dev = _read(url, table, "dev")
    assert dev["id"] == [1, 2, 4, 10, 11]
    assert dev["score"] == [1.0, 20.0, 4.0, 10.0, 11.0]
    assert dev["doubled"] == [2, 4, 8, 20, 22]
    assert _read(url, table, None) == main_before
    listed = httpx.post(f"{url}/v1/table/{table}/index/list", json={"branch": "dev"}, timeout=60)
    assert [index["columns"] for index in listed.json()["indexes"]] == [["id"]]
    on_main = httpx.post(f"{url}/v1/table/{table}/index/list", json={}, timeout=60)
    assert on_main.json()["indexes"] == []
