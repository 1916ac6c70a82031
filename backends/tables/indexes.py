"""Indexes: CreateTableIndex (vector and scalar), CreateTableScalarIndex, ListTableIndices,
DescribeTableIndexStats and DropTableIndex."""

from __future__ import annotations

from typing import Any

from lance import LanceDataset
from lance_namespace import (
    CreateTableIndexRequest,
    DescribeTableIndexStatsResponse,
    DropTableIndexRequest,
    InvalidInputError,
    ListTableIndicesRequest,
    ListTableIndicesResponse,
)
from lance_namespace_urllib3_client.models import IndexContent

from backends.core.paging import paginate
from backends.tables.errors import lance_errors

VECTOR_INDEX_TYPES = frozenset(
    {"IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_RQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ"}
)
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
)


def _normalised_type(index_type: str | None) -> str:
    return (index_type or "").strip().upper().replace("-", "_")


def _given(request: Any, names: dict[str, str] | tuple[str, ...]) -> dict[str, Any]:
    pairs = names.items() if isinstance(names, dict) else ((name, name) for name in names)
    return {
        argument: getattr(request, field)
        for field, argument in pairs
        if getattr(request, field) is not None
    }


def create_index(
    dataset: LanceDataset, request: CreateTableIndexRequest, scalar_only: bool
) -> None:
    """Build the index `request.index_type` on `request.column` (a scalar type when asked)."""
    index_type = _normalised_type(request.index_type)
    if not request.column:
        raise InvalidInputError("an index needs the column it indexes")
    with lance_errors(dataset.uri):
        if index_type in SCALAR_INDEX_TYPES:
            dataset.create_scalar_index(
                request.column,
                SCALAR_INDEX_TYPES[index_type],
                name=request.name,
                **_given(request, _TEXT_PARAMETERS),
            )
        elif index_type in VECTOR_INDEX_TYPES and not scalar_only:
            dataset.create_index(
                request.column,
                index_type,
                name=request.name,
                metric=request.distance_type or "l2",
                **_given(request, _VECTOR_PARAMETERS),
            )
        else:
            kinds = sorted(SCALAR_INDEX_TYPES) + ([] if scalar_only else sorted(VECTOR_INDEX_TYPES))
            raise InvalidInputError(
                f"index_type must be one of {', '.join(kinds)}, got {request.index_type!r}"
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
    segments = stats.get("segments") or stats.get("indices") or [{}]
    return DescribeTableIndexStatsResponse(
        index_type=stats.get("index_type"),
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
