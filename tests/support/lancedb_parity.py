"""LanceDB's remote client judged by embedded LanceDB: the same call on identical tables,
through the adapter (`lancedb.connect("db://…", host_override=URL)`) and in process
(`lancedb.connect(directory)`), must give the same answer, or fail with the same exception
type.

`build_tables(db)` writes the tables every case reads; `CASES` maps a case's name to the call
it makes on a connection; `MUTATIONS` maps a case's name to a change made to a fresh small
table (`mutated(db, name)` answers the change's result, then the table's schema and rows);
`differences(remote, embedded)` compares two outcomes (rows, ids in order, columns, scores and
distances within a tolerance).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from lancedb.index import FTS, IvfFlat, IvfPq
from lancedb.query import BooleanQuery, BoostQuery, MatchQuery, MultiMatchQuery, Occur, PhraseQuery
from lancedb.remote.errors import HttpError

DIMENSION = 8
ROWS = 240
WORDS = ("quick brown fox", "lazy dog sleeps", "quick thinking wins", "brown bread and butter",
         "fox and dog are friends", "a quiet evening")
# Columns whose values are scores or distances: compared within this relative tolerance.
SCORE_COLUMNS = ("_score", "_distance", "_relevance_score")
TOLERANCE = 1e-4


def _vector(index: int) -> list[float]:
    """A deterministic, well spread vector of row `index` (no ties between neighbours)."""
    return [math.sin(index * (dimension + 1) * 0.37 + dimension) for dimension in range(DIMENSION)]


def parity_rows() -> pa.Table:
    ids = list(range(ROWS))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "text": [f"{WORDS[i % len(WORDS)]} number {i}" for i in ids],
        "title": [f"{WORDS[(i * 7) % len(WORDS)]}" for i in ids],
        "vector": pa.array([_vector(i) for i in ids], pa.list_(pa.float32(), DIMENSION)),
        "other": pa.array([_vector(i + 1000) for i in ids], pa.list_(pa.float32(), DIMENSION)),
    })


QUERY_VECTOR = _vector(7)
# `vec`'s columns: `vector` the only one of 16, four of 8 (one of halves), one of 12.
VEC_DIMENSIONS = {"vector": 16, "v_dot": 8, "v_cos": 8, "v_sq": 8, "v_hf": 8, "v_pq": 12}


def _vectors_of(dimension: int, seed: int, kind: pa.DataType | None = None) -> pa.Array:
    return pa.array([[math.sin((i + seed) * 0.37 * (d + 1) + d) for d in range(dimension)]
                     for i in range(ROWS)], pa.list_(kind or pa.float32(), dimension))


def several_vectors_rows() -> pa.Table:
    """`vec`: an id, a text and a vector column of each of `VEC_DIMENSIONS`."""
    columns: dict[str, Any] = {
        "id": pa.array(range(ROWS), pa.int64()),
        "text": [f"{WORDS[i % len(WORDS)]} number {i}" for i in range(ROWS)]}
    for seed, (name, dimension) in enumerate(VEC_DIMENSIONS.items()):
        kind = pa.float16() if name == "v_hf" else pa.float32()
        columns[name] = _vectors_of(dimension, seed * 100, kind)
    return pa.table(columns)


def _query(dimension: int, seed: int = 7) -> list[float]:
    return [math.sin(seed * 0.37 * (d + 1) + d) for d in range(dimension)]


def build_tables(db: Any) -> None:
    """`docs`: full-text indexes on text (with positions) and title, a cosine IVF_FLAT index of
    one partition on `vector` (exact, so both sides find the same neighbours); `plain`: the
    same rows without an index; `two_vectors`: the same rows, searched without naming one of
    its two vector columns; `vec`: vector columns of 16 (`vector`), 8 (four) and 12
    dimensions and a full-text index, searched without naming a column; `twins`: two of 16
    (`a`, `b`), none named `vector`."""
    rows = parity_rows()
    docs = db.create_table("docs", rows)
    docs.create_index("text", config=FTS(with_position=True))
    docs.create_index("title", config=FTS())
    docs.create_index("vector", config=IvfFlat(distance_type="cosine", num_partitions=1))
    db.create_table("plain", rows.drop_columns(["other"]))
    db.create_table("two_vectors", rows)
    several = several_vectors_rows()
    db.create_table("vec", several).create_index("text", config=FTS())
    db.create_table("twins", pa.table({"id": several["id"], "a": _vectors_of(16, 1),
                                       "b": _vectors_of(16, 2)}))


def _docs(db: Any) -> Any:
    return db.open_table("docs")


def _plain(db: Any) -> Any:
    return db.open_table("plain")


def _without_auto_row_id(table: pa.Table) -> pa.Table:
    return table.drop_columns(["_rowid"]) if "_rowid" in table.column_names else table


def _on_vec(call: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda db: call(db.open_table("vec"))


def _plan_operators(plan: str) -> list[str]:
    """The operators of a query plan, in order (their arguments hold paths and timings).
    LanceDB puts a GlobalLimitExec of k above a vector search's k nearest, where it cannot
    change the rows; the server's plan (Lance's own) has none: it is left out."""
    operators = (line.split()[0].split(":")[0].rstrip(",") for line in plan.splitlines()
                 if line.strip())
    return [operator for operator in operators if operator != "GlobalLimitExec"]


def _pq_index_stats(db: Any) -> Any:
    """An IVF_PQ index with LanceDB's defaults (no partitions or sub-vectors given)."""
    table = db.create_table("pq_defaults", pa.concat_tables([parity_rows()] * 3))  # PQ trains
    table.create_index("other", config=IvfPq())
    stats = table.index_stats("other_idx")
    return stats.index_type, stats.distance_type, stats.num_indexed_rows


def _times(db: Any) -> Any:
    """A table of times in every unit and a time zone: the schema read back, and rows added
    to it (the client casts them to the schema it reads)."""
    moment = datetime.datetime(2024, 1, 2, 3, 4, 5, 678000)
    columns = {
        "ms": pa.array([moment], pa.timestamp("ms")),
        "ns_utc": pa.array([moment], pa.timestamp("ns", "UTC")),
        "day": pa.array([moment.time()], pa.time32("ms")),
        "wait": pa.array([datetime.timedelta(seconds=90)], pa.duration("s")),
    }
    table = db.create_table("times", pa.table(columns))
    table.add(pa.table(columns))
    return table.schema, table.search().to_arrow()


def _cloned(db: Any, name: str, **options: Any) -> Any:
    """A shallow clone of the plain table (named by its location, `uri`), then a write to it:
    its version, rows, and the source's rows afterwards."""
    clone = db.clone_table(name, _plain(db).uri, **options)
    version, rows = clone.version, clone.search().limit(1000).to_arrow().sort_by("id")
    clone.add(parity_rows().slice(0, 2))
    return version, rows, clone.count_rows(), _plain(db).count_rows()


CASES: dict[str, Callable[[Any], Any]] = {
    # Full-text search, every query shape.
    "fts_string": lambda db: _docs(db).search("quick", query_type="fts", fts_columns="text")
    .limit(30).to_arrow(),
    "fts_string_any_column": lambda db: _plain(db).search("brown", query_type="fts")
    .limit(30).to_arrow(),
    "fts_match_and": lambda db: _docs(db).search(
        MatchQuery("quick brown", "text", operator="AND")).limit(30).to_arrow(),
    "fts_match_fuzzy": lambda db: _docs(db).search(
        MatchQuery("quik", "text", fuzziness=1)).limit(30).to_arrow(),
    "fts_match_boost": lambda db: _docs(db).search(
        MatchQuery("dog", "text", boost=3.0)).limit(30).to_arrow(),
    "fts_phrase": lambda db: _docs(db).search(PhraseQuery("brown fox", "text")).limit(30)
    .to_arrow(),
    "fts_phrase_slop": lambda db: _docs(db).search(PhraseQuery("quick fox", "text", slop=1))
    .limit(30).to_arrow(),
    "fts_boolean": lambda db: _docs(db).search(BooleanQuery([
        (Occur.MUST, MatchQuery("quick", "text")),
        (Occur.SHOULD, MatchQuery("fox", "text")),
        (Occur.MUST_NOT, MatchQuery("thinking", "text")),
    ])).limit(30).to_arrow(),
    "fts_boost": lambda db: _docs(db).search(BoostQuery(
        MatchQuery("quick", "text"), MatchQuery("brown", "text"), negative_boost=0.3))
    .limit(30).to_arrow(),
    "fts_multi_match": lambda db: _docs(db).search(
        MultiMatchQuery("dog", ["text", "title"], boosts=[1.0, 2.0])).limit(30).to_arrow(),
    "fts_filtered": lambda db: _docs(db).search("quick", query_type="fts", fts_columns="text")
    .where("id > 100").limit(30).to_arrow(),
    "fts_selected": lambda db: _docs(db).search("fox", query_type="fts", fts_columns="text")
    .select(["id"]).limit(30).to_arrow(),
    "hybrid": lambda db: _docs(db).search(query_type="hybrid", vector_column_name="vector")
    .vector(QUERY_VECTOR).text("quick").limit(10).to_arrow(),
    # Vector search.
    "vector_cosine_index": lambda db: _docs(db).search(QUERY_VECTOR, vector_column_name="vector")
    .limit(8).to_arrow(),
    "vector_offset": lambda db: _plain(db).search(QUERY_VECTOR).limit(5).offset(3).to_arrow(),
    "vector_dot": lambda db: _plain(db).search(QUERY_VECTOR).distance_type("dot").limit(6)
    .to_arrow(),
    "vector_prefilter": lambda db: _plain(db).search(QUERY_VECTOR).where("id > 120", prefilter=True)
    .limit(6).to_arrow(),
    "vector_range": lambda db: _plain(db).search(QUERY_VECTOR).distance_range(0.5, 4.0)
    .limit(10).to_arrow(),
    "vector_two_columns_unnamed": lambda db: db.open_table("two_vectors").search(QUERY_VECTOR)
    .limit(3).to_arrow(),
    "vector_two_columns_named": lambda db: db.open_table("two_vectors")
    .search(QUERY_VECTOR, vector_column_name="other").limit(3).to_arrow(),
    **{f"vec_{name}": _on_vec(call) for name, call in {
        # A search naming no column on a table of several: the only one of its dimension.
        "limit": lambda t: t.search(_query(16)).limit(5).to_arrow(),
        "metric_cosine": lambda t: t.search(_query(16)).distance_type("cosine").limit(5)
        .to_arrow(),
        "metric_dot": lambda t: t.search(_query(16)).distance_type("dot").limit(5).to_arrow(),
        "distance_range": lambda t: t.search(_query(16)).distance_range(0.0, 20.0).limit(5)
        .to_arrow(),
        "prefilter": lambda t: t.search(_query(16)).where("id > 100", prefilter=True).limit(5)
        .to_arrow(),
        "postfilter": lambda t: t.search(_query(16)).where("id > 100").limit(5).to_arrow(),
        "select": lambda t: t.search(_query(16)).select(["id"]).limit(5).to_arrow(),
        "offset": lambda t: t.search(_query(16)).limit(4).offset(3).to_arrow(),
        "several_vectors": lambda t: t.search([_query(16), _query(16, 9)]).limit(3).to_arrow(),
        "nprobes": lambda t: t.search(_query(16)).nprobes(4).limit(5).to_arrow(),
        "refine_factor": lambda t: t.search(_query(16)).refine_factor(2).limit(5).to_arrow(),
        # Embedded LanceDB adds `_rowid` to a fast search's answer unasked (elsewhere it
        # strips a `_rowid` it added itself): compared without it.
        "fast_search": lambda t: _without_auto_row_id(
            t.search(_query(16)).fast_search().limit(5).to_arrow()),
        "with_row_id": lambda t: t.search(_query(16)).with_row_id(True).limit(5).to_arrow(),
        "bypass_index": lambda t: t.search(_query(16)).bypass_vector_index().limit(5)
        .to_arrow(),
        "explain_plan": lambda t: _plan_operators(
            t.search(_query(16)).limit(3).explain_plan(verbose=True)),
        "analyze_plan": lambda t: _plan_operators(t.search(_query(16)).limit(3).analyze_plan()),
        "to_list": lambda t: [row["id"] for row in t.search(_query(16)).limit(5).to_list()],
        "to_batches": lambda t: pa.Table.from_batches(
            list(t.search(_query(16)).limit(5).to_batches())),
        "hybrid": lambda t: t.search(query_type="hybrid", vector_column_name="vector")
        .vector(_query(16)).text("quick").limit(5).to_arrow(),
        "dimension_12": lambda t: t.search(_query(12)).limit(5).to_arrow(),
        "dimension_8_four_columns": lambda t: t.search(_query(8)).limit(5).to_arrow(),
        "dimension_5_no_column": lambda t: t.search(_query(5)).limit(5).to_arrow(),
        "named_v_cos": lambda t: t.search(_query(8), vector_column_name="v_cos").limit(5)
        .to_arrow(),
    }.items()},
    "twins_unnamed": lambda db: db.open_table("twins").search(_query(16)).limit(3).to_arrow(),
    "twins_named": lambda db: db.open_table("twins").search(_query(16), vector_column_name="b")
    .limit(3).to_arrow(),
    # Plain queries: every select form, offsets, order.
    "select_list": lambda db: _plain(db).search().select(["id", "title"]).limit(5).to_arrow(),
    "select_expressions": lambda db: _plain(db).search()
    .select({"double": "id * 2", "loud": "upper(title)"}).limit(5).to_arrow(),
    "limit_offset": lambda db: _plain(db).search().where("id >= 10").limit(4).offset(2)
    .to_arrow(),
    "order_by": lambda db: _plain(db).search()
    .order_by([{"column_name": "id", "ascending": False}]).limit(5).to_arrow(),
    "take_offsets": lambda db: _plain(db).take_offsets([3, 1, 7]).to_arrow(),
    "take_row_ids": lambda db: _plain(db).take_row_ids([2, 5]).to_arrow(),
    "count_filtered": lambda db: _plain(db).count_rows("id < 17"),
    "index_distance": lambda db: _docs(db).index_stats("vector_idx").distance_type,
    "explain_plan": lambda db: _plan_operators(
        _plain(db).search(QUERY_VECTOR).where("id > 3").limit(3).explain_plan(verbose=True)),
    "analyze_plan": lambda db: _plan_operators(
        _plain(db).search(QUERY_VECTOR).limit(3).analyze_plan()),
    "index_pq_defaults": _pq_index_stats,
    "clone_shallow_version": lambda db: _cloned(db, "cloned_v1", source_version=1),
    "clone_shallow_latest": lambda db: _cloned(db, "cloned_latest"),
    "prewarm_index": lambda db: (_docs(db).prewarm_index("vector_idx"), _docs(db).search(
        QUERY_VECTOR, vector_column_name="vector").limit(4).to_arrow())[-1],
    "time_units": _times,
    # Refusals: the exception LanceDB raises embedded.
    "create_existing_table": lambda db: db.create_table("plain", parity_rows()),
    "open_missing_table": lambda db: db.open_table("nowhere"),
    "drop_missing_table": lambda db: db.drop_table("nowhere"),
    "select_missing_column": lambda db: _plain(db).search().select(["nope"]).to_arrow(),
    "duplicate_tag": lambda db: (_plain(db).tags.create("v1", 1), _plain(db).tags.create("v1", 1)),
    "checkout_missing_version": lambda db: _plain(db).checkout(99),
    "prewarm_missing_index": lambda db: _docs(db).prewarm_index("nowhere_idx"),
    "fts_index_again_without_replace": lambda db: _docs(db).create_index(
        "title", config=FTS(), replace=False),
    "index_stats_missing_index": lambda db: _docs(db).index_stats("no_such_idx"),  # None
    "vector_wrong_dimension_named": lambda db: _plain(db).search(
        [1.0, 2.0], vector_column_name="vector").limit(2).to_arrow(),
    "vector_wrong_dimension_unnamed": lambda db: _plain(db).search([1.0, 2.0]).limit(2)
    .to_arrow(),
}
# Refusals whose message says what embedded LanceDB says (its "Invalid input, " left out).
SAME_MESSAGE = frozenset({
    "vec_dimension_8_four_columns", "vec_dimension_5_no_column", "twins_unnamed",
    "vector_two_columns_unnamed", "vector_wrong_dimension_named",
    "vector_wrong_dimension_unnamed", "merge_insert_without_clause",
})


@dataclass(frozen=True)
class Failure:
    """A call that raised: its exception's type, and the HTTP status behind it (remote)."""

    kind: type[Exception]
    status: int | None
    message: str = field(default="", compare=False)  # shown when a case fails

    def says_what(self, embedded: Failure) -> bool:
        """This failure's message holds what embedded LanceDB's says."""
        return embedded.message.removeprefix("Invalid input, ") in self.message

    def same_as(self, embedded: Failure) -> bool:
        """The remote client raises what embedded LanceDB raises; where it can only raise its
        HttpError (any refusal of a query or index call but a 404), a 4xx refusal is the
        same answer: a 5xx never is."""
        if self.status is not None and self.status >= 500:
            return False
        return self.kind is embedded.kind or (
            issubclass(self.kind, HttpError) and self.status is not None
        )


def small_rows() -> pa.Table:
    ids = list(range(20))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "score": pa.array([i / 4 for i in ids], pa.float32()),
        "name": [f"n{i}" for i in ids],
    })


def _merged(table: Any) -> Any:
    incoming = pa.table({"id": pa.array([3, 40], pa.int64()),
                         "score": pa.array([9.0, 9.5], pa.float32()), "name": ["m3", "m40"]})
    result = (table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
              .execute(incoming))
    # num_attempts is not compared: the protocol's answer has no field for it.
    return (result.version, result.num_updated_rows, result.num_inserted_rows,
            result.num_deleted_rows, result.num_rows)


MUTATIONS: dict[str, Callable[[Any], Any]] = {
    "add_columns_field": lambda t: t.add_columns(pa.field("z", pa.int32())),
    "add_columns_fields": lambda t: t.add_columns(
        [pa.field("z", pa.list_(pa.float32(), 4)), pa.field("w", pa.string())]),
    "add_columns_schema": lambda t: t.add_columns(pa.schema([pa.field("z", pa.float64())])),
    "add_columns_sql": lambda t: t.add_columns({"doubled": "id * 2"}),
    "alter_cast_double": lambda t: t.alter_columns({"path": "score", "data_type": pa.float64()}),
    "alter_cast_large_string": lambda t: t.alter_columns(
        {"path": "name", "data_type": pa.large_string()}),
    "alter_rename": lambda t: t.alter_columns({"path": "name", "rename": "label"}),
    "drop_columns": lambda t: t.drop_columns(["score"]),
    "merge_insert": _merged,
    "merge_insert_without_clause": lambda t: t.merge_insert("id").execute(small_rows()),
    "update": lambda t: t.update(where="id < 5", values={"score": 0.5}).rows_updated,
    "delete": lambda t: t.delete("id > 10").num_deleted_rows,
    "stats": lambda t: (t.add(small_rows()), t.delete("id = 2"), t.stats())[-1],
}


def mutated(db: Any, name: str) -> Any:
    """The outcome of mutation `name` on a fresh table, then the table's schema and rows."""
    table = db.create_table(f"m_{name}", small_rows())
    result = outcome(MUTATIONS[name], table)
    rows = table.search().to_arrow().sort_by("id")  # to_arrow() is refused remotely
    return result, table.schema, rows


def outcome(call: Callable[[Any], Any], db: Any) -> Any:
    """The call's result, or how it failed."""
    try:
        return call(db)
    except Exception as error:  # compared by type: the remote client's message differs
        return Failure(type(error), getattr(error, "status_code", None), str(error)[:600])


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return table.to_pylist()


def _same_value(column: str, remote: Any, embedded: Any) -> bool:
    if column in SCORE_COLUMNS and isinstance(remote, float) and isinstance(embedded, float):
        return math.isclose(remote, embedded, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    if isinstance(remote, list) and isinstance(embedded, list):
        return len(remote) == len(embedded) and all(
            math.isclose(a, b, rel_tol=TOLERANCE) if isinstance(a, float) else a == b
            for a, b in zip(remote, embedded, strict=True)
        )
    return remote == embedded


def differences(remote: Any, embedded: Any) -> list[str]:
    """What differs between two outcomes (empty: the same answer)."""
    if isinstance(remote, pa.Table) and isinstance(embedded, pa.Table):
        if remote.column_names != embedded.column_names:
            return [f"columns {remote.column_names} != {embedded.column_names}"]
        remote_rows, embedded_rows = _rows(remote), _rows(embedded)
        if len(remote_rows) != len(embedded_rows):
            return [f"{len(remote_rows)} rows != {len(embedded_rows)}"]
        return [
            f"row {index} {column}: {left[column]!r} != {right[column]!r}"
            for index, (left, right) in enumerate(zip(remote_rows, embedded_rows, strict=True))
            for column in left
            if not _same_value(column, left[column], right[column])
        ][:5]
    if isinstance(remote, Failure) and isinstance(embedded, Failure):
        return [] if remote.same_as(embedded) else [f"{remote} != {embedded}"]
    # LanceDB's result objects (AddColumnsResult...) have no equality: their reprs list fields.
    same = remote == embedded or repr(remote) == repr(embedded)
    return [] if same else [f"{remote!r} != {embedded!r}"]


def assert_same_answer(databases: tuple[Any, Any], case: str) -> None:
    """Case `case` of `CASES` answers through the remote client (first) as embedded (second)."""
    remote, embedded = databases
    expected = outcome(CASES[case], embedded)
    answered = outcome(CASES[case], remote)
    assert not differences(answered, expected), (case, answered, expected)
    _assert_same_message(case, answered, expected)


def _assert_same_message(case: str, answered: Any, expected: Any) -> None:
    if case in SAME_MESSAGE:
        assert isinstance(expected, Failure) and isinstance(answered, Failure), case
        assert answered.says_what(expected), (case, answered.message, expected.message)


def assert_same_change(databases: tuple[Any, Any], case: str) -> None:
    """Mutation `case` of `MUTATIONS` gives the same result, schema and rows both ways."""
    remote, embedded = databases
    result, schema, rows = mutated(remote, case)
    expected_result, expected_schema, expected_rows = mutated(embedded, case)
    assert not differences(result, expected_result), (case, result, expected_result)
    _assert_same_message(case, result, expected_result)
    assert schema == expected_schema
    assert not differences(rows, expected_rows)
