"""Every request field has an effect or a refusal: for each field of a request model, a pair of
requests that differ only in it, whose answers must differ (or the second be refused, code 13).

`QUERY_VARIANTS` covers every field of QueryTable (the server's extension included), against
the tables `build_walk_tables` writes: 600 rows with two vector columns (`vector` indexed
IVF_PQ, `other` not), an inverted index on `text`, 50 rows written after the index (not in
it), a `dev` branch with rows of its own, and a table with an IVF_HNSW_SQ index (for `ef`).
`INDEX_VARIANTS` covers every field of CreateTableIndex: each option changes what Lance
records of the index it builds. `SERVER_FIELDS` are read by the server itself, not the
backend: the caller (`identity`), the request's headers (`context`) and the route's `id`.
The fixture `walk` builds the tables on the contract backend of the module's tests.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import lance
import pyarrow as pa
import pytest

from tests.support.contract_backends import ContractBackend
from tests.support.lance_data import arrow_stream, read_arrow_file

DIMENSION = 16
ROWS = 600
LATE_ROWS = 50
# Lance trains PQ on 256 rows a partition, so the 600 rows' index has 2 partitions at most.
PARTITIONS = 2
SERVER_FIELDS = frozenset({"identity", "context", "id"})
ARROW = {"content-type": "application/vnd.apache.arrow.stream"}


def _vector(index: int, salt: int = 0) -> list[float]:
    """Row `index`'s vector: seeded random numbers, so that quantising and partitioning them
    loses something (vectors on a low-dimensional curve would be kept exactly)."""
    generator = random.Random(index * 7919 + salt)
    return [generator.uniform(-1.0, 1.0) for _ in range(DIMENSION)]


def walk_rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    vectors = pa.list_(pa.float32(), DIMENSION)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "text": [("quick brown fox", "lazy dog", "quick dog")[i % 3] + f" {i}" for i in ids],
        "vector": pa.array([_vector(i) for i in ids], vectors),
        "other": pa.array([_vector(i, 5) for i in ids], vectors),
    })


# The query vector is a late row's: the nearest is a row the index does not hold.
QUERY = _vector(ROWS + 3)
OTHER_QUERY = _vector(17)


@dataclass(frozen=True)
class Walk:
    """The adapter at `url`, the walk's tables in namespace `namespace`."""

    url: str
    namespace: list[str]

    def table(self, name: str) -> str:
        return "$".join([*self.namespace, name])

    def post(self, name: str, suffix: str, **keywords: Any) -> httpx.Response:
        return httpx.post(f"{self.url}/v1/table/{self.table(name)}/{suffix}", timeout=120,
                          **keywords)

    def checked(self, name: str, suffix: str, **keywords: Any) -> httpx.Response:
        answer = self.post(name, suffix, **keywords)
        assert answer.status_code == 200, (suffix, answer.text)
        return answer

    def location(self, name: str) -> str:
        return self.checked(name, "describe", json={}).json()["location"]


@pytest.fixture(scope="module")
def walk(backend: ContractBackend) -> Iterator[Walk]:
    """The walk's tables on the backend, in a fresh namespace, for one test module."""
    walked = Walk(backend.url, backend.new_layout().namespace)
    build_walk_tables(walked)
    yield walked


def build_walk_tables(walk: Walk) -> None:
    walk.checked("walk", "create", headers=ARROW, content=arrow_stream(walk_rows(0, ROWS)))
    walk.checked("walk", "create_index", json={
        "column": "vector", "index_type": "IVF_PQ", "num_partitions": PARTITIONS,
        "num_sub_vectors": 4})
    walk.checked("walk", "create_index", json={"column": "text", "index_type": "FTS"})
    walk.checked("walk", "insert", headers=ARROW, content=arrow_stream(walk_rows(ROWS, LATE_ROWS)))
    walk.checked("walk", "branches/create", json={"name": "dev"})
    walk.checked("walk", "insert", params={"branch": "dev"}, headers=ARROW,
                 content=arrow_stream(walk_rows(10_000, 5)))
    walk.checked("walk_hnsw", "create", headers=ARROW, content=arrow_stream(walk_rows(0, ROWS)))
    walk.checked("walk_hnsw", "create_index", json={
        "column": "vector", "index_type": "IVF_HNSW_SQ", "num_partitions": 1})


VECTOR = {"single_vector": QUERY}
BASE = {"k": 10, "vector": VECTOR, "vector_column": "vector"}
# So many of the nearest rows that they never all lie in one of the index's 2 partitions
# (searching one answers others, whatever partitions training made), and that an approximate
# search never finds them all as an exact one does.
WIDE = {**BASE, "k": 250}
NO_VECTOR = {"k": 10, "vector": {}}
MATCH = {"match": {"terms": "quick", "column": "text"}}
# field -> (table, baseline request, variant request)
QUERY_VARIANTS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "branch": ("walk", NO_VECTOR, {**NO_VECTOR, "k": 1000, "branch": "dev"}),
    # Over k = 250 rows an IVF_PQ search's approximation always orders some rows otherwise
    # than an exact one (over 10 it may not, depending on the partitions k-means made).
    "bypass_vector_index": ("walk", WIDE, {**WIDE, "bypass_vector_index": True}),
    "columns": ("walk", BASE, {**BASE, "columns": {"column_names": ["id"]}}),
    "distance_type": ("walk", {**BASE, "bypass_vector_index": True},
                      {**BASE, "bypass_vector_index": True, "distance_type": "dot"}),
    # On a graph this small every ef finds the same rows; one below k is refused.
    "ef": ("walk_hnsw", {**BASE, "k": 50}, {**BASE, "k": 50, "ef": 10}),
    "fast_search": ("walk", BASE, {**BASE, "fast_search": True}),
    "filter": ("walk", BASE, {**BASE, "filter": "id % 2 = 0"}),
    "full_text_query": ("walk", NO_VECTOR, {
        **NO_VECTOR, "full_text_query": {"structured_query": {"query": MATCH}}}),
    "k": ("walk", BASE, {**BASE, "k": 3}),
    "lower_bound": ("walk", BASE, {**BASE, "lower_bound": 0.5}),
    "maximum_nprobes": ("walk", {**WIDE, "minimum_nprobes": 1},
                        {**WIDE, "minimum_nprobes": 1, "maximum_nprobes": 1}),
    "minimum_nprobes": ("walk", WIDE, {**WIDE, "minimum_nprobes": 1, "maximum_nprobes": 1}),
    "nprobes": ("walk", WIDE, {**WIDE, "nprobes": 1}),
    "offset": ("walk", BASE, {**BASE, "offset": 2}),
    "order_by": ("walk", NO_VECTOR, {
        **NO_VECTOR, "order_by": [{"column_name": "id", "ascending": False}]}),
    "prefilter": ("walk", {**BASE, "filter": "id < 300"},
                  {**BASE, "filter": "id < 300", "prefilter": True}),
    "refine_factor": ("walk", WIDE, {**WIDE, "refine_factor": 10}),
    "upper_bound": ("walk", BASE, {**BASE, "upper_bound": 1.0}),
    "vector": ("walk", BASE, {**BASE, "vector": {"single_vector": OTHER_QUERY}}),
    "vector_column": ("walk", BASE, {**BASE, "vector_column": "other"}),
    "version": ("walk", NO_VECTOR, {**NO_VECTOR, "k": 1000, "version": 1}),
    "with_row_id": ("walk", BASE, {**BASE, "with_row_id": True}),
}
# The spec's forms within a field: each must also have an effect.
QUERY_FORM_VARIANTS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "columns.column_aliases": ("walk", BASE, {**BASE, "columns": {
        "column_aliases": {"doubled": "id * 2"}}}),
    "full_text_query.string_query": ("walk", NO_VECTOR, {
        **NO_VECTOR, "full_text_query": {"string_query": {"query": "dog", "columns": ["text"]}}}),
    "vector.multi_vector": ("walk", BASE, {
        **BASE, "vector": {"multi_vector": [QUERY, OTHER_QUERY]}}),
}


def query_answer(walk: Walk, table: str, body: dict[str, Any]) -> Any:
    """The rows a query answers, or its refusal's code."""
    answer = walk.post(table, "query", json=body)
    if answer.status_code != 200:
        return ("refused", answer.json().get("code"))
    return read_arrow_file(answer.content).to_pylist()


# CreateTableIndex: field -> (baseline request, variant request, what Lance records of the
# index, read from its stats).
FTS = {"column": "text", "index_type": "FTS"}
PQ = {"column": "vector", "index_type": "IVF_PQ", "num_partitions": 2, "num_sub_vectors": 2}
HNSW = {"column": "vector", "index_type": "IVF_HNSW_SQ", "num_partitions": 1}
INDEX_VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "branch": (PQ, {**PQ, "branch": "dev"}),
    "column": (PQ, {**PQ, "column": "other"}),
    "index_type": (PQ, {**PQ, "index_type": "IVF_FLAT"}),
    "name": (PQ, {**PQ, "name": "named"}),
    "distance_type": (PQ, {**PQ, "distance_type": "cosine"}),
    "num_partitions": (PQ, {**PQ, "num_partitions": 1}),  # 2 is the most 600 rows take
    "num_sub_vectors": (PQ, {**PQ, "num_sub_vectors": 4}),
    "num_bits": (PQ, {**PQ, "num_bits": 4}),
    "target_partition_size": ({**PQ, "num_partitions": None},
                              {**PQ, "num_partitions": None, "target_partition_size": 100}),
    "m": (HNSW, {**HNSW, "m": 5}),
    "ef_construction": (HNSW, {**HNSW, "ef_construction": 20}),
    "replace": ({**PQ, "name": "again"}, {**PQ, "name": "again", "replace": False}),
    **{option: (FTS, {**FTS, option: value}) for option, value in {
        "with_position": True, "base_tokenizer": "whitespace", "language": "French",
        "max_token_length": 5, "lower_case": False, "stem": False, "remove_stop_words": False,
        "ascii_folding": False, "min_ngram_length": 2, "max_ngram_length": 4,
        "prefix_only": True, "custom_stop_words": ["dog"], "block_size": 256,
        "index_operators": True, "preserve_original": True, "split_identifiers": True,
        "split_on_numerics": True, "lance_tokenizer": "json",
    }.items()},
}


# CreateTableIndex's fields no record tells apart, with the reason.
INDEX_UNWALKED: dict[str, str] = {
    field: (
        "a k-means training option (pylance's create_index sample_rate / max_iters): it changes "
        "the centroids, their loss and the partitions' sizes, which differ between two builds "
        "with the same options anyway, so no record of the index tells its value"
    )
    for field in ("sample_rate", "max_iterations")
}


def index_record(
    walk: Walk, table: str, body: dict[str, Any], suffix: str = "create_index"
) -> Any:
    """What Lance records of the index `body` builds (CreateTableIndex, or the operation at
    `suffix`) on a fresh copy of the walk's rows with a `dev` branch, or the refusal's code:
    the indices on main, then the statistics of those on the branch the body names, without
    what differs from one build to the next (ids, times, what k-means trained)."""
    walk.checked(table, "create", headers=ARROW, content=arrow_stream(walk_rows(0, ROWS)))
    walk.checked(table, "branches/create", json={"name": "dev"})
    given = {key: value for key, value in body.items() if value is not None}
    if body.get("name") == "again":  # an index of that name is there already
        walk.checked(table, suffix, json={k: v for k, v in given.items() if k != "replace"})
    answer = walk.post(table, suffix, json=given)
    if answer.status_code != 200:
        return ("refused", answer.json().get("code"))
    main = lance.dataset(walk.location(table))
    dataset = main.checkout_version(("dev", None)) if body.get("branch") else main
    indices = sorted(dataset.describe_indices(), key=lambda index: index.name)
    # Which branch holds an index: the same index on another branch has the same statistics.
    on_main = sorted(index.name for index in main.describe_indices())
    return [on_main, *(without_ids(dataset.stats.index_stats(index.name)) for index in indices)]


# What differs between two builds of one index: ids and times, and what k-means trained (its
# centroids, their loss and how many rows each partition got).
_VOLATILE = ("uuid", "uri", "updated_at_timestamp_ms", "created_at", "loss", "centroids",
             "partitions")


def without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_ids(item) for key, item in value.items() if key not in _VOLATILE}
    if isinstance(value, list):
        return [without_ids(item) for item in value]
    return repr(value) if not isinstance(value, str | int | float | bool) else value
