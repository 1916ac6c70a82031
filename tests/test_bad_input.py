"""Malformed requests get 400 with code 13, never a 500, and nothing is written; what Lance
itself refuses is answered in its own words, without its debug structures."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pytest

from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, sample_table, tree_snapshot

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
JSON = {"content-type": "application/json"}
GOOD_ROWS = arrow_stream(sample_table(3))


def _with_column(name: str, column: pa.Array) -> bytes:
    """GOOD_ROWS' first row and a column of a type Lance cannot store."""
    return arrow_stream(sample_table(1).append_column(name, column))


# Types Lance's writer refuses, at the top and nested: answered before anything is written.
UNION_ROWS = _with_column("u", pa.UnionArray.from_sparse(
    pa.array([0], pa.int8()), [pa.array([1]), pa.array(["x"])]))
INTERVAL_ROWS = _with_column("i", pa.array([pa.MonthDayNano([1, 2, 3])],
                                           pa.month_day_nano_interval()))
RUN_END_ROWS = _with_column("r", pa.RunEndEncodedArray.from_arrays([1], ["x"]))
# What Lance's writer refuses while it writes: nulls where the data's schema says none, a
# top-level column name with a dot.
NULLS_IN_NON_NULLABLE = arrow_stream(pa.Table.from_arrays(
    [pa.array([7, None])], schema=pa.schema([pa.field("id", pa.int64(), nullable=False)])))
DOTTED_COLUMN_ROWS = arrow_stream(pa.table({"a.b": pa.array([1])}))
NESTED_DECIMAL32_ROWS = _with_column("d", pa.array([[1]], pa.list_(pa.decimal32(5, 2))))

BAD_REQUESTS: dict[str, tuple[str, str, dict, object]] = {
    # name: (method, url, headers, body)
    "malformed json": ("POST", "/v1/namespace/b/create", JSON, b"{not json"),
    "json array body": ("POST", "/v1/namespace/b/create", JSON, b"[1, 2]"),
    "properties not an object": ("POST", "/v1/namespace/b/create", JSON, {"properties": "x"}),
    "property not a string": ("POST", "/v1/namespace/b/create", JSON, {"properties": {"k": 1}}),
    "mode not a string": ("POST", "/v1/namespace/b/create", JSON, {"mode": 5}),
    "version not an integer": ("POST", "/v1/table/a$t/describe", JSON, {"version": "one"}),
    "body id differs from route": ("POST", "/v1/namespace/b/create", JSON, {"id": ["c"]}),
    "unknown namespace mode": ("POST", "/v1/namespace/b/create", JSON, {"mode": "sometimes"}),
    "unknown drop behavior": ("POST", "/v1/namespace/a/drop", JSON, {"behavior": "explode"}),
    "unknown insert mode": ("POST", "/v1/table/a$t/insert?mode=sideways", ARROW, GOOD_ROWS),
    "unknown create mode": ("POST", "/v1/table/a$u/create?mode=maybe", ARROW, GOOD_ROWS),
    "garbage arrow on create": ("POST", "/v1/table/a$u/create", ARROW, b"\x00garbage bytes"),
    "garbage arrow on insert": ("POST", "/v1/table/a$t/insert", ARROW, b"PARQUET?"),
    "truncated arrow": ("POST", "/v1/table/a$u/create", ARROW, GOOD_ROWS[: len(GOOD_ROWS) // 2]),
    "empty arrow body": ("POST", "/v1/table/a$u/create", ARROW, b""),
    "properties query not json": ("POST", "/v1/table/a$u/create?properties=%7Bx", ARROW, GOOD_ROWS),
    "boolean query not boolean": ("POST", "/v1/table/a$t/describe?with_table_uri=maybe", JSON, {}),
    "limit not an integer": ("GET", "/v1/namespace/a/table/list?limit=ten", {}, None),
    "negative limit": ("GET", "/v1/namespace/a/table/list?limit=-1", {}, None),
    "empty name": ("POST", "/v1/namespace/a$$b/create", JSON, {}),
    "empty route id": ("POST", "/v1/namespace//create", JSON, {}),
    "dot name": ("POST", "/v1/namespace/a$./create", JSON, {}),
    "dot dot name": ("POST", "/v1/namespace/a$../create", JSON, {}),
    "encoded dot dot name": ("POST", "/v1/namespace/%2E%2E/create", JSON, {}),
    "dot dot table": ("POST", "/v1/table/a$../create", ARROW, GOOD_ROWS),
    "slash in name": ("POST", "/v1/namespace/a$x/y/create", JSON, {}),
    "encoded slash in name": ("POST", "/v1/namespace/a$x%2Fy/create", JSON, {}),
    "backslash in name": ("POST", "/v1/table/a$x%5Cy/create", ARROW, GOOD_ROWS),
    "nul in name": ("POST", "/v1/namespace/a$x%00y/create", JSON, {}),
    "control character in name": ("POST", "/v1/namespace/a$x%01y/create", JSON, {}),
    "newline in name": ("POST", "/v1/namespace/a$x%0Ay/create", JSON, {}),
    "table at the root": ("POST", "/v1/table/$/create", ARROW, GOOD_ROWS),
    "create the root": ("POST", "/v1/namespace/$/create", JSON, {}),
    "op route id not a list": ("POST", "/CreateNamespace", JSON, {"id": "a$b"}),
    "op route id with a number": ("POST", "/CreateNamespace", JSON, {"id": ["a", 3]}),
    "op route traversal": ("POST", "/DeclareTable", JSON, {"id": ["a", ".."]}),
    "op route k not an integer": ("POST", "/QueryTable", JSON, {"id": ["a", "t"], "k": "ten"}),
    "op route arrow garbage": ("POST", "/CreateTable?id=a$u", ARROW, b"nope"),
    "context a list": ("POST", "/v1/table/a$t/describe", {**JSON, "x-extra": "1"},
                       {"context": [1]}),
    "empty mode in body": ("POST", "/v1/namespace/b/create", JSON, {"mode": ""}),
    "empty mode in query": ("POST", "/v1/table/a$u/create?mode=", ARROW, GOOD_ROWS),
    "limit past 2^31": ("GET", "/v1/namespace/a/table/list?limit=2147483648", {}, None),
    "limit past 2^63": ("GET", "/v1/namespace/a/table/list?limit=9223372036854775808", {}, None),
    "k past 2^31": ("POST", "/v1/table/a$t/query", JSON, {"k": 2**31, "vector": {}}),
    "version past 2^63": ("POST", "/v1/table/a$t/describe", JSON, {"version": 2**63}),
    "json nested deeply": ("POST", "/v1/namespace/b/create", JSON,
                           b'{"properties":' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    "zero-width character in name": ("POST", "/v1/namespace/a$x%E2%80%8By/create", JSON, {}),
    "bidi override in name": ("POST", "/v1/namespace/a$x%E2%80%AEy/create", JSON, {}),
    "union column on create": ("POST", "/v1/table/a$u/create", ARROW, UNION_ROWS),
    "interval column on insert": ("POST", "/v1/table/a$t/insert", ARROW, INTERVAL_ROWS),
    "run-end column on merge insert": (
        "POST", "/v1/table/a$t/merge_insert?on=id&when_matched_update_all=true"
        "&when_not_matched_insert_all=true", ARROW, RUN_END_ROWS),
    "nested decimal32 on create": ("POST", "/CreateTable?id=a$u", ARROW, NESTED_DECIMAL32_ROWS),
    "nulls in a non-nullable column on create": ("POST", "/v1/table/a$u/create", ARROW,
                                                 NULLS_IN_NON_NULLABLE),
    "dotted column name on create": ("POST", "/v1/table/a$u/create", ARROW, DOTTED_COLUMN_ROWS),
    "tags route with a slashed id": ("POST", "/v1/table/a/t/tags/create", JSON, {"tag": "x"}),
}


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    return tmp_path / "bad-input-root"


@pytest.fixture
def populated(data_root: Path) -> Iterator[str]:
    """A server and data of the test's own (a case that wrongly wrote would otherwise change
    what the next one sees); every case must leave its data exactly as it was."""
    with running_server("dir", {"root": str(data_root)}) as url:
        with httpx.Client(base_url=url) as client:
            client.post("/v1/namespace/a/create", json={}).raise_for_status()
            client.post("/v1/table/a$t/create", content=GOOD_ROWS, headers=ARROW).raise_for_status()
        yield url


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
def test_bad_input_is_invalid_input_and_writes_nothing(
    populated: str, data_root: Path, case: str
) -> None:
    method, url, headers, body = BAD_REQUESTS[case]
    before = tree_snapshot(data_root)
    with httpx.Client(base_url=populated) as client:
        if isinstance(body, dict):
            response = client.request(method, url, json=body, headers=headers)
        else:
            response = client.request(method, url, content=body, headers=headers)
    assert response.status_code == 400, (case, response.status_code, response.text)
    error = response.json()
    assert error["code"] == 13, error
    assert error["error"] and error["instance"]
    assert tree_snapshot(data_root) == before
    with httpx.Client(base_url=populated) as client:
        assert client.post("/v1/table/a$t/count_rows", json={}).json() == 3
        assert client.get("/v1/namespace/$/list").json()["namespaces"] == ["a"]
        assert client.get("/v1/namespace/a/table/list").json()["tables"] == ["t"]


def test_lookalike_names_are_one_name(tmp_path: Path) -> None:
    """NFC and NFD spellings of a name address the same namespace."""
    with running_server("dir", {"root": str(tmp_path)}) as url, \
            httpx.Client(base_url=url) as client:
        composed, decomposed = "caf\u00e9", "cafe\u0301"
        assert client.post(f"/v1/namespace/{composed}/create", json={}).status_code == 200
        answer = client.post(f"/v1/namespace/{decomposed}/create", json={})
        assert answer.status_code == 409, answer.text
        assert client.post(f"/v1/namespace/{decomposed}/exists", json={}).status_code == 200
        assert client.get("/v1/namespace/$/list").json()["namespaces"] == [composed]


def test_error_answers_carry_no_server_paths_or_native_source_locations(tmp_path: Path) -> None:
    data_root = tmp_path / "root"
    with running_server("dir", {"root": str(data_root)}) as url, \
            httpx.Client(base_url=url) as client:
        client.post("/v1/namespace/a/create", json={}).raise_for_status()
        client.post("/v1/table/a$t/create", content=GOOD_ROWS, headers=ARROW).raise_for_status()
        (data_root / "a" / "not-lance.lance").mkdir(parents=True, exist_ok=True)
        answers = [
            client.post("/v1/table/a$missing/count_rows", json={}),
            client.post("/v1/table/a$t/query", json={"k": 1, "filter": "nonsense ((("}),
            client.post("/RenameTable", json={"id": ["a", "t"], "new_table_name": ""}),
        ]
    for answer in answers:
        assert 400 <= answer.status_code < 500, answer.text
        text = answer.text
        assert str(data_root) not in text and str(data_root).lstrip("/") not in text
        assert ".rs:" not in text and "backtrace" not in text.lower(), text


def _stream_of(schema: pa.Schema, *columns: list[object]) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(pa.record_batch([pa.array(column) for column in columns], schema=schema))
    return sink.getvalue().to_pybytes()


# Requests Lance itself refuses, with the status and code each must get: (url, body).
LANCE_REFUSALS: dict[str, tuple[str, bytes | dict, int, int]] = {
    "duplicate field names": ("/v1/table/a$dup/create", _stream_of(
        pa.schema([("a", pa.int64()), ("a", pa.int64())]), [1], [2]), 400, 13),
    "append of another schema": ("/v1/table/a$t/insert", arrow_stream(
        pa.table({"zzz": pa.array(["x"])})), 400, 20),
    "update of a missing column": ("/v1/table/a$t/update", {"updates": [["nope", "1"]]}, 404, 12),
    "update with a malformed predicate": (
        "/v1/table/a$t/update", {"predicate": "id >>> 3", "updates": [["id", "1"]]}, 400, 13),
    "delete of a missing column": ("/v1/table/a$t/delete", {"predicate": "nope = 3"}, 400, 13),
    "vector of the wrong dimension": (
        "/v1/table/a$t/query", {"k": 2, "vector": {"single_vector": [0.1, 0.2]}}, 400, 13),
    "merge on a missing column": (
        "/v1/table/a$t/merge_insert?on=nope&when_not_matched_insert_all=true", GOOD_ROWS, 404, 12),
    "index of a missing column": (
        "/v1/table/a$t/create_index", {"column": "nope", "index_type": "BTREE"}, 400, 13),
    "restore of a missing version": ("/v1/table/a$t/restore", {"version": 99}, 404, 11),
    "alter a missing column": (
        "/v1/table/a$t/alter_columns", {"alterations": [{"path": "nope", "rename": "x"}]},
        404, 12),
}
_DEBUG_STRUCTURE = re.compile(r"\b[A-Z]\w* ?\{|\.rs\b|backtrace|location:|Location", re.I)


@pytest.mark.parametrize("case", sorted(LANCE_REFUSALS))
def test_lance_refusals_are_one_sentence(populated: str, data_root: Path, case: str) -> None:
    """What Lance refuses reaches the client as its text alone: no debug structure (`Schema {
    fields: [...] }`), source location, backtrace or server path; the log keeps them."""
    path, body, status, code = LANCE_REFUSALS[case]
    with httpx.Client(base_url=populated, timeout=60) as client:
        if isinstance(body, dict):
            answer = client.post(path, json=body)
        else:
            answer = client.post(path, content=body, headers=ARROW)
    assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
    message = answer.json()["error"]
    assert not _DEBUG_STRUCTURE.search(message), message
    assert "\n" not in message and not message.rstrip().endswith(":"), message
    assert str(data_root).strip("/") not in message
