"""What LanceDB's remote client reads differently from the Lance REST spec's answers, and the
backend calls it means where they differ from the spec's operation.

It parses DescribeTable's `schema` in Lance's own JSON schema form (`app.lancedb.schemas`).

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

from app.lancedb.schemas import (
    ARROW_SCHEMA_CONTEXT,
    as_lancedb_describe,
    described_with_units,
    payload_context,
)

# Where the backend calls below hand their counts to the answer.
DELETED_ROWS_CONTEXT = "lancedb.num_deleted_rows"
SOURCE_ROWS_CONTEXT = "lancedb.num_rows"

def lancedb_answer(operation_id: str, payload: dict[str, Any]) -> Any:
    """The answer of `operation_id` in the form LanceDB's remote client parses."""
    if operation_id == "DescribeTable":
        return as_lancedb_describe(payload, payload_context(payload, ARROW_SCHEMA_CONTEXT))
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
    return int(payload_context(payload, key) or 0)


def lancedb_backend_call(
    namespace: LanceNamespace, operation_id: str
) -> Callable[[Any], Any] | None:
    """The backend call a LanceDB remote request means where it differs from the spec's
    operation, or None: ListAllTables is the database's ListTables, DescribeTable also reads
    the units of its times, DeleteFromTable counts the rows it deleted, MergeInsertIntoTable
    the rows it was given."""
    if operation_id == "ListAllTables":
        return functools.partial(_root_tables, namespace)
    if operation_id == "DescribeTable":
        return functools.partial(described_with_units, namespace)
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
