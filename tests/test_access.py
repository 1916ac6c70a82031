"""Access is enforced by the server (`auth_mode: token`, `access`): every operation of both
route styles, called by a reader, a writer limited to one namespace and an admin, is refused
with 403 / code 15 before anything changes, or reaches the backend."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.config import access_policy, load_settings
from app.settings import Settings
from app.spec import BodyKind, Operation, load_operations
from backends.core.settings import ConfigurationError
from tests.support.adapter import running_server, serving_identities
from tests.support.lance_data import arrow_stream, sample_table, tree_snapshot
from tests.support.operation_calls import send_operation

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
TOKENS = {"reader": "tok-reader", "writer": "tok-writer", "admin": "tok-admin",
          "sales_reader": "tok-sales-reader", "archivist": "tok-archivist"}
ACCESS = {"reader": "read", "writer": "read, write@sales", "admin": "admin",
          "sales_reader": "read@sales", "archivist": "write@archive"}

# The level each operation needs, written out by hand (not computed by the code under test).
READS = {
    "DescribeNamespace", "GetNamespace", "ListNamespaces", "NamespaceExists", "ListTables",
    "DescribeTable", "GetTable", "TableExists", "CountTableRows", "QueryTable",
    "ExplainTableQueryPlan", "AnalyzeTableQueryPlan", "GetTableStats", "ListTableIndices",
    "DescribeTableIndexStats", "ListTableVersions", "DescribeTableVersion", "ListTableTags",
    "GetTableTagVersion", "ListTableBranches", "ListAllTables", "PrewarmTableIndex",
}
WRITES = {
    "CreateTable", "DeclareTable", "InsertIntoTable", "MergeInsertIntoTable", "UpdateTable",
    "DeleteFromTable", "AlterTableAddColumns", "AlterTableAlterColumns", "AlterTableDropColumns",
    "AlterTableBackfillColumns", "CreateTableIndex", "CreateTableScalarIndex", "DropTableIndex",
    "CreateTableTag", "UpdateTableTag", "DeleteTableTag", "CreateTableBranch",
    "DeleteTableBranch", "CreateTableVersion", "BatchDeleteTableVersions", "RestoreTable",
    "RenameTable", "UpdateFieldMetadata", "UpdateTableSchemaMetadata", "DropTable", "AlterTable",
    "CreateMaterializedView", "RefreshMaterializedView", "CloneTable",
}
ADMINS = {"CreateNamespace", "DropNamespace", "AlterNamespace", "RegisterTable",
          "DeregisterTable"}
# Operations that name no place in the namespace tree: covered by grants over everything.
WHOLE_CATALOG_READS = {"DescribeTransaction"}
WHOLE_CATALOG_ADMINS = {"BatchCommitTables", "BatchCreateTableVersions", "AlterTransaction"}
OPEN = {"ListOperations"}
OPERATIONS = {operation.operation_id: operation for operation in load_operations()}


def test_every_operation_has_a_level_here() -> None:
    classified = [READS, WRITES, ADMINS, WHOLE_CATALOG_READS, WHOLE_CATALOG_ADMINS, OPEN]
    assert sum(len(group) for group in classified) == len(set().union(*classified))
    assert set().union(*classified) == set(OPERATIONS)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A `dir` server with token auth and the three identities; `sales$t` and `hr$t` exist."""
    base = tmp_path_factory.mktemp("access")
    root = base / "root"
    with serving_identities(base, TOKENS, ACCESS) as url:
        admin = {"authorization": f"Bearer {TOKENS['admin']}"}
        for namespace in ("sales", "hr"):
            httpx.post(f"{url}/v1/namespace/{namespace}/create", json={},
                       headers=admin).raise_for_status()
            httpx.post(f"{url}/v1/table/{namespace}$t/create", content=arrow_stream(
                sample_table(3)), headers={**admin, **ARROW}).raise_for_status()
        yield url, root


def target(operation_id: str, namespace: str) -> list[str]:
    """The object a call of `operation_id` names in `namespace`."""
    if operation_id in {"CreateNamespace", "DropNamespace", "AlterNamespace",
                        "DescribeNamespace", "GetNamespace", "NamespaceExists",
                        "ListNamespaces", "ListTables", "ListAllTables"}:
        return [namespace]
    return [namespace, "t"]


def send(url: str, operation: Operation, identity: str, table_id: list[str],
         by_id: bool) -> httpx.Response:
    return send_operation(url, operation, table_id, TOKENS[identity], by_id)


def expected_refused(identity: str, operation_id: str, namespace: str) -> bool:
    if operation_id in OPEN or identity == "admin":
        return False
    if operation_id in READS | WHOLE_CATALOG_READS:
        return False  # the reader and the writer both read everywhere
    if identity == "writer" and operation_id in WRITES:
        return namespace != "sales"
    return True


def refused(answer: httpx.Response) -> bool:
    if answer.status_code != 403:
        return False
    assert answer.json()["code"] == 15, answer.text
    return True


@pytest.mark.parametrize("identity", ["reader", "writer", "admin"])
@pytest.mark.parametrize("by_id", [False, True], ids=["v1-route", "operation-route"])
def test_every_operation_is_refused_or_served_by_access(
    served: tuple[str, Path], identity: str, by_id: bool
) -> None:
    url, root = served
    wrong = []
    # Writers and the admin run last on each namespace: what they allow may change the tree.
    for namespace in ("hr", "sales"):
        for operation_id, operation in sorted(OPERATIONS.items()):
            if operation_id in {"DropNamespace", "DropTable", "DeregisterTable", "RenameTable"}:
                continue  # below, on their own tables
            before = tree_snapshot(root)
            answer = send(url, operation, identity, target(operation_id, namespace), by_id)
            should_refuse = expected_refused(identity, operation_id, namespace)
            if refused(answer) != should_refuse:
                wrong.append((operation_id, namespace, answer.status_code, answer.text[:120]))
            elif should_refuse and tree_snapshot(root) != before:
                wrong.append((operation_id, namespace, "refused, yet the storage changed"))
    assert not wrong, wrong


@pytest.mark.parametrize("operation_id", ["DropTable", "DeregisterTable", "RenameTable"])
def test_taking_a_table_away_needs_its_level_in_its_namespace(
    served: tuple[str, Path], operation_id: str
) -> None:
    url, root = served
    admin = {"authorization": f"Bearer {TOKENS['admin']}"}
    operation = OPERATIONS[operation_id]
    for namespace in ("sales", "hr"):
        table = f"{namespace}$gone_{operation_id.lower()}"
        httpx.post(f"{url}/v1/table/{table}/create", content=arrow_stream(sample_table(1)),
                   headers={**admin, **ARROW}).raise_for_status()
    outcomes = {}
    for identity in ("reader", "writer", "admin"):
        for namespace in ("sales", "hr"):
            table_id = [namespace, f"gone_{operation_id.lower()}"]
            before = tree_snapshot(root)
            if operation_id == "RenameTable":  # within its namespace
                answer = call_as(url, identity, f"/v1/table/{'$'.join(table_id)}/rename",
                                 {"new_table_name": f"{table_id[-1]}_renamed"})
            else:
                answer = send(url, operation, identity, table_id, by_id=True)
            outcomes[(identity, namespace)] = "refused" if refused(answer) else "served"
            if refused(answer):
                assert tree_snapshot(root) == before
    level = "admin" if operation_id == "DeregisterTable" else "write"
    assert outcomes == {
        ("reader", "sales"): "refused", ("reader", "hr"): "refused",
        ("writer", "sales"): "refused" if level == "admin" else "served",
        ("writer", "hr"): "refused", ("admin", "sales"): "served", ("admin", "hr"): "served",
    }


def call_as(url: str, identity: str, path: str, body: dict) -> httpx.Response:
    return httpx.post(f"{url}{path}", json=body, timeout=60,
                      headers={"authorization": f"Bearer {TOKENS[identity]}"})


def test_a_rename_needs_write_where_the_table_goes(served: tuple[str, Path]) -> None:
    url, _ = served
    httpx.post(f"{url}/v1/table/sales$moving/create", content=arrow_stream(sample_table(1)),
               headers={"authorization": f"Bearer {TOKENS['admin']}", **ARROW},
               timeout=60).raise_for_status()
    away = call_as(url, "writer", "/v1/table/sales$moving/rename",
                   {"new_namespace_id": ["hr"], "new_table_name": "moved"})
    assert refused(away), away.text
    within = call_as(url, "writer", "/v1/table/sales$moving/rename",
                     {"new_table_name": "moved"})
    assert within.status_code == 200, within.text
    assert call_as(url, "admin", "/v1/table/sales$moved/exists", {}).status_code == 200


def test_a_malformed_rename_target_is_bad_input(served: tuple[str, Path]) -> None:
    url, _ = served
    for target in (5, "hr", [1], {"a": "b"}):
        answer = call_as(url, "writer", "/v1/table/sales$t/rename",
                         {"new_namespace_id": target, "new_table_name": "x"})
        assert (answer.status_code, answer.json()["code"]) == (400, 13), (target, answer.text)


def test_a_namespace_grant_does_not_cover_a_root_table_of_its_name(
    served: tuple[str, Path],
) -> None:
    """`write@archive` covers the namespace `archive` and its tables, not the root table
    `archive`."""
    url, root = served
    admin = {"authorization": f"Bearer {TOKENS['admin']}"}
    httpx.post(f"{url}/v1/table/archive/create", content=arrow_stream(sample_table(3)),
               headers={**admin, **ARROW}, timeout=60).raise_for_status()
    before = tree_snapshot(root)
    archivist = {"authorization": f"Bearer {TOKENS['archivist']}"}
    inserted = httpx.post(f"{url}/v1/table/archive/insert", headers={**archivist, **ARROW},
                          content=arrow_stream(sample_table(2, start=3)), timeout=60)
    assert refused(inserted), inserted.text
    assert "table archive" in inserted.json()["error"]
    assert refused(call_as(url, "archivist", "/v1/table/archive/drop", {}))
    assert refused(call_as(url, "archivist", "/v1/table/archive/count_rows", {}))
    assert tree_snapshot(root) == before
    counted = call_as(url, "admin", "/v1/table/archive/count_rows", {})
    assert counted.json() == 3, counted.text
    assert call_as(url, "sales_reader", "/v1/table/sales$t/count_rows", {}).status_code == 200


def test_list_all_tables_answers_only_what_the_grant_covers(served: tuple[str, Path]) -> None:
    url, _ = served
    scoped = call_as(url, "sales_reader", "/ListAllTables", {"id": ["sales"]})
    assert scoped.status_code == 200, scoped.text
    assert scoped.json()["tables"] and all(
        table.startswith("sales$") for table in scoped.json()["tables"])
    assert refused(call_as(url, "sales_reader", "/ListAllTables", {"id": ["hr"]}))
    assert refused(call_as(url, "sales_reader", "/ListAllTables", {}))


def test_pointing_a_table_at_storage_needs_admin(served: tuple[str, Path]) -> None:
    url, root = served
    located = {"location": str(root / "sales" / "elsewhere.lance")}
    assert refused(call_as(url, "writer", "/v1/table/sales$placed/declare", located))
    assert call_as(url, "writer", "/v1/table/sales$placed/declare", {}).status_code == 200


def test_lookalike_spellings_are_the_same_namespace_for_access(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("writer tok-writer\n")
    with running_server("dir", {"root": str(tmp_path / "root")}, auth_mode="token",
                        auth_tokens_file=str(tokens), access={"writer": "admin@caf\u00e9"},
                        access_default="none") as url:
        decomposed = call_as(url, "writer", "/v1/namespace/cafe\u0301/create", {})
        other = call_as(url, "writer", "/v1/namespace/cafe/create", {})
    assert decomposed.status_code == 200, decomposed.text
    assert refused(other)


def test_a_bare_token_gets_the_default_access(tmp_path: Path) -> None:
    with running_server("dir", {"root": str(tmp_path)}, auth_mode="token",
                        auth_tokens="tok-bare", access_default="read") as url:
        headers = {"authorization": "Bearer tok-bare"}
        listed = httpx.get(f"{url}/v1/namespace/$/list", headers=headers)
        created = httpx.post(f"{url}/v1/namespace/n/create", json={}, headers=headers)
    assert listed.status_code == 200
    assert refused(created)
    assert not any(tmp_path.iterdir())


def test_access_settings_are_checked_at_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="'access' names identities, which need auth_mode"):
        load_settings(environ={"LANCE_ADAPTER_ACCESS": json.dumps({"etl": "write"})})
    environment = {"LANCE_ADAPTER_AUTH_MODE": "token", "LANCE_ADAPTER_AUTH_TOKENS": "t",
                   "LANCE_ADAPTER_ACCESS": json.dumps({"etl": "write@sales$eu"})}
    policy = access_policy(load_settings(environ=environment))
    assert policy is not None
    assert str(policy.grants_of("etl")) == "write@sales$eu"
    assert str(policy.grants_of("someone")) == "admin"  # the default, unless set
    for bad, message in [("owner", "must be read, write or admin"),
                         ("write@", "names no namespace"), ("read@a$$b", "")]:
        with pytest.raises(ConfigurationError, match=message):
            load_settings(environ={**environment,
                                   "LANCE_ADAPTER_ACCESS": json.dumps({"etl": bad})})
    assert access_policy(Settings(auth_mode="forward")) is None
    assert access_policy(Settings()) is None


def test_lancedb_lists_the_tables_of_a_database_its_grant_covers(
    served: tuple[str, Path],
) -> None:
    """LanceDB's remote client names its database in every call: listing one needs `read`
    there, not everywhere."""
    import lancedb

    url, _ = served
    sales = lancedb.connect("db://sales", api_key=TOKENS["sales_reader"], host_override=url,
                            region="local")
    assert "t" in list(sales.list_tables().tables)
    hr = lancedb.connect("db://hr", api_key=TOKENS["sales_reader"], host_override=url,
                         region="local")
    from lancedb.remote.errors import HttpError

    refusal = r"403 Forbidden.*has no access at namespace hr; this operation needs read"
    with pytest.raises(HttpError, match=refusal):
        hr.list_tables()


def malformed(url: str, operation: Operation, identity: str, table_id: list[str],
              by_id: bool) -> httpx.Response:
    """`operation` on `table_id` with a body no operation takes: an unknown field in JSON,
    or bytes that are no Arrow stream."""
    headers = {"authorization": f"Bearer {TOKENS[identity]}"}
    joined = "$".join(table_id)
    if operation.path is None or by_id:
        if operation.body is BodyKind.ARROW:
            return httpx.post(f"{url}/{operation.operation_id}", params={"id": joined},
                              content=b"no arrow", headers={**headers, **ARROW}, timeout=30)
        return httpx.post(f"{url}/{operation.operation_id}", timeout=30, headers=headers,
                          json={"id": table_id, "no_such_field": [1]})
    path = operation.path.replace("{id}", joined)
    path = re.sub(r"\{[a-z_]+\}", "x", path)
    if operation.body is BodyKind.ARROW:
        return httpx.request(operation.method, f"{url}{path}", content=b"no arrow",
                             headers={**headers, **ARROW}, timeout=30)
    return httpx.request(operation.method, f"{url}{path}", json={"no_such_field": [1]},
                         headers=headers, timeout=30)


@pytest.mark.parametrize("by_id", [False, True], ids=["v1-route", "operation-route"])
def test_the_grant_is_checked_before_the_request_is_judged(
    served: tuple[str, Path], by_id: bool,
) -> None:
    """A caller without the level an operation needs at a table is refused the same way
    (403, code 15) whatever the body holds and whether the table exists: a refusal tells
    nothing of the request's shape or the table's state."""
    url, _ = served
    answers = {}
    for operation_id in sorted(WRITES | ADMINS):
        operation = OPERATIONS[operation_id]
        if not operation.path and not by_id:
            continue
        for table in (["sales", "t"], ["sales", "missing"]):
            answer = malformed(url, operation, "sales_reader", table, by_id)
            answers[operation_id, table[-1]] = (answer.status_code, answer.json().get("code"))
    assert answers == dict.fromkeys(answers, (403, 15))
