"""Fuzzing the server with schemathesis over rest.yaml on --impl dir: every generated request
goes to its /v1/ route and, with the same fields, to POST /<OperationId>. No answer may be a
5xx or break the spec's response schema, and a 4xx (a must-reject case) must leave the root's
file tree as it was. Arrow bodies come from a strategy of small, sometimes broken, streams."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import response_schema_conformance

from app.spec import SPEC_PATH
from tests.lance_data import arrow_stream, sample_table
from tests.server import running_server

ARROW_STREAM = "application/vnd.apache.arrow.stream"
EXAMPLES_PER_OPERATION = 30
TIME_BUDGET_SECONDS = 120.0


def _arrow_body(columns: list[tuple[str, str]], rows: int, cut: int | None) -> bytes:
    types = {"int": pa.int64(), "str": pa.string(), "float": pa.float32()}
    table = pa.table({name: pa.array([None] * rows, types[kind]) for name, kind in columns})
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data = sink.getvalue()
    return data if cut is None else data[:cut]


ARROW_BODIES = st.one_of(
    st.just(arrow_stream(sample_table(3))),
    st.builds(
        _arrow_body,
        st.lists(st.tuples(st.sampled_from(["id", "name", "x", "é"]),
                           st.sampled_from(["int", "str", "float"])), min_size=1, max_size=3),
        st.integers(0, 5),
        st.one_of(st.none(), st.integers(0, 200)),
    ),
    st.binary(max_size=64),
)
schemathesis.openapi.media_type(ARROW_STREAM, ARROW_BODIES)


def tree_state(root: Path) -> list[tuple[str, int, int]]:
    """Every path under `root` with its size and modification time."""
    return sorted(
        (str(path.relative_to(root)), path.stat().st_size, path.stat().st_mtime_ns)
        for path in root.rglob("*")
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("fuzz-root")
    with running_server("dir", {"root": str(root)}) as url, httpx.Client(base_url=url) as http:
        http.post("/v1/namespace/ns/create", json={})
        http.post("/v1/table/ns$t/create", content=arrow_stream(sample_table(5)),
                  headers={"content-type": ARROW_STREAM})
        yield url, root


class Tally:
    def __init__(self) -> None:
        self.requests = 0
        self.failures: list[str] = []
        self.deadline = time.monotonic() + TIME_BUDGET_SECONDS


def _check(tally: Tally, label: str, response: httpx.Response, before: list, root: Path) -> None:
    tally.requests += 1
    if response.status_code >= 500:
        tally.failures.append(f"{label}: {response.status_code} {response.text[:200]}")
    elif 400 <= response.status_code < 500 and tree_state(root) != before:
        tally.failures.append(f"{label}: {response.status_code} but the root changed")


def _operation_route(case: Any, url: str) -> httpx.Response:
    """The same request at POST /<OperationId>: JSON fields with the id as a list, or for
    Arrow operations the id in the query and the data as the body."""
    operation_id = case.operation.definition.raw.get("operationId")
    raw_id = (case.path_parameters or {}).get("id")
    query = dict(case.query or {})
    if isinstance(case.body, (bytes, bytearray)):
        if raw_id is not None:
            query["id"] = raw_id
        return httpx.post(f"{url}/{operation_id}", params=query, content=bytes(case.body),
                          headers={"content-type": ARROW_STREAM}, timeout=60)
    body = dict(case.body) if isinstance(case.body, dict) else {}
    body.update({key: value for key, value in query.items() if key != "delimiter"})
    if raw_id is not None:
        body["id"] = [] if raw_id == "$" else str(raw_id).split("$")
    return httpx.post(f"{url}/{operation_id}", json=body, timeout=60)


def _fuzz_operation(operation: Any, url: str, root: Path, tally: Tally) -> None:
    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def run(case: Any) -> None:
        if time.monotonic() > tally.deadline:
            return
        before = tree_state(root)
        response = case.call(base_url=url, timeout=60)
        _check(tally, operation.label, httpx.Response(response.status_code, text=response.text),
               before, root)
        try:
            case.validate_response(response, checks=[response_schema_conformance])
        except Exception as error:  # a schema violation: recorded, the run goes on
            tally.failures.append(f"{operation.label}: schema: {str(error)[:200]}")
        before = tree_state(root)
        _check(tally, f"{operation.label} by id", _operation_route(case, url), before, root)

    run()


def test_no_5xx_and_no_schema_violation(served: tuple[str, Path]) -> None:
    url, root = served
    schema = schemathesis.openapi.from_path(str(SPEC_PATH))
    tally = Tally()
    for result in schema.get_all_operations():
        _fuzz_operation(result.ok(), url, root, tally)
    print(f"fuzz: {tally.requests} requests, {len(tally.failures)} failures")
    assert not tally.failures, "\n".join(tally.failures[:30])
    assert tally.requests >= 5000 or time.monotonic() > tally.deadline, tally.requests
