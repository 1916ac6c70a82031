"""Fuzzing the server with schemathesis over the OpenAPI document it serves (`/openapi.json`:
every operation at its /v1/ route and at POST /<OperationId>) on --impl dir, with the tables of
`tests.support.seeded_state` in place: nested and root, renamed to the root, declared, with
tags and branches, non-ASCII names, quotes in names. Generated requests are steered at those
tables and at tag and branch names that are real, non-ASCII, reserved or broken (control
characters, `..`).

No answer may be a 5xx or break the document's answer models, and a 4xx (a must-reject case)
must leave the root's file tree as it was. The budget is a fixed number of examples per
operation; `FUZZ_SEED` picks the run (the suite's is 0). Arrow bodies come from a strategy of
small, sometimes broken, streams."""

from __future__ import annotations

import io
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import pyarrow as pa
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.seeded_state import (
    ARROW_STREAM,
    BRANCH,
    NON_ASCII_BRANCH,
    TABLES,
    TAG,
)
from tests.support.seeded_state import (
    seed as seed_state,
)

T = TypeVar("T")
FUZZ_SEED = int(os.environ.get("FUZZ_SEED", "0"))
# Examples per operation and route: about 4,600 requests in about 2.5 minutes on 2 cores.
# Writes that copy data or build indexes cost tens of milliseconds a request; they get fewer.
EXAMPLES_PER_OPERATION = 60
SLOW_OPERATIONS = {"CreateTableIndex": 20, "CreateTableScalarIndex": 20}
# A derived `POST /<OperationId>` route (one with `x-lance-operation`) runs the same handler
# as its /v1/ route, which gets the full count; only how the route reads its request differs,
# so it gets a third. An operation rest.yaml describes only at POST /<OperationId> has no
# other route and gets the full count.
ALIAS_ROUTE_SHARE = 3
# 58 operations x 60 + 2 x 20 at their own routes, 54 x 20 + 2 x 6 at the derived ones: 4,612;
# fewer means the time budget cut the run short.
MIN_REQUESTS = 4000
# Only a guard against a hung server: the budget is the examples above.
TIME_BUDGET_SECONDS = 400.0
# What a generated request's identifier and ref names become (None: what was generated).
IDENTIFIERS = [None, *TABLES, "ns", "o'ns", "x') OR true OR ('", "r$x", "ns$t$deeper", "nö\u0001"]
REF_NAMES = [
    None,
    TAG,
    BRANCH,
    NON_ASCII_BRANCH,
    "main",
    "日本",
    "a..b",
    "\u0001",
    "x.lock",
    "a/b",
    "",
    ".x",
    "v1\u202e",
    "../../etc",
]
VERSIONS = [None, 1, 2]
STEERED_FIELDS = {
    **{field: REF_NAMES for field in ("tag", "branch", "from_branch", "name")},
    **{field: VERSIONS for field in ("version", "from_version")},
}


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
        st.lists(
            st.tuples(
                st.sampled_from(["id", "name", "x", "é"]), st.sampled_from(["int", "str", "float"])
            ),
            min_size=1,
            max_size=3,
        ),
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
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    root = tmp_path_factory.mktemp("fuzz-root")
    with (
        running_server("dir", {"root": str(root)}) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        seed_state(http)
        yield http, root


class Tally:
    """Requests sent, failures seen, the root as it was after the last request, and where
    the time went."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests = 0
        self.statuses: Counter[int] = Counter()
        self.failures: list[str] = []
        self.deadline = time.monotonic() + TIME_BUDGET_SECONDS
        self.last_state = self.seeded_state = tree_state(root)
        self.seconds = {"server": 0.0, "tree": 0.0, "schema": 0.0, "seed": 0.0}

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
        self.statuses[response.status_code // 100 * 100] += 1
        before, self.last_state = self.last_state, self.timed("tree", self._state)
        if response.status_code >= 500:
            self.failures.append(
                f"{label}: {response.status_code} {response.text[:200]} "
                f"for {response.request.content[:300]!r}"
            )
        elif 400 <= response.status_code < 500 and self.last_state != before:
            changed = sorted(set(self.last_state) ^ set(before))[:4]
            self.failures.append(
                f"{label}: {response.status_code} but the root changed: "
                f"{response.request.content[:300]!r} {changed}"
            )

    def reseed(self, http: httpx.Client) -> None:
        """The seeded tables back in place after an operation's examples. The server keeps
        its tables only under the root: when no file there changed since the last seeding,
        nothing is missing and seeding again would create nothing."""
        if self.last_state == self.seeded_state:
            return
        self.timed("seed", lambda: seed_state(http))
        self.last_state = self.seeded_state = self._state()

    def _state(self) -> list[tuple[str, int, int]]:
        return tree_state(self.root)


def _steer(case: Any, identifier: str | None, fields: dict[str, Any]) -> None:
    """Point `case` at a seeded table (its id in the route's style, `$`-joined) and at the
    ref names and versions of `fields` (None: as generated)."""
    body = case.body if isinstance(case.body, dict) else None
    if identifier is not None:
        (case.query or {}).pop("delimiter", None)
        if "id" in (case.path_parameters or {}):
            case.path_parameters["id"] = quote(identifier, safe="$")
            if body is not None:
                body.pop("id", None)
        elif "id" in (case.query or {}):
            case.query["id"] = identifier
        elif body is not None:
            body["id"] = [] if identifier == "$" else identifier.split("$")
    for field, value in fields.items():
        if body is not None and value is not None and field in body:
            body[field] = value


def _httpx_arguments(sent: dict[str, Any]) -> dict[str, Any]:
    """Schemathesis' requests-style arguments for httpx."""
    arguments = {key: sent[key] for key in ("method", "url", "headers", "params") if key in sent}
    if "json" in sent:
        arguments["json"] = sent["json"]
    elif sent.get("data") is not None:
        arguments["content"] = sent["data"]
    return arguments


CHECKS = [status_code_conformance, content_type_conformance, response_schema_conformance]


def _fuzz_operation(operation: Any, http: httpx.Client, tally: Tally) -> None:
    alias_of = operation.definition.raw.get("x-lance-operation")
    served_id = alias_of or operation.definition.raw.get("operationId")
    examples = SLOW_OPERATIONS.get(served_id, EXAMPLES_PER_OPERATION)
    if alias_of is not None:
        examples //= ALIAS_ROUTE_SHARE
    fields = st.fixed_dictionaries(
        {field: st.sampled_from(values) for field, values in STEERED_FIELDS.items()}
    )

    @seed(FUZZ_SEED)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(), identifier=st.sampled_from(IDENTIFIERS), fields=fields)
    def run(case: Any, identifier: str | None, fields: dict[str, Any]) -> None:
        if time.monotonic() > tally.deadline:
            return
        _steer(case, identifier, fields)
        sent = case.as_transport_kwargs(base_url=str(http.base_url).rstrip("/"))
        response = tally.timed("server", lambda: http.request(**_httpx_arguments(sent)))
        tally.check(operation.label, response)
        try:
            tally.timed("schema", lambda: case.validate_response(response, checks=CHECKS))
        except Exception as error:  # a nonconforming answer: recorded, the run goes on
            tally.failures.append(f"{operation.label}: schema: {str(error)[:300]}")

    run()
    tally.reseed(http)


def test_no_5xx_and_every_answer_conforms(served: tuple[httpx.Client, Path]) -> None:
    http, root = served
    schema = schemathesis.openapi.from_dict(http.get("/openapi.json").json())
    tally = Tally(root)
    started = time.monotonic()
    for result in schema.get_all_operations():
        _fuzz_operation(result.ok(), http, tally)
    seconds = ", ".join(f"{part} {value:.1f}s" for part, value in tally.seconds.items())
    classes = ", ".join(
        f"{status // 100}xx {count}" for status, count in sorted(tally.statuses.items())
    )
    print(
        f"fuzz seed {FUZZ_SEED}: {tally.requests} requests ({classes}), "
        f"{len(tally.failures)} failures in {time.monotonic() - started:.0f}s ({seconds})"
    )
    assert not tally.failures, "\n".join(tally.failures[:30])
    assert tally.requests >= MIN_REQUESTS, tally.requests
