"""Indexes: CreateTableIndex (vector and scalar), CreateTableScalarIndex, ListTableIndices,
DescribeTableIndexStats and DropTableIndex."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from lance import LanceDataset
from lance_namespace import (
    CreateTableIndexRequest,
    DescribeTableIndexStatsResponse,
    DropTableIndexRequest,
    InvalidInputError,
    ListTableIndicesRequest,
    ListTableIndicesResponse,
    TableIndexNotFoundError,
)
from lance_namespace_urllib3_client.models import IndexContent

from backends.core.paging import paginate
from backends.tables.errors import lance_errors
from backends.tables.reads import is_multivector

VECTOR_INDEX_TYPES = frozenset(
    {"IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_RQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ"}
)
# The vector index types that quantise with PQ (num_sub_vectors).
PQ_INDEX_TYPES = frozenset({"IVF_PQ", "IVF_HNSW_PQ"})
# The spec's names of scalar index types, as pylance spells them.
SCALAR_INDEX_TYPES = {
    "BTREE": "BTREE",
    "BITMAP": "BITMAP",
    "LABEL_LIST": "LABEL_LIST",
    "FTS": "INVERTED",
    "INVERTED": "INVERTED",
    "NGRAM": "NGRAM",
    "ZONEMAP": "ZONEMAP",
    "BLOOMFILTER": "BLOOMFILTER",
}
_VECTOR_PARAMETERS = {
    "num_partitions": "num_partitions",
    "num_sub_vectors": "num_sub_vectors",
    "num_bits": "num_bits",
    "sample_rate": "sample_rate",
    "max_iterations": "max_iters",
    "target_partition_size": "target_partition_size",
    "m": "m",
    "ef_construction": "ef_construction",
}
_TEXT_PARAMETERS = (
    "with_position",
    "base_tokenizer",
    "language",
    "max_token_length",
    "lower_case",
    "stem",
    "remove_stop_words",
    "ascii_folding",
    # Lance's own, which the spec lacks (`backends.core.extensions.CreateTableIndexRequest`).
    "min_ngram_length",
    "max_ngram_length",
    "prefix_only",
    "custom_stop_words",
    "block_size",
    "index_operators",
    "preserve_original",
    "split_identifiers",
    "split_on_numerics",
    "lance_tokenizer",
)
# The full-text options no other index type takes.
_TEXT_ONLY = frozenset(_TEXT_PARAMETERS)


def _normalised_type(index_type: str | None) -> str:
    return (index_type or "").strip().upper().replace("-", "_")


def _given(request: Any, names: dict[str, str] | tuple[str, ...]) -> dict[str, Any]:
    pairs = names.items() if isinstance(names, dict) else ((name, name) for name in names)
    # An official request model lacks the extension's fields: those are not given.
    return {
        argument: getattr(request, field, None)
        for field, argument in pairs
        if getattr(request, field, None) is not None
    }


def create_index(
    dataset: LanceDataset, request: CreateTableIndexRequest, scalar_only: bool
) -> None:
    """Build the index `request.index_type` on `request.column` (a scalar type when asked)."""
    index_type = _normalised_type(request.index_type)
    if not request.column:
        raise InvalidInputError("an index needs the column it indexes")
    _refuse_foreign_options(request, SCALAR_INDEX_TYPES.get(index_type) or index_type)
    # Lance's default for a vector index is to replace one of the same name, for a scalar
    # index not to; the spec's (and LanceDB's) is to replace unless told not to.
    replace = getattr(request, "replace", None) is not False
    with lance_errors(dataset.uri):
        if index_type in SCALAR_INDEX_TYPES:
            dataset.create_scalar_index(
                request.column,
                SCALAR_INDEX_TYPES[index_type],
                name=request.name,
                replace=replace,
                **_given(request, _TEXT_PARAMETERS),
            )
        elif index_type in VECTOR_INDEX_TYPES and not scalar_only:
            parameters = _given(request, _VECTOR_PARAMETERS)
            if index_type in PQ_INDEX_TYPES and request.num_sub_vectors is None:
                parameters["num_sub_vectors"] = _suggested_sub_vectors(
                    dataset, request.column, request.num_bits)
            dataset.create_index(
                request.column,
                index_type,
                name=request.name,
                metric=request.distance_type or "l2",
                replace=replace,
                **parameters,
            )
        else:
            kinds = sorted(SCALAR_INDEX_TYPES) + ([] if scalar_only else sorted(VECTOR_INDEX_TYPES))
            raise InvalidInputError(
                f"index_type must be one of {', '.join(kinds)}, got {request.index_type!r}"
            )


def _suggested_sub_vectors(dataset: LanceDataset, column: str, num_bits: int | None) -> int:
    """LanceDB's default number of PQ sub-vectors for the vector column `column`: its
    dimension / 16, else / 8, else 1; even with 4-bit codes. (Lance picks the partitions.)"""
    index = dataset.schema.get_field_index(column)
    kind = dataset.schema.field(index).type if index >= 0 else None
    if kind is not None and is_multivector(kind):
        kind = kind.value_type  # its vectors' dimension
    if kind is None or not pa.types.is_fixed_size_list(kind):
        return 1  # not a vector column: Lance says so when it builds
    dimension = kind.list_size
    suggested = next((dimension // by for by in (16, 8) if dimension % by == 0), 1)
    return suggested + 1 if num_bits == 4 and suggested % 2 else suggested


def _refuse_foreign_options(request: Any, index_type: str) -> None:
    """Options of another index type are refused, not ignored: full-text options on a
    non-text index, vector options or a distance on a scalar one."""
    given = {
        name for name in (*_TEXT_PARAMETERS, *_VECTOR_PARAMETERS, "distance_type")
        if getattr(request, name, None) is not None
    }
    if index_type == "INVERTED":
        foreign = given - _TEXT_ONLY
    elif index_type in VECTOR_INDEX_TYPES:
        foreign = given & _TEXT_ONLY
    else:
        foreign = given
    if foreign:
        raise InvalidInputError(
            f"a {index_type} index does not take {', '.join(sorted(foreign))}"
        )


def list_indices(
    dataset: LanceDataset, request: ListTableIndicesRequest
) -> ListTableIndicesResponse:
    with lance_errors(dataset.uri):
        described = {index.name: index for index in dataset.describe_indices()}
        total_rows = dataset.count_rows()
    page, token = paginate(described, request.page_token, request.limit)
    return ListTableIndicesResponse(
        indexes=[_index_content(described[name], total_rows) for name in page], page_token=token
    )


def _index_content(index: Any, total_rows: int) -> IndexContent:
    segments = list(index.segments)
    return IndexContent(
        index_name=index.name,
        index_uuid=segments[0].uuid if segments else "",
        columns=list(index.field_names),
        status="SUCCEEDED",
        index_type=index.index_type,
        type_url=index.type_url,
        num_indexed_rows=index.num_rows_indexed,
        num_unindexed_rows=max(0, total_rows - index.num_rows_indexed),
        size_bytes=index.total_size_bytes,
        num_segments=len(segments),
    )


def index_stats(dataset: LanceDataset, index_name: str | None) -> DescribeTableIndexStatsResponse:
    if not index_name:
        raise InvalidInputError("DescribeTableIndexStats needs index_name")
    with lance_errors(dataset.uri):
        stats = dataset.stats.index_stats(index_name)
        described = {index.name: index for index in dataset.describe_indices()}
    segments = stats.get("segments") or stats.get("indices") or [{}]
    # Lance's stats name no type ("N/A") while an index holds no rows; its description does.
    index_type = stats.get("index_type")
    if index_name in described and index_type in (None, "N/A"):
        index_type = described[index_name].index_type
    return DescribeTableIndexStatsResponse(
        index_type=index_type,
        distance_type=segments[0].get("metric_type"),
        num_indexed_rows=stats.get("num_indexed_rows"),
        num_unindexed_rows=stats.get("num_unindexed_rows"),
        num_indices=stats.get("num_indices"),
    )


def drop_index(dataset: LanceDataset, request: DropTableIndexRequest) -> None:
    if not request.index_name:
        raise InvalidInputError("DropTableIndex needs index_name")
    with lance_errors(dataset.uri):
        dataset.drop_index(request.index_name)


def prewarm_index(dataset: LanceDataset, index_name: str | None) -> None:
    """Load the index `index_name` into the session `dataset` was opened with."""
    if not index_name:
        raise InvalidInputError("PrewarmTableIndex needs index_name")
    with lance_errors(dataset.uri):
        if index_name not in {index.name for index in dataset.describe_indices()}:
            raise TableIndexNotFoundError(f"the table has no index {index_name}")
        dataset.prewarm_index(index_name)
