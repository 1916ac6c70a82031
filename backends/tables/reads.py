"""Reading: CountTableRows, QueryTable, the query plans and GetTableStats."""

from __future__ import annotations

import statistics
from typing import Any

import pyarrow as pa
from lance import LanceDataset
from lance_namespace import (
    AnalyzeTableQueryPlanRequest,
    CountTableRowsRequest,
    CountTableRowsResponse,
    GetTableStatsResponse,
    InvalidInputError,
    QueryTableRequest,
    QueryTableResponse,
    TableColumnNotFoundError,
)
from lance_namespace_urllib3_client.models import FragmentStats, FragmentSummary

from backends.tables.access import arrow_file
from backends.tables.errors import lance_errors

# The spec's "small fragment" (GetTableStats): fewer rows than this.
SMALL_FRAGMENT_ROWS = 100_000
QueryLike = QueryTableRequest | AnalyzeTableQueryPlanRequest


def count_rows(dataset: LanceDataset, request: CountTableRowsRequest) -> CountTableRowsResponse:
    with lance_errors(dataset.uri):
        return CountTableRowsResponse(count=dataset.count_rows(filter=request.predicate or None))


def require_vector_column(schema: pa.Schema, name: str) -> None:
    """TableColumnNotFoundError unless the table has the column `name`."""
    if schema.get_field_index(name) < 0:
        raise TableColumnNotFoundError(f"vector_column {name!r} does not exist in the table")


def _vector_column(dataset: LanceDataset, requested: str | None) -> str:
    if requested:
        require_vector_column(dataset.schema, requested)
        return requested
    for column in dataset.schema:
        if pa.types.is_fixed_size_list(column.type) and pa.types.is_floating(
            column.type.value_type
        ):
            return column.name
    raise InvalidInputError("the table has no vector column; name one in vector_column")


def _nearest(dataset: LanceDataset, query: QueryLike, vector: list[float]) -> dict[str, Any]:
    nearest: dict[str, Any] = {
        "column": _vector_column(dataset, query.vector_column),
        "q": vector,
        "k": query.k,
        "use_index": not query.bypass_vector_index,
    }
    optional = {
        "metric": query.distance_type,
        "nprobes": query.nprobes,
        "minimum_nprobes": query.minimum_nprobes,
        "maximum_nprobes": query.maximum_nprobes,
        "refine_factor": query.refine_factor,
        "ef": query.ef,
    }
    nearest.update({key: value for key, value in optional.items() if value is not None})
    return nearest


def _columns(query: QueryLike) -> list[str] | dict[str, str] | None:
    if query.columns is None:
        return None
    if query.columns.column_aliases:
        return dict(query.columns.column_aliases)
    return query.columns.column_names


def _full_text(query: QueryLike) -> dict[str, Any] | None:
    search = query.full_text_query
    if search is None:
        return None
    if search.string_query is None:
        raise InvalidInputError("only string_query full-text searches are supported")
    text: dict[str, Any] = {"query": search.string_query.query}
    if search.string_query.columns:
        text["columns"] = list(search.string_query.columns)
    return text


def query_vectors(query: QueryLike) -> list[list[float]]:
    """The query's vectors (none: no vector search); an empty one among several is refused."""
    vector = query.vector
    if vector is None:
        return []
    if vector.single_vector:
        return [vector.single_vector]
    vectors = list(vector.multi_vector or [])
    if not all(vectors):
        raise InvalidInputError("every vector of multi_vector must hold at least one number")
    return vectors


def scanner_arguments(
    dataset: LanceDataset, query: QueryLike, vector: list[float] | None
) -> dict[str, Any]:
    """pylance scanner arguments for one query vector (or none) of a QueryTable request."""
    arguments: dict[str, Any] = {
        "columns": _columns(query),
        "filter": query.filter,
        "offset": query.offset,
        "with_row_id": bool(query.with_row_id),
        "prefilter": bool(query.prefilter),
        "fast_search": query.fast_search,
        "full_text_query": _full_text(query),
    }
    if vector is None:
        if query.vector_column:
            require_vector_column(dataset.schema, query.vector_column)
        arguments["limit"] = query.k or None
    else:
        arguments["nearest"] = _nearest(dataset, query, vector)
    return {key: value for key, value in arguments.items() if value is not None}


def _with_query_index(table: pa.Table, index: int) -> pa.Table:
    return table.append_column("query_index", pa.array([index] * table.num_rows, pa.int32()))


def query(dataset: LanceDataset, request: QueryTableRequest) -> QueryTableResponse:
    vectors = query_vectors(request)
    with lance_errors(dataset.uri):
        if len(vectors) <= 1:
            vector = vectors[0] if vectors else None
            result = dataset.to_table(**scanner_arguments(dataset, request, vector))
        else:
            result = pa.concat_tables(
                _with_query_index(
                    dataset.to_table(**scanner_arguments(dataset, request, vector)), index
                )
                for index, vector in enumerate(vectors)
            )
    return QueryTableResponse(data=arrow_file(result))


def query_plan(dataset: LanceDataset, query: QueryLike, analyze: bool, verbose: bool) -> str:
    """The physical plan of the query (of its first vector), executed first when `analyze`."""
    vectors = query_vectors(query)
    with lance_errors(dataset.uri):
        scanner = dataset.scanner(
            **scanner_arguments(dataset, query, vectors[0] if vectors else None)
        )
        return scanner.analyze_plan() if analyze else scanner.explain_plan(verbose)


def _fragment_summary(lengths: list[int]) -> FragmentSummary:
    if not lengths:
        return FragmentSummary(min=0, max=0, mean=0, p25=0, p50=0, p75=0, p99=0)
    ordered = sorted(lengths)

    def percentile(share: float) -> int:
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))]

    return FragmentSummary(
        min=ordered[0],
        max=ordered[-1],
        mean=int(statistics.mean(ordered)),
        p25=percentile(0.25),
        p50=percentile(0.5),
        p75=percentile(0.75),
        p99=percentile(0.99),
    )


def table_stats(dataset: LanceDataset) -> GetTableStatsResponse:
    with lance_errors(dataset.uri):
        lengths = [fragment.count_rows() for fragment in dataset.get_fragments()]
        data_stats = dataset.stats.data_stats()
        num_indices = len(dataset.describe_indices())
    total_bytes = sum(column.bytes_on_disk for column in data_stats.fields)
    return GetTableStatsResponse(
        total_bytes=total_bytes,
        num_rows=sum(lengths),
        num_indices=num_indices,
        fragment_stats=FragmentStats(
            num_fragments=len(lengths),
            num_small_fragments=sum(1 for length in lengths if length < SMALL_FRAGMENT_ROWS),
            lengths=_fragment_summary(lengths),
        ),
    )
