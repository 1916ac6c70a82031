"""Every answer says what happened (issue 32): each reproduction of the issue, and each 5xx
the fuzz pass (tests/test_fuzz_rest_spec.py) found, as a named test on both route styles (the
/v1/ route and POST /<OperationId>) and in the table states of `tests.support.seeded_state`.

Refusals are the right 4xx and code with one clear sentence: no 500, no debug dump, no server
path, and nothing written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import lance
import pytest

from app.errors import public_message
from app.spec import load_operations
from tests.support.adapter import running_server
from tests.support.seeded_state import (
    BRANCH,
    DECLARED,
    NESTED,
    QUOTED,
    QUOTED_NAMESPACE,
    RENAMED,
    ROOT,
    TAG,
    WITH_DATA,
    seed,
)

OPERATIONS = {operation.operation_id: operation for operation in load_operations()}
STYLES = ("v1", "operation-id")
VECTOR = [0.5] * 8


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    root = tmp_path_factory.mktemp("answers-root")
    with (
        running_server("dir", {"root": str(root)}) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        seed(http)
        yield http, root


def call(
    http: httpx.Client,
    style: str,
    operation_id: str,
    table: str,
    body: dict[str, Any] | None = None,
) -> httpx.Response:
    """`operation_id` on `table` (`$`-joined) at its /v1/ route or at POST /<OperationId>."""
    if style == "v1":
        operation = OPERATIONS[operation_id]
        path = operation.path.replace("{id}", quote(table, safe="$"))
        return http.request(operation.method, path, json=body or {})
    return http.post(f"/{operation_id}", json={**(body or {}), "id": table.split("$")})


def tree(root: Path) -> dict[str, int]:
    return {str(path): path.stat().st_size for path in root.rglob("*") if path.is_file()}


def assert_refused(answer: httpx.Response, status: int, code: int, root: Path) -> str:
    """The answer is `status` with `code` and a message free of paths and dumps; its text."""
    assert (answer.status_code, answer.json()["code"]) == (status, code), answer.text
    message = answer.json()["error"]
    for leak in (
        str(root),
        str(root).lstrip("/"),
        quote(str(root)),
        "{ source:",
        "location:",
        "Traceback",
    ):
        assert leak not in message, message
    return message


@pytest.mark.parametrize("style", STYLES)
def test_a_non_ascii_tag_is_refused_and_the_tag_listing_keeps_working(
    served: tuple[httpx.Client, Path], style: str
) -> None:
    http, root = served
    before = tree(root)
    refused = call(http, style, "CreateTableTag", NESTED, {"tag": "été", "version": 1})
    message = assert_refused(refused, 400, 13, root)
    assert "ASCII letters" in message
    assert tree(root) == before
    listed = call(http, style, "ListTableTags", NESTED)
    assert listed.status_code == 200 and TAG in listed.json()["tags"], listed.text
    created = call(http, style, "CreateTableBranch", NESTED, {"name": "b-ascii"})
    assert created.status_code == 200, created.text
    deleted = call(http, style, "DeleteTableBranch", NESTED, {"name": "b-ascii"})
    assert deleted.status_code == 200, deleted.text


def test_a_non_ascii_branch_round_trips(served: tuple[httpx.Client, Path]) -> None:
    http, _ = served
    branches = call(http, "v1", "ListTableBranches", NESTED).json()["branches"]
    assert "été" in branches
    rows = call(http, "v1", "CountTableRows", NESTED, {"branch": "été"})
    assert (rows.status_code, rows.json()) == (200, 5)


def test_a_tag_another_client_wrote_with_a_non_ascii_name_answers_409_until_deleted(
    served: tuple[httpx.Client, Path],
) -> None:
    http, root = served
    location = call(http, "v1", "DescribeTable", NESTED).json()["location"]
    lance.dataset(location).tags.create("été", 1)
    for style in STYLES:
        listed = call(http, style, "ListTableTags", NESTED)
        assert "DeleteTableTag" in assert_refused(listed, 409, 19, root)
        deleting_a_branch = call(http, style, "DeleteTableBranch", NESTED, {"name": BRANCH})
        assert_refused(deleting_a_branch, 409, 19, root)
    deleted = call(http, "v1", "DeleteTableTag", NESTED, {"tag": "été"})
    assert deleted.status_code == 200, deleted.text
    assert call(http, "v1", "ListTableTags", NESTED).status_code == 200


BAD_REF_REQUESTS = [
    ("CreateTableTag", {"tag": "a..b", "version": 1}),
    ("CreateTableTag", {"tag": "\u0001", "version": 1}),
    ("UpdateTableTag", {"tag": "a..b", "version": 1}),
    ("DeleteTableTag", {"tag": "x.lock"}),
    ("GetTableTagVersion", {"tag": ".x"}),
    ("CreateTableBranch", {"name": "a..b"}),
    ("CreateTableBranch", {"name": "main"}),
    ("DeleteTableBranch", {"name": "\u0001"}),
    ("CreateTableBranch", {"name": "b1", "from_branch": "\u0001"}),
    ("CreateTableBranch", {"name": "b1", "from_branch": ".."}),
    ("CountTableRows", {"branch": "../../etc"}),
    ("QueryTable", {"k": 1, "vector": {"single_vector": VECTOR}, "filter": "((("}),
]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("table", [NESTED, ROOT, RENAMED])
@pytest.mark.parametrize(("operation_id", "body"), BAD_REF_REQUESTS)
def test_invalid_tag_branch_and_query_requests_are_400_in_every_table_state(
    served: tuple[httpx.Client, Path],
    style: str,
    table: str,
    operation_id: str,
    body: dict[str, Any],
) -> None:
    http, root = served
    before = tree(root)
    assert_refused(call(http, style, operation_id, table, body), 400, 13, root)
    assert tree(root) == before


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("table", WITH_DATA)
def test_an_expression_naming_an_unknown_column_is_400_code_13(
    served: tuple[httpx.Client, Path], style: str, table: str
) -> None:
    """Invalid input, as an unknown column in a filter is: the expression does not bind."""
    http, root = served
    body = {"new_columns": [{"name": "z", "expression": "nosuch + 1"}]}
    message = assert_refused(call(http, style, "AlterTableAddColumns", table, body), 400, 13, root)
    assert "nosuch" in message


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("table", WITH_DATA)
@pytest.mark.parametrize("vector", [[], VECTOR])
def test_a_query_naming_an_unknown_vector_column_is_404_code_12(
    served: tuple[httpx.Client, Path], style: str, table: str, vector: list[float]
) -> None:
    http, root = served
    body = {"k": 2, "vector": {"single_vector": vector}, "vector_column": "nosuch"}
    assert_refused(call(http, style, "QueryTable", table, body), 404, 12, root)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("table", [NESTED, ROOT, DECLARED])
def test_create_table_version_with_an_empty_manifest_path_is_400(
    served: tuple[httpx.Client, Path], style: str, table: str
) -> None:
    http, root = served
    body = {"version": 2, "manifest_path": ""}
    assert_refused(call(http, style, "CreateTableVersion", table, body), 400, 13, root)


@pytest.mark.parametrize("style", STYLES)
def test_create_table_version_on_a_table_moved_to_the_root_says_why_it_cannot(
    served: tuple[httpx.Client, Path], style: str
) -> None:
    http, root = served
    assert call(http, style, "DescribeTable", RENAMED).status_code == 200
    body = {"version": 2, "manifest_path": "_versions/2.manifest-staged"}
    message = assert_refused(call(http, style, "CreateTableVersion", RENAMED, body), 406, 0, root)
    assert "root table registered at another location" in message


@pytest.mark.parametrize(
    "manifest",
    ["{outside}", "{outside_key}", "../../{outside_key}", "_versions/1.manifest", "data/x.lance"],
)
def test_create_table_version_commits_only_the_tables_own_staging_manifests(
    served: tuple[httpx.Client, Path], tmp_path: Path, manifest: str
) -> None:
    """Committing moves the staging file: anything else the server can read would have been
    copied into the table as a manifest and deleted."""
    http, root = served
    outside = tmp_path / "secret.txt"
    outside.write_text("not a manifest")
    path = manifest.format(outside=outside, outside_key=str(outside).lstrip("/"))
    before = tree(root)
    answer = call(http, "v1", "CreateTableVersion", NESTED, {"version": 2, "manifest_path": path})
    assert_refused(answer, 400, 13, root)
    assert outside.read_text() == "not a manifest" and tree(root) == before


@pytest.mark.parametrize("style", STYLES)
def test_names_holding_a_quote_are_listed_and_never_read_as_sql(
    served: tuple[httpx.Client, Path], style: str
) -> None:
    """Natively the listings pasted a parent's names into their SQL: a namespace named with a
    quote made ListTables, ListNamespaces under it and ListAllTables fail for everyone."""
    http, _ = served
    namespace = QUOTED_NAMESPACE.split("$")
    if style == "v1":
        tables = http.get(f"/v1/namespace/{QUOTED_NAMESPACE}/table/list").json()["tables"]
        children = http.get(f"/v1/namespace/{QUOTED_NAMESPACE}/list").json()["namespaces"]
        injected = http.get("/v1/namespace/x') OR true OR ('/list").json()["namespaces"]
        everything = http.get("/v1/table").json()["tables"]
    else:
        tables = http.post("/ListTables", json={"id": namespace}).json()["tables"]
        children = http.post("/ListNamespaces", json={"id": namespace}).json()["namespaces"]
        injected = http.post("/ListNamespaces", json={"id": ["x') OR true OR ('"]}).json()[
            "namespaces"
        ]
        everything = http.post("/ListAllTables", json={}).json()["tables"]
    assert (tables, children, injected) == (["t'1"], [], [])
    assert QUOTED in everything and NESTED in everything


@pytest.mark.parametrize("style", STYLES)
def test_deregistering_a_root_table_listed_by_its_directory_is_refused_and_changes_nothing(
    served: tuple[httpx.Client, Path], style: str
) -> None:
    http, root = served
    before = tree(root)
    message = assert_refused(call(http, style, "DeregisterTable", ROOT), 406, 0, root)
    assert "DropTable" in message
    assert tree(root) == before
    assert call(http, style, "DescribeTable", ROOT).status_code == 200
    assert call(http, style, "TableExists", ROOT).status_code == 200
    assert ROOT in http.get("/v1/namespace/$/table/list").json()["tables"]
    assert call(http, "v1", "CountTableRows", ROOT).json() == 5


MISSING_VERSION_REQUESTS = [
    ("CountTableRows", {"version": 99}),
    ("QueryTable", {"k": 1, "vector": {"single_vector": []}, "version": 99}),
    ("RestoreTable", {"version": 99}),
    ("DescribeTable", {"version": 99, "load_detailed_metadata": True}),
    ("ListTableIndices", {"version": 99}),
    ("DescribeTableVersion", {"version": 99}),
    ("CreateTableTag", {"tag": "x", "version": 99}),
    ("CreateTableBranch", {"name": "x", "from_version": 99}),
    ("CreateTableBranch", {"name": "x", "from_branch": BRANCH, "from_version": 99}),
]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize(("operation_id", "body"), MISSING_VERSION_REQUESTS)
def test_a_missing_version_is_404_code_11_naming_no_server_path_in_every_table_state(
    served: tuple[httpx.Client, Path], style: str, operation_id: str, body: dict[str, Any]
) -> None:
    """Natively the texts carried the root without its leading slash, past the path hiding."""
    http, root = served
    for table in (NESTED, ROOT, RENAMED):
        assert_refused(call(http, style, operation_id, table, body), 404, 11, root)


@pytest.mark.parametrize("spelling", ["{root}", "{bare}", "file://{root}", "{quoted}", "{encoded}"])
def test_the_sanitiser_hides_every_spelling_of_a_server_path(spelling: str) -> None:
    root = "/srv/lance data/rööt"
    path = spelling.format(
        root=root, bare=root.lstrip("/"), quoted=quote(root), encoded=quote(root, safe="")
    )
    hidden = public_message(f"Not found: {path}/ns$t/_versions/99.manifest, at '{path}'",
                            [root])
    assert "srv" not in hidden and "lance data" not in hidden and "r%C3%B6%C3%B6t" not in hidden
    assert "<path>" in hidden


@pytest.mark.parametrize("method", ["TRACE", "PATCH", "PUT", "DELETE"])
@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/v1/table/r/describe", "POST"),
        ("/v1/namespace/$/list", "GET, HEAD"),
        ("/DescribeTable", "POST"),
        ("/healthz", "GET, HEAD"),
    ],
)
def test_a_method_a_path_does_not_serve_is_405_naming_those_it_does(
    served: tuple[httpx.Client, Path], method: str, path: str, allowed: str
) -> None:
    http, _ = served
    answer = http.request(method, path)
    assert (answer.status_code, answer.json()["code"]) == (405, 0), answer.text
    assert answer.headers["allow"] == allowed


def test_the_openapi_document_lists_both_route_styles_of_every_operation(
    served: tuple[httpx.Client, Path],
) -> None:
    http, _ = served
    document = http.get("/openapi.json").json()
    schemas = document["components"]["schemas"]
    for operation in OPERATIONS.values():
        by_id = document["paths"][f"/{operation.operation_id}"]["post"]
        if operation.path is not None:
            assert operation.method.lower() in document["paths"][operation.path]
            assert by_id["x-lance-operation"] == operation.operation_id
        answer = by_id["responses"]["200"]["content"]
        reference = json.dumps(answer)
        if "application/json" in answer and "$ref" in reference:
            assert reference.split("/")[-1].rstrip('"}') in schemas
    operation_ids = [
        item[method]["operationId"]
        for item in document["paths"].values()
        for method in ("get", "post")
        if method in item
    ]
    assert len(operation_ids) == len(set(operation_ids))
    assert http.get("/rest.yaml").text.count("ByOperationId") == len(
        [operation for operation in OPERATIONS.values() if operation.path is not None]
    )


@dataclass(frozen=True)
class Finding:
    """A request the fuzz pass answered with a 5xx, reduced, and the answer it must get on
    every table that has data (nested, at the root, renamed to the root)."""

    name: str
    operation_id: str
    body: dict[str, Any]
    status: int
    code: int


FUZZ_FINDINGS = [
    Finding(
        "a_branch_from_a_branch_that_does_not_exist",
        "CreateTableBranch",
        {"name": "b2", "from_branch": "ünbekannt"},
        404,
        22,
    ),
    Finding(
        "a_full_text_search_without_an_inverted_index",
        "QueryTable",
        {
            "k": 2,
            "vector": {"single_vector": []},
            "full_text_query": {"string_query": {"query": "row"}},
        },
        400,
        13,
    ),
    Finding(
        "a_multi_vector_query_holding_an_empty_vector",
        "QueryTable",
        {"k": 2, "vector": {"multi_vector": [[], VECTOR]}},
        400,
        13,
    ),
    Finding(
        "a_multi_vector_query_plan_holding_an_empty_vector",
        "AnalyzeTableQueryPlan",
        {"k": 2, "vector": {"multi_vector": [[], VECTOR]}},
        400,
        13,
    ),
    Finding(
        "a_new_column_whose_expression_is_an_unknown_column",
        "AlterTableAddColumns",
        {"new_columns": [{"name": "z", "expression": "È"}]},
        400,
        13,
    ),
    Finding(
        "a_computed_new_column",
        "AlterTableAddColumns",
        {"new_columns": [{"name": "z", "computed": "id + 1"}]},
        406,
        0,
    ),
    Finding(
        "a_predicate_lances_sql_planner_panics_on",
        "DeleteFromTable",
        {"predicate": ":\u00d4m\u009d\u00f0"},
        400,
        13,
    ),
]

# What made Lance's SQL planner panic ("not yet implemented"), and where a request holds SQL.
PANICKING_SQL = [
    ":x = id",
    "id > $1",
    "? = id",
    "$$a$$ = name",
    "name = N'a'",
    "name = B'01'",
    "name IN (r'a')",
    "id BETWEEN :a AND 2",
]
SQL_FIELDS = [
    ("CountTableRows", lambda sql: {"predicate": sql}),
    ("QueryTable", lambda sql: {"k": 1, "vector": {"single_vector": []}, "filter": sql}),
    ("UpdateTable", lambda sql: {"predicate": "id > 1", "updates": [["id", f"({sql})"]]}),
    ("AlterTableAddColumns", lambda sql: {"new_columns": [{"name": "z", "expression": sql}]}),
]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("sql", PANICKING_SQL)
@pytest.mark.parametrize(("operation_id", "body"), SQL_FIELDS, ids=[f[0] for f in SQL_FIELDS])
def test_sql_lance_cannot_plan_is_400_code_13_in_every_table_state(
    served: tuple[httpx.Client, Path], style: str, sql: str, operation_id: str, body: Any
) -> None:
    http, root = served
    before = tree(root)
    for table in (NESTED, ROOT, RENAMED):
        assert_refused(call(http, style, operation_id, table, body(sql)), 400, 13, root)
    assert tree(root) == before


@pytest.mark.parametrize(
    "sql",
    ["id::int > 1", "name = 'a?:$'", "`a:b` = 1", "name = 'N''a'", '"x:y" = name', "name = X'61'"],
)
def test_sql_lance_plans_is_not_refused_for_looking_alike(
    served: tuple[httpx.Client, Path], sql: str
) -> None:
    http, _ = served
    answer = call(http, "v1", "CountTableRows", NESTED, {"predicate": sql})
    assert answer.status_code < 500 and "Lance's SQL does not support" not in answer.text


@pytest.mark.parametrize("finding", FUZZ_FINDINGS, ids=[f.name for f in FUZZ_FINDINGS])
def test_what_the_fuzz_pass_found(served: tuple[httpx.Client, Path], finding: Finding) -> None:
    http, root = served
    before = tree(root)
    for style in STYLES:
        for table in (NESTED, ROOT, RENAMED):
            answer = call(http, style, finding.operation_id, table, finding.body)
            assert_refused(answer, finding.status, finding.code, root)
    assert tree(root) == before
