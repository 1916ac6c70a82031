"""What the `dir` backend needs around pylance's native `DirectoryNamespace` (whose operations
it delegates one by one in `backends.directory.delegated`): the quoting the native listings
need, and what the native table operations ignore without a word (`natively_ignored`), so
that a request asking for it is served by the generic operation (`MetadataNamespace`'s,
pylance on the opened dataset) instead: a branch (natively every operation acts on main), a
page (natively every listing answers whole), a plan's full-text query (natively the plan of a
plain scan), a field of this server's extensions (`backends.core.extensions`), a vector query's
offset (natively taken inside its k nearest), a query's aliased columns (natively in no set
order) and a query of several vectors (natively all but the first are ignored). And the
namespace operations whose modes the native ones do not take (`create_namespace_natively`,
`drop_namespace_natively`).

Everything else is `MetadataNamespace`'s (pylance at the table location, located by the native
catalog lookup), because natively it fails, answers wrongly or reads unchecked: DescribeTable
(natively the root's manifest read, and the table opened without the check of what it
reaches, `backends.tables.reach`, on every call), ListAllTables (only the root's
tables), GetTableStats (natively without the index files' bytes), DescribeTableIndexStats
(natively without the distance), UpdateFieldMetadata (unsupported), CreateTableScalarIndex
(other index types' options ignored, a name taken refused without replace), AlterTransaction
(every action answered SUCCEEDED and none taken: code 0, as on the other backends), RenameTable
(unsupported: register the same data under the new id, then deregister the old),
CreateTableIndex (ignores num_sub_vectors), CreateTableBranch (a missing source version is
invalid input, a missing source branch an internal error), AlterTableAddColumns (computed and
virtual columns taken for SQL expressions), AlterTableAlterColumns (data_type wanted as a JSON
string), the table versions (dicts in and out, server paths as manifest paths),
AlterTableBackfillColumns and the materialized views (a Python NotImplementedError, a 500),
ListOperations and the code-0 answers; and the writes of rows and counts, which natively open
the table by listing every version it keeps (the generic ones open it through the worker's
remembered latest version, and mark inserts' and merges' commits).
"""

from __future__ import annotations

from typing import Any

from lance.namespace import DirectoryNamespace
from lance_namespace import (
    AnalyzeTableQueryPlanRequest,
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    DescribeNamespaceRequest,
    DropNamespaceRequest,
    DropNamespaceResponse,
    ExplainTableQueryPlanRequest,
    NamespaceAlreadyExistsError,
    NamespaceNotFoundError,
    UnsupportedOperationError,
)
from pydantic import BaseModel

from backends.core.extensions import extension_fields
from backends.core.modes import CreateMode, DropBehavior, DropMode, parse_mode
from backends.tables.lifecycle import caller
from backends.tables.reads import query_vectors


def quoted_for_sql(request: Any) -> Any:
    """`request` with its id's names as SQL string literals hold them (`'` doubled): the
    native listings paste the parent's names into their query's text unquoted, where a `'`
    ended the literal (the listing failed, or read a client's SQL)."""
    names = [name.replace("'", "''") for name in request.id or []]
    return request.model_copy(update={"id": names})


def natively_ignored(request: Any) -> bool:
    """Whether the native operation would ignore part of `request`."""
    if getattr(request, "branch", None) or extension_fields(request):
        return True
    if getattr(request, "limit", None) is not None or getattr(request, "page_token", None):
        return True
    query = _query_of(request)
    planned = isinstance(request, AnalyzeTableQueryPlanRequest | ExplainTableQueryPlanRequest)
    return query is not None and _query_natively_ignored(query, planned)


def _query_of(request: Any) -> Any:
    """The query `request` carries: ExplainTableQueryPlan's inner one, or its own fields
    (QueryTable, AnalyzeTableQueryPlan); None for a request that is no query."""
    inner = getattr(request, "query", None)
    if isinstance(inner, BaseModel):
        return inner
    return request if hasattr(request, "vector") else None


def _query_natively_ignored(query: Any, planned: bool) -> bool:
    """A field of the extensions, aliased columns, several vectors, a vector search's offset,
    and in a plan a full-text query (natively the plan of a plain scan)."""
    if extension_fields(query) or getattr(query.columns, "column_aliases", None):
        return True
    if planned and query.full_text_query is not None:
        return True
    vectors = query_vectors(query)
    return len(vectors) > 1 or (bool(query.offset) and bool(vectors))


def create_namespace_natively(
    pylance: DirectoryNamespace, request: CreateNamespaceRequest
) -> CreateNamespaceResponse:
    """CreateNamespace, its mode parsed once (natively some spellings are refused, and
    ExistOk and Overwrite ignored)."""
    mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
    native = request.model_copy(update={"mode": None})
    try:
        return pylance.create_namespace(native)
    except NamespaceAlreadyExistsError:
        if mode is CreateMode.CREATE:
            raise
    if mode is CreateMode.OVERWRITE:
        pylance.drop_namespace(DropNamespaceRequest(id=request.id, **caller(request)))
        return pylance.create_namespace(native)
    described = pylance.describe_namespace(
        DescribeNamespaceRequest(id=request.id, **caller(request))
    )
    return CreateNamespaceResponse(properties=described.properties)


def drop_namespace_natively(
    pylance: DirectoryNamespace, request: DropNamespaceRequest
) -> DropNamespaceResponse:
    """The native drop ignores both fields: Skip is done here, Cascade refused (code 0)."""
    skip_missing = parse_mode(request.mode, DropMode, DropMode.FAIL) is DropMode.SKIP
    behavior = parse_mode(request.behavior, DropBehavior, DropBehavior.RESTRICT, "behavior")
    if behavior is DropBehavior.CASCADE:
        raise UnsupportedOperationError(
            "DropNamespace with behavior Cascade is not supported by the DirectoryNamespace "
            "backend: it only drops namespaces Restrict"
        )
    native = request.model_copy(update={"mode": None, "behavior": None})
    try:
        return pylance.drop_namespace(native)
    except NamespaceNotFoundError:
        if not skip_missing:
            raise
        return DropNamespaceResponse()
