"""One small request by a read identity cannot make the server compute large answers: the
hostile expressions measured on the unbounded server (a 105-byte QueryTable answering
257 MiB, 20,000 aliases answering 179 MiB, a predicate growing the worker by 680 MB, a
200 KB LIKE pattern answering 500) are refused with 400 / code 13 and one sentence, the
worker's resident set stays where it was, and bounded uses of the same functions answer what
pylance computes (`backends/tables/sql.py`, `backends/core/bounds.py`)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import httpx
import lance
import pyarrow as pa
import pytest

from tests.support.cli import Adapter, resident_bytes, start_adapter
from tests.support.lance_data import arrow_stream

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "bc", "def"],
                 "n": pa.array([2, 3, 4], pa.int64())})
# What the hostile requests may leave the worker grown by (the unbounded server grew by
# 680 to 770 MB on one of them).
GROWTH_BOUND = 64 * 1024 * 1024


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Adapter, Path]]:
    tmp = tmp_path_factory.mktemp("bounded")
    root = tmp / "root"
    adapter = start_adapter(tmp, "--impl", "dir", "--prop", f"root={root}", "--workers", "1")
    try:
        httpx.post(f"{adapter.url}/v1/table/t/create", headers=ARROW,
                   content=arrow_stream(ROWS), timeout=60).raise_for_status()
        yield adapter, root
    finally:
        assert adapter.stopped_cleanly()


def _query(url: str, columns: dict, **fields: object) -> httpx.Response:
    body = {"id": ["t"], "k": 10, "vector": {}, "columns": columns, **fields}
    return httpx.post(f"{url}/QueryTable", json=body, timeout=120)


HOSTILE = {
    "repeat in a projection": lambda url: _query(
        url, {"column_aliases": {"x": "repeat(s, 10000000)"}}),
    "20,000 aliases": lambda url: _query(
        url, {"column_aliases": {f"a{i}": "s" for i in range(20_000)}}),
    "repeat in a predicate": lambda url: httpx.post(
        f"{url}/v1/table/t/count_rows", json={"predicate": "length(repeat(s, 20000000)) > 0"},
        timeout=120),
    "nested repeats": lambda url: _query(
        url, {"column_aliases": {"x": "repeat(repeat(s, 1000), 1000)"}}),
    "a count read from a column": lambda url: _query(
        url, {"column_aliases": {"x": "repeat(s, n)"}}),
    "a 200 KB LIKE pattern": lambda url: _query(
        url, {"column_names": ["id"]}, filter="s LIKE '" + "%a" * 100_000 + "'"),
    # Within max_expression_bytes, yet too large a regular expression for Lance to build.
    "a 16 KB LIKE pattern of _": lambda url: httpx.post(
        f"{url}/v1/table/t/count_rows", json={"predicate": "s LIKE '" + "_" * 16_000 + "'"},
        timeout=120),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_small_request_cannot_make_the_server_compute_a_large_answer(
    served: tuple[Adapter, Path], case: str
) -> None:
    adapter, _ = served
    before = resident_bytes(adapter.process.pid)
    answer = HOSTILE[case](adapter.url)
    assert (answer.status_code, answer.json()["code"]) == (400, 13), answer.text[:300]
    message = answer.json()["error"]
    assert "max_" in message or "integer literals" in message or "regex" in message, message
    assert resident_bytes(adapter.process.pid) - before < GROWTH_BOUND


def test_bounded_uses_of_the_same_functions_answer_what_pylance_computes(
    served: tuple[Adapter, Path],
) -> None:
    adapter, root = served
    aliases = {"padded": "lpad(s, 5, '0')", "tripled": "repeat(s, 3)"}
    answer = _query(adapter.url, {"column_aliases": aliases}, filter="id >= 2")
    assert answer.status_code == 200, answer.text
    served_rows = pa.ipc.open_file(io.BytesIO(answer.content)).read_all()
    local = lance.dataset(str(root / "t.lance")).to_table(columns=aliases, filter="id >= 2")
    assert served_rows.sort_by("padded").to_pylist() == local.sort_by("padded").to_pylist()
    counted = httpx.post(f"{adapter.url}/v1/table/t/count_rows",
                         json={"predicate": "length(repeat(s, 100)) > 150"}, timeout=60)
    assert counted.json() == 2, counted.text


def test_the_bounds_are_settings(tmp_path: Path) -> None:
    adapter = start_adapter(tmp_path, "--impl", "dir", "--prop", f"root={tmp_path / 'root'}",
                            "--workers", "1", LANCE_ADAPTER_MAX_EXPRESSION_EXPANSION="2",
                            LANCE_ADAPTER_MAX_PROJECTION_COLUMNS="1")
    try:
        httpx.post(f"{adapter.url}/v1/table/t/create", headers=ARROW,
                   content=arrow_stream(ROWS), timeout=60).raise_for_status()
        refused = _query(adapter.url, {"column_aliases": {"x": "repeat(s, 3)"}})
        assert "more than 2 times (max_expression_expansion)" in refused.json()["error"]
        wide = _query(adapter.url, {"column_names": ["id", "s"]})
        assert "at most 1 (max_projection_columns)" in wide.json()["error"]
        assert _query(adapter.url, {"column_aliases": {"x": "repeat(s, 2)"}}).status_code == 200
    finally:
        assert adapter.stopped_cleanly()
