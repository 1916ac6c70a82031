"""Reading: CountTableRows, QueryTable (vector, full-text and plain), the query plans and
GetTableStats."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from lance import LanceDataset
from lance.dataset import ColumnOrdering
from lance.query import FullTextQuery
from lance_namespace import (
    AnalyzeTableQueryPlanRequest,
    CountTableRowsRequest,
    CountTableRowsResponse,
    GetTableStatsResponse,
    InvalidInputError,
    QueryTableRequest,
    TableColumnNotFoundError,
)
from lance_namespace_urllib3_client.models import FragmentStats, FragmentSummary

from backends.core.arrow_answers import ArrowFileAnswer
from backends.tables.errors import lance_errors
from backends.tables.full_text import lance_fts_query

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


def is_multivector(kind: pa.DataType) -> bool:
    """Whether a column of type `kind` holds a list of vectors a row (a multivector)."""
    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


def _vector_dimension(kind: pa.DataType) -> int | None:
    """The dimension of a vector column of type `kind` (a vector of floats or bytes, or a
    list of them a row); None when it is no vector column."""
    if is_multivector(kind):
        return _vector_dimension(kind.value_type)
    if pa.types.is_fixed_size_list(kind) and (
            pa.types.is_floating(kind.value_type) or pa.types.is_uint8(kind.value_type)):
        return kind.list_size
    return None


def _quoted(path: list[str]) -> str:
    """A nested column's path as LanceDB writes it: a segment that is not a plain name in
    backquotes (a backquote in it doubled)."""
    return ".".join(segment if segment.isidentifier() else f"`{segment.replace('`', '``')}`"
                    for segment in path)


def _vector_columns(
    column: pa.Field, path: list[str], dimension: int | None
) -> list[tuple[str, pa.DataType]]:
    """The vector columns at `column` and inside it (a struct's fields) of `dimension` (any
    when None): their paths and types."""
    here = [*path, column.name]
    found = _vector_dimension(column.type)
    if found is not None:
        return [(_quoted(here), column.type)] if dimension in (None, found) else []
    if pa.types.is_struct(column.type):
        return [found for index in range(column.type.num_fields)
                for found in _vector_columns(column.type.field(index), here, dimension)]
    return []


def _vector_columns_of(schema: pa.Schema, dimension: int | None) -> dict[str, pa.DataType]:
    return dict(found for column in schema for found in _vector_columns(column, [], dimension))


def vector_column(schema: pa.Schema, query: QueryLike) -> str:
    """The column `query`'s vector search searches: the one it names, else as embedded LanceDB
    picks it: the table's only vector column of the query vector's dimension (LanceDB's
    remote client leaves the choice to the server). Where no column or several qualify, or
    a query vector's dimension is not the column's, embedded LanceDB's refusal, in its
    words."""
    vectors = query_vectors(query)
    if query.vector_column:
        require_vector_column(schema, query.vector_column)
        column = query.vector_column
    else:
        column = _inferred_vector_column(schema, len(vectors[0]) if vectors else None)
    kinds = _vector_columns_of(schema, None)
    dimension = _vector_dimension(kinds[column]) if column in kinds else None
    for vector in vectors:
        if dimension is not None and len(vector) != dimension:
            raise InvalidInputError(f"query dim({len(vector)}) doesn't match the column "
                                    f"{column} vector dim({dimension})")
    return column


def _inferred_vector_column(schema: pa.Schema, dimension: int | None) -> str:
    candidates = list(_vector_columns_of(schema, dimension))
    if len(candidates) > 1:
        raise InvalidInputError(
            "Schema has more than one vector column. Please specify the vector column name "
            f"for vector search. Candidates: {candidates}")
    if not candidates:
        raise InvalidInputError(
            "There is no vector column in the data. Please specify the vector column name "
            "for vector search")
    return candidates[0]


def _nearest(dataset: LanceDataset, query: QueryLike, vector: list[float]) -> dict[str, Any]:
    nearest: dict[str, Any] = {
        "column": vector_column(dataset.schema, query),
        "q": vector,
        # The k nearest after the first `offset` of them: the scanner's offset skips rows of
        # its k, so it is given k + offset.
        "k": query.k + (query.offset or 0),
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
    if query.lower_bound is not None or query.upper_bound is not None:
        nearest["distance_range"] = (query.lower_bound, query.upper_bound)
    return nearest


def _columns(query: QueryLike) -> list[str] | dict[str, str] | None:
    if query.columns is None:
        return None
    if query.columns.column_aliases:
        return dict(query.columns.column_aliases)
    return query.columns.column_names


def _with_score(
    columns: list[str] | dict[str, str] | None, score: str | None
) -> list[str] | dict[str, str] | None:
    """The requested columns with the search's score after them, unless named already: the
    answer Lance gives when it adds the score itself."""
    if columns is None or score is None:
        return columns
    if isinstance(columns, dict):
        return columns if score in columns else {**columns, score: score}
    return columns if score in columns else [*columns, score]


def full_text_columns(dataset: LanceDataset) -> list[str]:
    """The columns of the table's full-text (inverted) indexes."""
    return sorted({
        name for index in dataset.describe_indices()
        if index.type_url.endswith("InvertedIndexDetails") for name in index.field_names
    })


def _full_text(
    dataset: LanceDataset, query: QueryLike
) -> dict[str, Any] | FullTextQuery | None:
    search = query.full_text_query
    if search is None:
        return None
    if (search.string_query is None) == (search.structured_query is None):
        raise InvalidInputError(
            "full_text_query needs exactly one of string_query and structured_query"
        )
    if search.structured_query is not None:
        return lance_fts_query(search.structured_query.query, "full_text_query.structured_query",
                               lambda: full_text_columns(dataset))
    text: dict[str, Any] = {"query": search.string_query.query}
    if search.string_query.columns:
        text["columns"] = list(search.string_query.columns)
    return text


def _order(query: QueryLike) -> list[ColumnOrdering] | None:
    keys = getattr(query, "order_by", None)
    if not keys:
        return None
    return [ColumnOrdering(key.column_name, key.ascending, key.nulls_first) for key in keys]


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
    full_text, columns = _full_text(dataset, query), _columns(query)
    # The column a search's rows are scored in: a vector search's distance, a full-text
    # search's score.
    score = "_distance" if vector is not None else "_score" if full_text is not None else None
    arguments: dict[str, Any] = {
        "columns": _with_score(columns, score),
        "filter": query.filter,
        "offset": query.offset,
        "with_row_id": bool(query.with_row_id),
        "prefilter": bool(query.prefilter),
        "fast_search": query.fast_search,
        "full_text_query": full_text,
        "order_by": _order(query),
        # The score is named in the columns (as Lance would add it), so Lance need not add it
        # itself, which it does with a deprecation warning logged on every search.
        "disable_scoring_autoprojection": (score is not None and columns is not None) or None,
    }
    if vector is None:
        if query.vector_column:
            require_vector_column(dataset.schema, query.vector_column)
        arguments["limit"] = query.k or None
    else:
        arguments["nearest"] = _nearest(dataset, query, vector)
    return {key: value for key, value in arguments.items() if value is not None}


# Which query vector a row answers, first, as LanceDB answers several vectors.
QUERY_INDEX = pa.field("query_index", pa.int32(), nullable=False)


def _with_query_index(table: pa.Table, index: int) -> pa.Table:
    return table.add_column(0, QUERY_INDEX, pa.array([index] * table.num_rows, pa.int32()))


def searches(dataset: LanceDataset, query: QueryLike) -> list[Any]:
    """The vector searches of a query, in order: none; its one vector; its vectors at once,
    on a multivector column (a list of vectors a row, searched by all of them together); or
    each of its several vectors apart (answered together, told apart by `query_index`)."""
    vectors = query_vectors(query)
    if len(vectors) <= 1:
        return vectors
    column = vector_column(dataset.schema, query)
    kinds = _vector_columns_of(dataset.schema, None)  # a nested column's type by its path
    kind = kinds[column] if column in kinds else dataset.schema.field(column).type
    if is_multivector(kind):
        return [vectors]
    return vectors


# How far Lance's scanner reads ahead of an answer being sent: at its defaults a slow client
# lets it hold most of a large scan (measured: +323 MiB for a 550 MiB scan of 40 fragments);
# at these, +109 MiB whatever the scan's size, and no slower.
STREAMED_READAHEAD = {"fragment_readahead": 2, "batch_readahead": 4}


# A query answering at most this many rows (its `k`) is read whole: Lance hands them over in
# one batch either way, and reading them as a stream cost a k=10 search about 0.07 ms more
# (the reader's batches handed across threads one by one).
WHOLE_ANSWER_ROWS = 1024


def query(dataset: LanceDataset, request: QueryTableRequest) -> ArrowFileAnswer:
    """The query's rows as Lance's scanner reads them (a single search or scan: streamed,
    unless it asks for at most `WHOLE_ANSWER_ROWS`), or several searches' rows together,
    told apart by `query_index` (k rows each)."""
    with lance_errors(dataset.uri):
        vectors = searches(dataset, request)
        if len(vectors) <= 1:
            arguments = scanner_arguments(dataset, request, vectors[0] if vectors else None)
            if request.k and request.k <= WHOLE_ANSWER_ROWS:
                return ArrowFileAnswer.of_table(dataset.to_table(**arguments))
            scanner = dataset.scanner(**arguments, **STREAMED_READAHEAD)
            return ArrowFileAnswer.started(scanner.to_reader())
        return ArrowFileAnswer.of_table(pa.concat_tables(
            _with_query_index(
                dataset.to_table(**scanner_arguments(dataset, request, vector)), index
            )
            for index, vector in enumerate(vectors)
        ))


def query_plan(dataset: LanceDataset, query: QueryLike, analyze: bool, verbose: bool) -> str:
    """The physical plan of the query, executed first when `analyze`; of a query of several
    searches, each one's, numbered as LanceDB's client numbers them."""
    with lance_errors(dataset.uri):
        vectors = searches(dataset, query) or [None]
        plans = []
        for vector in vectors:
            scanner = dataset.scanner(**scanner_arguments(dataset, query, vector))
            plans.append(scanner.analyze_plan() if analyze else scanner.explain_plan(verbose))
    if len(plans) == 1:
        return plans[0]
    return "\n\n".join(f"--- Plan #{number} ---\n{plan}" for number, plan in enumerate(plans, 1))


def _fragment_summary(lengths: list[int]) -> FragmentSummary:
    """The lengths' summary as LanceDB computes it: the percentile p is the length at index
    len * p // 100 of the sorted lengths, the mean an integer division."""
    if not lengths:
        return FragmentSummary(min=0, max=0, mean=0, p25=0, p50=0, p75=0, p99=0)
    ordered = sorted(lengths)
    count = len(ordered)

    def percentile(share: int) -> int:
        return ordered[count * share // 100]

    return FragmentSummary(
        min=ordered[0], max=ordered[-1], mean=sum(ordered) // count,
        p25=percentile(25), p50=percentile(50), p75=percentile(75), p99=percentile(99),
    )


def _stored_bytes(fragment: Any) -> int:
    """The bytes of a fragment's data files and overlays, as its manifest entry records them."""
    files = [*fragment.files, *(overlay.data_file for overlay in fragment.overlays)]
    return sum(file.file_size_bytes or 0 for file in files)


def table_stats(dataset: LanceDataset) -> GetTableStatsResponse:
    """GetTableStats as LanceDB computes its table statistics: the bytes of the data files,
    overlays and indexes, the rows (deleted ones not counted), and the fragments' physical
    lengths (deleted rows counted)."""
    with lance_errors(dataset.uri):
        fragments = [fragment.metadata for fragment in dataset.get_fragments()]
        indices = dataset.describe_indices()
        num_rows = dataset.count_rows()
    lengths = [fragment.physical_rows for fragment in fragments]
    total_bytes = sum(_stored_bytes(fragment) for fragment in fragments)
    total_bytes += sum(index.total_size_bytes or 0 for index in indices)
    return GetTableStatsResponse(
        total_bytes=total_bytes,
        num_rows=num_rows,
        num_indices=len(indices),
        fragment_stats=FragmentStats(
            num_fragments=len(lengths),
            num_small_fragments=sum(1 for length in lengths if length < SMALL_FRAGMENT_ROWS),
            lengths=_fragment_summary(lengths),
        ),
    )
