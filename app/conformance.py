"""`lance-adapter check URL`: the conformance kit, the protocol's operations run in turn
against any Lance REST namespace server over its /v1/ routes, each checked by what it
answers, printed as a table (docs/cli.md).

The kit makes one namespace of its own (under `--under` when the root cannot hold one,
e.g. a Unity catalog), a table in it, and drops both at the end. A step that fails does not
stop the others; a later step whose table could not be made fails with that reason too.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pyarrow as pa

from app.protocol import ARROW_STREAM

DELIMITER = "$"


class StepFailed(Exception):
    """What a step found wrong, in one sentence."""


@dataclass
class Outcome:
    operation: str
    passed: bool
    note: str = ""


def arrow_stream(ids: list[int], items: list[str]) -> bytes:
    rows = pa.table({"id": pa.array(ids, pa.int64()), "item": pa.array(items, pa.string())})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows)
    return sink.getvalue().to_pybytes()


@dataclass
class Kit:
    """One run: the client, the names it made, and what each step answered."""

    client: httpx.Client
    namespace: list[str]
    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def ns(self) -> str:
        return DELIMITER.join(self.namespace)

    @property
    def table(self) -> str:
        return DELIMITER.join([*self.namespace, "conformance"])

    def call(self, method: str, path: str, body: Any = None, **options: Any) -> httpx.Response:
        if isinstance(body, bytes):
            options["content"] = body
            options["headers"] = {"content-type": ARROW_STREAM}
        elif body is not None:
            options["json"] = body
        return self.client.request(method, path, **options)

    def ok(self, method: str, path: str, body: Any = None, **options: Any) -> httpx.Response:
        """The answer when it is 2xx, else StepFailed naming the status and error code."""
        answer = self.call(method, path, body, **options)
        if answer.is_success:
            return answer
        raise StepFailed(describe_error(answer))

    def count(self) -> int:
        return int(self.ok("POST", f"/v1/table/{self.table}/count_rows", {}).json())

    def run(self, operation: str, step: Callable[[Kit], None]) -> None:
        try:
            step(self)
        except StepFailed as failure:
            self.outcomes.append(Outcome(operation, False, str(failure)))
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as error:
            self.outcomes.append(Outcome(operation, False, f"{type(error).__name__}: {error}"))
        else:
            self.outcomes.append(Outcome(operation, True))


def describe_error(answer: httpx.Response) -> str:
    try:
        body = answer.json()
    except ValueError:
        return f"HTTP {answer.status_code}"
    if isinstance(body, dict) and "code" in body:
        message = str(body.get("error", ""))[:160]
        gap = " (not supported)" if body["code"] == 0 else ""
        return f"HTTP {answer.status_code}, code {body['code']}{gap}: {message}"
    return f"HTTP {answer.status_code}"


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise StepFailed(message)


# -- the steps, in the order they run --------------------------------------------------------


def create_namespace(kit: Kit) -> None:
    kit.ok("POST", f"/v1/namespace/{kit.ns}/create", {"properties": {"owner": "conformance"}})


def list_namespaces(kit: Kit) -> None:
    parent = DELIMITER.join(kit.namespace[:-1]) or DELIMITER
    names = kit.ok("GET", f"/v1/namespace/{parent}/list").json()["namespaces"]
    expect(kit.namespace[-1] in names, f"{kit.namespace[-1]!r} is not listed: {names}")


def describe_namespace(kit: Kit) -> None:
    kit.ok("POST", f"/v1/namespace/{kit.ns}/describe", {})


def namespace_exists(kit: Kit) -> None:
    kit.ok("POST", f"/v1/namespace/{kit.ns}/exists", {})
    sibling = DELIMITER.join([*kit.namespace[:-1], f"{kit.namespace[-1]}_missing"])
    missing = kit.call("POST", f"/v1/namespace/{sibling}/exists", {})
    expect(missing.status_code == 404, f"a missing namespace answered {describe_error(missing)}")


def create_table(kit: Kit) -> None:
    kit.ok("POST", f"/v1/table/{kit.table}/create", arrow_stream([1, 2, 3], ["a", "b", "c"]))
    expect(kit.count() == 3, "the new table does not count its 3 rows")


def describe_table(kit: Kit) -> None:
    answer = kit.ok("POST", f"/v1/table/{kit.table}/describe", {}).json()
    expect(bool(answer.get("location")), f"no location in {answer}")


def table_exists(kit: Kit) -> None:
    kit.ok("POST", f"/v1/table/{kit.table}/exists", {})


def list_tables(kit: Kit) -> None:
    names = kit.ok("GET", f"/v1/namespace/{kit.ns}/table/list").json()["tables"]
    expect(names == ["conformance"], f"the namespace lists {names}")


def insert_into_table(kit: Kit) -> None:
    kit.ok("POST", f"/v1/table/{kit.table}/insert", arrow_stream([4, 5], ["d", "e"]))
    expect(kit.count() == 5, "the table does not count 5 rows after inserting 2")


def query_table(kit: Kit) -> None:
    body = {"k": 10, "vector": {}, "filter": "id > 3", "columns": {"column_names": ["id"]}}
    answer = kit.ok("POST", f"/v1/table/{kit.table}/query", body)
    rows = pa.ipc.open_file(io.BytesIO(answer.content)).read_all()
    expect(sorted(rows["id"].to_pylist()) == [4, 5], f"the query answered {rows.to_pydict()}")


def update_table(kit: Kit) -> None:
    body = {"updates": [["item", "'z'"]], "predicate": "id = 1"}
    kit.ok("POST", f"/v1/table/{kit.table}/update", body)
    counted = kit.ok("POST", f"/v1/table/{kit.table}/count_rows", {"predicate": "item = 'z'"})
    expect(int(counted.json()) == 1, "the updated row is not found")


def delete_from_table(kit: Kit) -> None:
    kit.ok("POST", f"/v1/table/{kit.table}/delete", {"predicate": "id = 2"})
    expect(kit.count() == 4, "the table does not count 4 rows after deleting 1")


def merge_insert_into_table(kit: Kit) -> None:
    params = {"on": "id", "when_matched_update_all": "true", "when_not_matched_insert_all": "true"}
    kit.ok("POST", f"/v1/table/{kit.table}/merge_insert", arrow_stream([5, 6], ["y", "f"]),
           params=params)
    expect(kit.count() == 5, "the table does not count 5 rows after an upsert of 1 new row")


def create_scalar_index(kit: Kit) -> None:
    body = {"column": "id", "index_type": "BTREE"}
    kit.ok("POST", f"/v1/table/{kit.table}/create_scalar_index", body)


def list_table_indices(kit: Kit) -> None:
    indexes = kit.ok("POST", f"/v1/table/{kit.table}/index/list", {}).json()["indexes"]
    expect(any("id" in index.get("columns", []) for index in indexes), f"indexes: {indexes}")


def list_table_versions(kit: Kit) -> None:
    versions = kit.ok("POST", f"/v1/table/{kit.table}/version/list", {}).json()["versions"]
    expect(len(versions) >= 5, f"{len(versions)} versions after 5 writes")


def table_tags(kit: Kit) -> None:
    kit.ok("POST", f"/v1/table/{kit.table}/tags/create", {"tag": "first", "version": 1})
    tags = kit.ok("POST", f"/v1/table/{kit.table}/tags/list", {}).json()["tags"]
    expect("first" in tags, f"the tag is not listed: {tags}")


def alter_table_add_columns(kit: Kit) -> None:
    body = {"new_columns": [{"name": "double_id", "expression": "id * 2"}]}
    kit.ok("POST", f"/v1/table/{kit.table}/add_columns", body)
    counted = kit.ok("POST", f"/v1/table/{kit.table}/count_rows", {"predicate": "double_id = 2"})
    expect(int(counted.json()) == 1, "the new column does not hold id * 2")


def describe_table_version(kit: Kit) -> None:
    answer = kit.ok("POST", f"/v1/table/{kit.table}/version/describe", {"version": 1}).json()
    expect(answer.get("version", {}).get("version") == 1, f"version 1 answered {answer}")


def restore_table(kit: Kit) -> None:
    kit.ok("POST", f"/v1/table/{kit.table}/restore", {"version": 1})
    expect(kit.count() == 3, "the table restored to version 1 does not count its 3 rows")


def list_all_tables(kit: Kit) -> None:
    names = kit.ok("GET", "/v1/table", params={"limit": 1000}).json()["tables"]
    expect(kit.table in names, f"{kit.table!r} is not among all tables")


def operation_id_routes(kit: Kit) -> None:
    """The spec's other route style: POST /<OperationId> with the id in the body."""
    answer = kit.ok("POST", "/DescribeTable", {"id": [*kit.namespace, "conformance"]}).json()
    expect(bool(answer.get("location")), f"no location in {answer}")


def declare_table(kit: Kit) -> None:
    declared = f"{kit.ns}{DELIMITER}declared"
    answer = kit.ok("POST", f"/v1/table/{declared}/declare", {}).json()
    expect(bool(answer.get("location")), f"no location in {answer}")
    kit.ok("POST", f"/v1/table/{declared}/deregister", {})


def rename_table(kit: Kit) -> None:
    """Renamed in its namespace, found only under the new name with its rows, and back."""
    renamed = f"{kit.ns}{DELIMITER}conformance_renamed"
    kit.ok("POST", f"/v1/table/{kit.table}/rename", {"new_table_name": "conformance_renamed"})
    gone = kit.call("POST", f"/v1/table/{kit.table}/exists", {})
    expect(gone.status_code == 404, f"the old name still exists ({gone.status_code})")
    counted = kit.ok("POST", f"/v1/table/{renamed}/count_rows", {}).json()
    expect(int(counted) == 3, f"the renamed table counts {counted} rows, not 3")
    kit.ok("POST", f"/v1/table/{renamed}/rename", {"new_table_name": "conformance"})
    expect(kit.count() == 3, "the table renamed back does not count its 3 rows")


def error_codes(kit: Kit) -> None:
    missing = kit.call("POST", f"/v1/table/{kit.ns}{DELIMITER}missing/describe", {})
    expect(missing.status_code == 404 and missing.json().get("code") == 4,
           f"DescribeTable of a missing table answered {describe_error(missing)}, not 404 / 4")
    again = kit.call("POST", f"/v1/namespace/{kit.ns}/create", {})
    expect(again.status_code == 409 and again.json().get("code") == 2,
           f"CreateNamespace of an existing one answered {describe_error(again)}, not 409 / 2")


def drop_table(kit: Kit) -> None:
    kit.ok("POST", f"/v1/table/{kit.table}/drop", {})
    gone = kit.call("POST", f"/v1/table/{kit.table}/exists", {})
    expect(gone.status_code == 404, f"the dropped table still exists ({gone.status_code})")


def drop_namespace(kit: Kit) -> None:
    kit.ok("POST", f"/v1/namespace/{kit.ns}/drop", {})


STEPS: tuple[tuple[str, Callable[[Kit], None]], ...] = (
    ("CreateNamespace", create_namespace),
    ("ListNamespaces", list_namespaces),
    ("DescribeNamespace", describe_namespace),
    ("NamespaceExists", namespace_exists),
    ("CreateTable", create_table),
    ("DescribeTable", describe_table),
    ("TableExists", table_exists),
    ("ListTables", list_tables),
    ("InsertIntoTable", insert_into_table),
    ("QueryTable", query_table),
    ("UpdateTable", update_table),
    ("DeleteFromTable", delete_from_table),
    ("MergeInsertIntoTable", merge_insert_into_table),
    ("CreateTableScalarIndex", create_scalar_index),
    ("ListTableIndices", list_table_indices),
    ("ListTableVersions", list_table_versions),
    ("CreateTableTag, ListTableTags", table_tags),
    ("AlterTableAddColumns", alter_table_add_columns),
    ("DescribeTableVersion", describe_table_version),
    ("RestoreTable", restore_table),
    ("ListAllTables", list_all_tables),
    ("POST /<OperationId> routes", operation_id_routes),
    ("DeclareTable, DeregisterTable", declare_table),
    ("RenameTable", rename_table),
    ("error codes 4 and 2", error_codes),
    ("DropTable", drop_table),
    ("DropNamespace", drop_namespace),
)


def check(url: str, under: list[str] | None = None) -> list[Outcome]:
    """Every step against the server at `url`, in a namespace of its own below `under`."""
    namespace = [*(under or []), f"conformance_{uuid.uuid4().hex[:8]}"]
    with httpx.Client(base_url=url.rstrip("/"), timeout=60) as client:
        kit = Kit(client, namespace)
        for operation, step in STEPS:
            kit.run(operation, step)
    return kit.outcomes


def report(outcomes: list[Outcome]) -> str:
    width = max(len(outcome.operation) for outcome in outcomes)
    lines = [f"{'operation'.ljust(width)}  result", f"{'-' * width}  ------"]
    for outcome in outcomes:
        result = "pass" if outcome.passed else f"FAIL  {outcome.note}"
        lines.append(f"{outcome.operation.ljust(width)}  {result}")
    failed = sum(not outcome.passed for outcome in outcomes)
    lines.append(f"{len(outcomes) - failed} of {len(outcomes)} passed")
    return "\n".join(lines)


def run_check(url: str, under: str = "") -> int:
    """The `check` command: the table on stdout; exit 1 when any step failed."""
    outcomes = check(url, [part for part in under.split(DELIMITER) if part])
    print(report(outcomes))
    return 0 if all(outcome.passed for outcome in outcomes) else 1
