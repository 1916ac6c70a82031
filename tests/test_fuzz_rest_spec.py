"""Fuzzing the server with schemathesis over rest.yaml on --impl dir: every generated request
goes to its /v1/ route and, with the same fields, to POST /<OperationId>. No answer may be a
5xx or break the spec's response schema, and a 4xx (a must-reject case) must leave the root's
file tree as it was. Arrow bodies come from a strategy of small, sometimes broken, streams."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pyarrow as pa
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import response_schema_conformance

from app.spec import SPEC_PATH
from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, sample_table

ARROW_STREAM = "application/vnd.apache.arrow.stream"
T = TypeVar("T")
# Examples per operation: enough for 5,000 requests in about three minutes on 2 cores. Writes
# that copy data or build indexes cost a round-trip of tens of milliseconds; they get fewer.
EXAMPLES_PER_OPERATION = 50
SLOW_OPERATIONS = {"CreateTableIndex": 15, "CreateTableScalarIndex": 15}
MIN_REQUESTS = 5000
TIME_BUDGET_SECONDS = 300.0


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
    """Every file under `root` with its size and modification time, from one scandir walk.
    Directories are walked, not compared: a temporary file created and removed changes
    their modification time and nothing else."""
    state: list[tuple[str, int, int]] = []
    pending = [root]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
                else:
                    info = entry.stat(follow_symlinks=False)
                    state.append((entry.path, info.st_size, info.st_mtime_ns))
    return sorted(state)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("fuzz-root")
    with running_server("dir", {"root": str(root)}) as url, httpx.Client(base_url=url) as http:
        http.post("/v1/namespace/ns/create", json={})
        http.post("/v1/table/ns$t/create", content=arrow_stream(sample_table(5)),
                  headers={"content-type": ARROW_STREAM})
        yield url, root


class Tally:
    """Requests sent, failures seen, the root as it was after the last request, and where
    the time went."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests = 0
        self.failures: list[str] = []
        self.deadline = time.monotonic() + TIME_BUDGET_SECONDS
        self.last_state = tree_state(root)
        self.seconds = {"server": 0.0, "tree": 0.0, "schema": 0.0}

    def timed(self, part: str, call: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            return call()
        finally:
            self.seconds[part] += time.perf_counter() - start

    def check(self, label: str, response: httpx.Response) -> None:
        """No 5xx; a 4xx leaves the root as it was. Nothing else writes to the root, so the
        state after one request is the state before the next."""
        self.requests += 1
        before, self.last_state = self.last_state, self.timed("tree", self._state)
        if response.status_code >= 500:
            self.failures.append(f"{label}: {response.status_code} {response.text[:200]}")
        elif 400 <= response.status_code < 500 and self.last_state != before:
            changed = sorted(set(self.last_state) ^ set(before))[:4]
            self.failures.append(f"{label}: {response.status_code} but the root changed: "
                                 f"{response.request.content[:300]!r} {changed}")

    def _state(self) -> list[tuple[str, int, int]]:
        return tree_state(self.root)


def _operation_route(case: Any, http: httpx.Client) -> httpx.Response:
    """The same request at POST /<OperationId>: JSON fields with the id as a list, or for
    Arrow operations the id in the query and the data as the body."""
    operation_id = case.operation.definition.raw.get("operationId")
    raw_id = (case.path_parameters or {}).get("id")
    query = dict(case.query or {})
    if isinstance(case.body, (bytes, bytearray)):
        if raw_id is not None:
            query["id"] = raw_id
        return http.post(f"/{operation_id}", params=query, content=bytes(case.body),
                         headers={"content-type": ARROW_STREAM})
    body = dict(case.body) if isinstance(case.body, dict) else {}
    body.update({key: value for key, value in query.items() if key != "delimiter"})
    if raw_id is not None:
        body["id"] = [] if raw_id == "$" else str(raw_id).split("$")
    return http.post(f"/{operation_id}", json=body)


def _fuzz_operation(operation: Any, http: httpx.Client, tally: Tally) -> None:
    operation_id = operation.definition.raw.get("operationId")
    examples = SLOW_OPERATIONS.get(operation_id, EXAMPLES_PER_OPERATION)

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def run(case: Any) -> None:
        if time.monotonic() > tally.deadline:
            return
        sent = case.as_transport_kwargs(base_url=str(http.base_url).rstrip("/"))
        response = tally.timed("server", lambda: http.request(**_httpx_arguments(sent)))
        tally.check(operation.label, response)
        try:
            tally.timed("schema", lambda: case.validate_response(
                response, checks=[response_schema_conformance]))
        except Exception as error:  # a schema violation: recorded, the run goes on
            tally.failures.append(f"{operation.label}: schema: {str(error)[:200]}")
        by_id = tally.timed("server", lambda: _operation_route(case, http))
        tally.check(f"{operation.label} by id", by_id)

    run()


def _httpx_arguments(sent: dict[str, Any]) -> dict[str, Any]:
    """Schemathesis' requests-style arguments for httpx."""
    arguments = {key: sent[key] for key in ("method", "url", "headers", "params") if key in sent}
    if "json" in sent:
        arguments["json"] = sent["json"]
    elif sent.get("data") is not None:
        arguments["content"] = sent["data"]
    return arguments


def test_no_5xx_and_no_schema_violation(served: tuple[str, Path]) -> None:
    url, root = served
    schema = schemathesis.openapi.from_path(str(SPEC_PATH))
    tally = Tally(root)
    started = time.monotonic()
    with httpx.Client(base_url=url, timeout=60) as http:
        for result in schema.get_all_operations():
            _fuzz_operation(result.ok(), http, tally)
    seconds = ", ".join(f"{part} {value:.1f}s" for part, value in tally.seconds.items())
    print(f"fuzz: {tally.requests} requests, {len(tally.failures)} failures in "
          f"{time.monotonic() - started:.0f}s ({seconds})")
    assert not tally.failures, "\n".join(tally.failures[:30])
    assert tally.requests >= MIN_REQUESTS, tally.requests
