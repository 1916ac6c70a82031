"""What LanceDB's remote client reads differently from the Lance REST spec's answers, and the
backend calls it means where they differ from the spec's operation.

It parses DescribeTable's `schema` in Lance's own JSON schema form (`float`, `double`,
`string`, `timestamp:us`…) rather than the spec's `JsonArrowSchema` names (`float32`,
`float64`, `utf8`, `timestamp`…). The spec form carries no unit for timestamps, times and
durations: those become microseconds, Lance's default.

Two calls mean what they mean on LanceDB Cloud: `GET /v1/table/` (the spec's ListAllTables)
lists the database's tables (the root's for the root database); UpdateTable and
DeleteFromTable answer `rows_updated` / `num_deleted_rows`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from lance_namespace import (
    CountTableRowsRequest,
    DeleteFromTableRequest,
    DeleteFromTableResponse,
    LanceNamespace,
    ListTablesRequest,
    ListTablesResponse,
    MergeInsertIntoTableRequest,
    MergeInsertIntoTableResponse,
)

# Where the backend calls below hand their counts to the answer.
DELETED_ROWS_CONTEXT = "lancedb.num_deleted_rows"
SOURCE_ROWS_CONTEXT = "lancedb.num_rows"

_LANCE_TYPE_NAMES = {
    "float16": "halffloat",
    "float32": "float",
    "float64": "double",
    "utf8": "string",
    "large_utf8": "large_string",
    "date32": "date32:day",
    "date64": "date64:ms",
    "timestamp": "timestamp:us:-",  # Lance writes a naive time zone as `-`
    "time32": "time32:ms",
    "time64": "time64:us",
    "duration": "duration:us",
}


def _lance_type(spec_type: dict[str, Any]) -> dict[str, Any]:
    name = spec_type.get("type", "")
    converted: dict[str, Any] = {"type": _LANCE_TYPE_NAMES.get(name, name)}
    if name.startswith("decimal"):
        bits = name.removeprefix("decimal") or "128"
        length = spec_type.get("length") or 38
        precision, scale = divmod(length, 1000) if length >= 1000 else (length, 0)
        converted["type"] = f"decimal:{bits}:{precision}:{scale}"
        return converted
    if spec_type.get("fields") is not None:
        converted["fields"] = [lance_json_field(field) for field in spec_type["fields"]]
    if spec_type.get("length") is not None:
        converted["length"] = spec_type["length"]
    return converted


def lance_json_field(field: dict[str, Any]) -> dict[str, Any]:
    converted = {
        "name": field["name"],
        "type": _lance_type(field["type"]),
        "nullable": field.get("nullable", True),
    }
    if field.get("metadata"):
        converted["metadata"] = field["metadata"]
    return converted


def lancedb_answer(operation_id: str, payload: dict[str, Any]) -> Any:
    """The answer of `operation_id` in the form LanceDB's remote client parses."""
    if operation_id == "DescribeTable":
        return as_lancedb_describe(payload)
    if operation_id == "ListTableTags":
        return payload.get("tags") or {}
    if operation_id == "UpdateTable":
        return {**payload, "rows_updated": payload.get("updated_rows", 0)}
    if operation_id == "DeleteFromTable":
        deleted = _context_count(payload, DELETED_ROWS_CONTEXT)
        return {**payload, "num_deleted_rows": deleted}
    if operation_id == "MergeInsertIntoTable":
        return {**payload, "num_rows": _context_count(payload, SOURCE_ROWS_CONTEXT)}
    return payload


def _context_count(payload: dict[str, Any], key: str) -> int:
    """The count the backend call handed over in the answer's context, taken out of it."""
    context = dict(payload.pop("context", None) or {})
    count = int(context.pop(key, 0))
    if context:
        payload["context"] = context
    return count


def lancedb_backend_call(
    namespace: LanceNamespace, operation_id: str
) -> Callable[[Any], Any] | None:
    """The backend call a LanceDB remote request means where it differs from the spec's
    operation, or None: ListAllTables is the database's ListTables, DeleteFromTable also
    counts the rows it deleted, MergeInsertIntoTable the rows it was given."""
    if operation_id == "ListAllTables":
        return functools.partial(_root_tables, namespace)
    if operation_id == "DeleteFromTable":
        return functools.partial(_counted_delete, namespace)
    if operation_id == "MergeInsertIntoTable":
        return functools.partial(_counted_merge, namespace)
    return None


def _counted_merge(
    namespace: LanceNamespace, request: MergeInsertIntoTableRequest, data: bytes
) -> MergeInsertIntoTableResponse:
    """MergeInsertIntoTable, its answer carrying the rows of its source (LanceDB's
    `num_rows`), counted batch by batch from the stream, which is in memory already."""
    response = namespace.merge_insert_into_table(request, data)
    rows = sum(batch.num_rows for batch in pa.ipc.open_stream(data))
    response.context = {**(response.context or {}), SOURCE_ROWS_CONTEXT: str(rows)}
    return response


def _root_tables(namespace: LanceNamespace, request: ListTablesRequest) -> ListTablesResponse:
    """The tables of the database's namespace (the request's id), or of the root."""
    return namespace.list_tables(request.model_copy(update={"id": request.id or []}))


def _counted_delete(
    namespace: LanceNamespace, request: DeleteFromTableRequest
) -> DeleteFromTableResponse:
    """DeleteFromTable, its answer carrying the rows it deleted: a delete commits version v
    on top of v - 1 (even when nothing matched), so the count is the difference of theirs."""
    response = namespace.delete_from_table(request)
    version = response.version
    if version is None or version < 2:
        return response

    def rows_at(at: int) -> int:
        counted = namespace.count_table_rows(CountTableRowsRequest(
            id=request.id, version=at, identity=request.identity, context=request.context
        ))
        return counted if isinstance(counted, int) else counted.count

    deleted = rows_at(version - 1) - rows_at(version)
    response.context = {**(response.context or {}), DELETED_ROWS_CONTEXT: str(deleted)}
    return response


def as_lancedb_describe(payload: dict[str, Any]) -> dict[str, Any]:
    """A DescribeTable answer with its schema in the form LanceDB's remote client parses."""
    schema = payload.get("schema")
    if schema:
        converted: dict[str, Any] = {
            "fields": [lance_json_field(field) for field in schema.get("fields", [])]
        }
        if schema.get("metadata"):
            converted["metadata"] = schema["metadata"]
        payload["schema"] = converted
    return payload
