"""Grouped aggregates computed partially in the read tasks (lance_adapter_spark/aggregates.py
and the rule lance_adapter_spark/jvm/PruneLanceColumns.java), on a real local Spark session:
each answer is compared with Spark's own over the same rows held in memory."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType, IntegerType, LongType, StructField, StructType

from lance_adapter_spark.aggregates import (
    AGGREGATE_COLUMN_PREFIX,
    PartialAggregation,
    partial_aggregate,
)
from lance_adapter_spark.options import DEFAULT_ROWS_PER_PARTITION
from lance_adapter_spark.read import aggregated_rows_per_partition
from lance_adapter_spark.source import LanceDataSource
from tests.support.pipeline import adapter, lance_options, spark_session
from tests.test_spark_pruning import scanned_names

ROWS = 4000
# bucket 3 has no price; bucket 4's f is all NaN; f is NaN at id 15 (bucket 5) only besides.
COLUMNS = [
    "id",
    "CAST(id % 10 AS INT) AS bucket",
    "IF(id % 7 = 0, NULL, CONCAT('k', id % 3)) AS label",
    "id % 2 = 0 AS flag",
    "IF(id % 10 = 3, NULL, IF(id % 97 = 0, CAST('NaN' AS DOUBLE), CAST(id AS DOUBLE) / 7))"
    " AS price",
    "IF(id % 10 = 4 OR id = 15, CAST('NaN' AS FLOAT), IF(id % 11 = 0, NULL, CAST(id AS FLOAT) / 2))"
    " AS f",
    "TRANSFORM(SEQUENCE(0, 3), i -> CAST(id * 4 + i AS FLOAT)) AS v",
]


@pytest.fixture(scope="module")
def written() -> tuple[str, DataFrame]:
    """A Lance table of the test rows, written once for the module, and the same rows held
    in memory."""
    spark = spark_session()
    memory = spark.range(ROWS, numPartitions=4).selectExpr(*COLUMNS).cache()
    table = f"aggregates_{os.getpid()}"
    options = lance_options(adapter()[0], table, vector_columns="v:4")
    memory.write.format("lance").options(**options).mode("append").save()
    return table, memory


@pytest.fixture
def frames(written: tuple[str, DataFrame]) -> tuple[DataFrame, DataFrame]:
    """The same rows twice: read from the Lance table in several partitions, and in memory."""
    table, memory = written
    reading = lance_options(adapter()[0], table, rows_per_partition=1500)
    return spark_session().read.format("lance").options(**reading).load(), memory


def partial_columns(df: DataFrame) -> list[str]:
    return [name for name in scanned_names(df) if name.startswith(AGGREGATE_COLUMN_PREFIX)]


def same_value(left: object, right: object) -> bool:
    if isinstance(left, float) and isinstance(right, float):
        both_nan = math.isnan(left) and math.isnan(right)
        return both_nan or math.isclose(left, right, rel_tol=1e-12, abs_tol=0.0)
    return left == right


def assert_same_answer(
    query: Callable[[DataFrame], DataFrame], lance: DataFrame, memory: DataFrame
) -> None:
    """`query` gives the same rows over both frames: floating-point sums may differ in
    their last digits (they are summed in another order, as across any two partitionings)."""
    read = sorted(query(lance).collect(), key=repr)
    expected = sorted(query(memory).collect(), key=repr)
    assert len(read) == len(expected)
    for got, want in zip(read, expected, strict=True):
        assert got.asDict().keys() == want.asDict().keys()
        assert all(same_value(a, b) for a, b in zip(got, want, strict=True)), (got, want)


GROUPED = {
    "by an int": lambda df: df.groupBy("bucket").agg(
        F.count("*").alias("rows"),
        F.count("price").alias("priced"),
        F.avg("price").alias("mean"),
        F.sum("price").alias("total"),
        F.max("f").alias("top"),
        F.min("f").alias("bottom"),
        F.max("id").alias("last"),
        F.min("id").alias("first"),
        F.avg("f").alias("f_mean"),
        F.max(F.element_at("v", 1)).alias("v1"),
        F.min(F.col("v")[3]).alias("v4"),
    ),
    "by a string with nulls and a boolean": lambda df: df.groupBy("label", "flag").agg(
        F.count("*").alias("rows"), F.max("price").alias("top"), F.sum("f").alias("total")
    ),
    "with no grouping": lambda df: df.agg(
        F.max("price").alias("top"), F.avg("f").alias("mean"), F.count("f").alias("n")
    ),
    "as expressions of aggregates": lambda df: df.groupBy("bucket").agg(
        (F.max("id") - F.min("id")).alias("span"),
        (F.avg("price") * 2).alias("twice"),
        (F.count("*") + F.lit(1)).alias("more"),
    ),
    "through a select": lambda df: (
        df.select("bucket", "price").groupBy("bucket").agg(F.avg("price").alias("mean"))
    ),
}


@pytest.mark.parametrize("query", GROUPED.values(), ids=GROUPED.keys())
def test_aggregates_are_computed_in_the_read_tasks(
    query: Callable[[DataFrame], DataFrame], frames: tuple[DataFrame, DataFrame]
) -> None:
    lance, memory = frames
    aggregated = query(lance)
    assert partial_columns(aggregated), scanned_names(aggregated)
    assert not {"v", "name"} & set(scanned_names(aggregated))
    assert_same_answer(query, lance, memory)


def test_nan_and_missing_values_give_sparks_answers(frames: tuple[DataFrame, DataFrame]) -> None:
    lance, _ = frames
    rows = {row.bucket: row for row in GROUPED["by an int"](lance).collect()}
    assert rows[3].priced == 0 and rows[3].mean is None and rows[3].total is None
    assert math.isnan(rows[4].top) and math.isnan(rows[4].bottom)  # all NaN
    assert math.isnan(rows[5].top) and rows[5].bottom == 2.5  # one NaN: the least is a number
    assert rows[0].rows == ROWS // 10 and rows[0].v1 == (ROWS - 10) * 4


NOT_PARTIAL = {
    "distinct": lambda df: df.groupBy("bucket").agg(F.countDistinct("label").alias("n")),
    "a floating-point key": lambda df: df.groupBy("f").agg(F.count("*").alias("n")),
    "an integer sum": lambda df: df.groupBy("bucket").agg(F.sum("id").alias("total")),
    "after a filter": lambda df: df.where("id > 10").groupBy("bucket").agg(F.max("f").alias("m")),
    "a grouping expression": lambda df: df.groupBy(F.col("id") % 3).agg(F.max("f").alias("m")),
    "a string maximum": lambda df: df.groupBy("bucket").agg(F.max("label").alias("m")),
}


@pytest.mark.parametrize("query", NOT_PARTIAL.values(), ids=NOT_PARTIAL.keys())
def test_aggregates_without_a_partial_form_read_rows(
    query: Callable[[DataFrame], DataFrame], frames: tuple[DataFrame, DataFrame]
) -> None:
    lance, memory = frames
    assert partial_columns(query(lance)) == []
    assert_same_answer(query, lance, memory)


def test_pushed_filters_keep_rows_read(written: tuple[str, DataFrame]) -> None:
    """With filters pushed to Lance the aggregate is Spark's (their columns would group)."""
    table, memory = written
    options = lance_options(adapter()[0], table, pushdown="true")
    pushed = spark_session().read.format("lance").options(**options).load()
    query = GROUPED["with no grouping"]
    filtered = query(pushed.where("bucket < 3"))
    assert partial_columns(filtered) == []
    assert_same_answer(lambda df: query(df.where("bucket < 3")), pushed, memory)


def test_a_task_groups_its_input_in_chunks_of_bounded_size() -> None:
    """Each chunk of input is grouped on its own (Spark merges the chunks' partials)."""
    names = ["k", "__lance_aggregate:count:*", "__lance_aggregate:max:x"]
    output = pa.schema([("k", pa.int32()), (names[1], pa.int64()), (names[2], pa.float32())])
    partials = {name: partial_aggregate(name) for name in names[1:]}
    batch = pa.record_batch(
        {
            "k": pa.array([1, 1, 2, 2], pa.int32()),
            "x": pa.array([1, float("nan"), 3, 4], pa.float32()),
        }
    )
    aggregation = PartialAggregation(output, partials, chunk_bytes=batch.nbytes * 2)
    chunks = list(aggregation.aggregated([batch, batch, batch]))
    assert [chunk.num_rows for chunk in chunks] == [2, 2]
    assert chunks[0].schema == output
    first = chunks[0].to_pydict()
    assert first["k"] == [1, 2] and first[names[1]] == [4, 4]
    assert math.isnan(first[names[2]][0]) and first[names[2]][1] == 4.0
    assert chunks[1].to_pydict()[names[1]] == [2, 2]


def test_an_aggregated_read_packs_fragments_by_the_bytes_it_scans(
    written: tuple[str, DataFrame],
) -> None:
    """Tasks of an aggregated read each scan up to AGGREGATED_BYTES_PER_PARTITION of the
    columns they read (4-byte bucket, 8-byte price: 12 bytes a row; with the 16-byte vector v
    instead: 20), unless `rows_per_partition` says otherwise; other reads keep the default
    rows per task."""
    table, _ = written
    bucket = StructField("bucket", IntegerType())
    prefix = AGGREGATE_COLUMN_PREFIX

    def reader(fields: list[StructField], **options: object) -> Any:
        source = LanceDataSource(lance_options(adapter()[0], table, **options))
        source.schema()
        return source.reader(StructType(fields))

    average = [StructField(f"{prefix}sum:price", DoubleType()),
               StructField(f"{prefix}count:price", LongType())]
    element = [StructField(f"{prefix}max:__lance_element:0:v", FloatType())]
    assert reader([bucket, StructField("price", DoubleType())])._rows_per_partition() == (
        DEFAULT_ROWS_PER_PARTITION)
    assert reader([bucket, *average])._rows_per_partition() == (
        aggregated_rows_per_partition(12))
    assert reader([bucket, *element])._rows_per_partition() == (
        aggregated_rows_per_partition(20))
    assert reader([bucket, *average], rows_per_partition=1000)._rows_per_partition() == 1000
    assert len(reader([bucket, *average], rows_per_partition=1000).partitions()) == 4
    assert len(reader([bucket, *average], rows_per_partition=4000).partitions()) == 1
    # The rule itself, with the sizes of the test table: 24,000 bytes a task.
    assert aggregated_rows_per_partition(12, 1000, 24_000) == 2000
    assert aggregated_rows_per_partition(20, 1000, 24_000) == 1200
    assert aggregated_rows_per_partition(48, 1000, 24_000) == 1000  # never below the default

def test_names_that_are_not_partial_aggregates_are_refused() -> None:
    prefix = AGGREGATE_COLUMN_PREFIX
    assert partial_aggregate(f"{prefix}max:__lance_element:0:v").source == "__lance_element:0:v"
    for name in ["price", f"{prefix}median:x", f"{prefix}max:*", f"{prefix}count", f"{prefix}sum:"]:
        assert partial_aggregate(name) is None
