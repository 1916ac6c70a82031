"""Column pruning and count() from fragment metadata (lance_adapter_spark/pruning.py and
the rule lance_adapter_spark/jvm/PruneLanceColumns.java), on a real local Spark session."""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Callable
from pathlib import Path

import lance
import pytest
from lance.namespace import RestNamespace
from pyspark.errors import ArrayIndexOutOfBoundsException, PythonException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from lance_adapter_spark import pruning
from lance_adapter_spark.aggregates import partial_aggregate
from lance_adapter_spark.options import parse_options
from lance_adapter_spark.read import (
    ELEMENT_COLUMN_PREFIX,
    ROW_COUNT_COLUMN,
    TableRowCount,
    UnfilteredLanceReader,
    pin_table,
)
from tests.support.pipeline import lance_options
from tests.test_spark_read import plan_of

ROWS = 3000


def write_table(spark: SparkSession, url: str, table: str) -> lance.LanceDataset:
    frame = spark.range(ROWS, numPartitions=3).selectExpr(
        "id", "CAST(id % 10 AS INT) AS bucket", "CONCAT('name-', id) AS name"
    )
    frame.write.format("lance").options(**lance_options(url, table)).mode("append").save()
    return dataset(url, table)


def dataset(url: str, table: str) -> lance.LanceDataset:
    return lance.dataset(namespace_client=RestNamespace(uri=url), table_id=[table])


def load(spark: SparkSession, url: str, table: str, **options: object) -> DataFrame:
    return spark.read.format("lance").options(**lance_options(url, table, **options)).load()


def scanned_columns(df: DataFrame) -> str:
    """The columns of the scan in `df`'s plan, e.g. `lance[id#1L]`."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    lines = plan.splitlines()
    scans = {line.strip(" +-*()0123456789") for line in lines if "BatchScan lance" in line}
    assert len(scans) == 1, plan  # the same scan in AQE's initial and final plans
    scan = scans.pop()
    return scan[scan.index("lance") : scan.index("]") + 1]


def jobs_run_by(spark: SparkSession, action: Callable[[], object]) -> tuple[object, int]:
    """What `action` returns and how many Spark jobs it ran."""
    context = spark.sparkContext
    group = f"probe-{uuid.uuid4().hex}"
    context.setJobGroup(group, group)
    try:
        result = action()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return result, len(context.statusTracker().getJobIdsForGroup(group))


def remove_data_files(table: lance.LanceDataset) -> int:
    """Delete every column data file of `table` (its manifests and deletion files stay)."""
    data_files = list(Path(table.uri, "data").glob("*.lance"))
    for data_file in data_files:
        data_file.unlink()
    return len(data_files)


def test_count_reads_no_column_data(spark: SparkSession, adapter_url: str, table_name: str) -> None:
    """With every data file gone, count() still answers: it read nothing but metadata,
    while any read of a column fails."""
    table = write_table(spark, adapter_url, table_name)
    df = load(spark, adapter_url, table_name)
    # Planned from metadata into the plan itself: no scan, and no job runs for it.
    count_plan = df.groupBy().count()._jdf.queryExecution().executedPlan().toString()
    assert count_plan.startswith("LocalTableScan") and "BatchScan" not in count_plan, count_plan
    assert jobs_run_by(spark, lambda: df.select("id").collect())[1] > 0
    assert remove_data_files(table) == 3

    assert jobs_run_by(spark, df.count) == (ROWS, 0)
    df.createOrReplaceTempView(table_name)
    counted = jobs_run_by(spark, spark.sql(f"SELECT COUNT(*) AS n FROM {table_name}").collect)
    assert (counted[0][0].n, counted[1]) == (ROWS, 0)  # type: ignore[index]
    with pytest.raises(PythonException, match=r"Not found: .*/data/\w+\.lance"):  # its files
        df.select("bucket").collect()


def test_a_task_handed_the_planned_count_answers_it(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    """Where the rule cannot take the count out of the planned partition, a task reads
    the partition, and it answers the same number."""
    write_table(spark, adapter_url, table_name)
    options = parse_options(lance_options(adapter_url, table_name))
    pinned = pin_table(options)
    schema = StructType([StructField(ROW_COUNT_COLUMN, LongType(), nullable=False)])
    reader = UnfilteredLanceReader(pinned, schema, options)
    (planned,) = reader.partitions()
    assert isinstance(planned, TableRowCount) and planned.rows == ROWS
    (batch,) = reader.read(pickle.loads(pickle.dumps(planned)))
    assert batch.to_pydict() == {ROW_COUNT_COLUMN: [ROWS]}


@pytest.mark.parametrize("deleted", ["id % 7 = 0 OR id >= 2900", "true"])
def test_count_after_a_delete_is_exact(
    spark: SparkSession, adapter_url: str, table_name: str, deleted: str
) -> None:
    table = write_table(spark, adapter_url, table_name)
    first_version = table.version
    table.delete(deleted)
    expected = dataset(adapter_url, table_name).count_rows()
    assert expected == (0 if deleted == "true" else 2900 - len(range(0, 2900, 7)))
    df = load(spark, adapter_url, table_name)
    assert df.count() == expected
    df.createOrReplaceTempView(table_name)
    assert spark.sql(f"SELECT COUNT(*) AS n FROM {table_name}").collect()[0].n == expected
    # The version before the delete still counts every row, and a filter no row passes none.
    before = load(spark, adapter_url, table_name, version=first_version)
    assert before.count() == ROWS
    assert before.where("id < 0").count() == 0


def test_a_filtered_count_reads_only_the_filters_columns(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    write_table(spark, adapter_url, table_name)
    for pushdown in ("false", "true"):
        df = load(spark, adapter_url, table_name, pushdown=pushdown)
        filtered = df.where("bucket = 3")
        assert filtered.count() == ROWS // 10
        scan = scanned_columns(filtered.groupBy().count())
        # Pushed or not, the filter needs its column (Spark resolves pushed filters in the
        # scan's columns) and nothing else.
        assert scan.startswith("lance[bucket#") and "id#" not in scan, scan
        assert ("PushedFilters" in plan_of(filtered)) == (pushdown == "true")


def test_a_count_after_a_pushed_filter_on_the_same_frame_counts_every_row(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    """Spark keeps the reader it planned for a pushed filter on the loaded relation; the
    count's rebuilt scan plans a reader of its own, so it does not count the filtered rows."""
    write_table(spark, adapter_url, table_name)
    df = load(spark, adapter_url, table_name, pushdown="true")
    assert df.where("bucket < 3").count() == ROWS * 3 // 10
    assert df.count() == ROWS


def test_queries_read_only_the_columns_they_use(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    write_table(spark, adapter_url, table_name)
    df = load(spark, adapter_url, table_name)
    names = df.where("id < 5").select("name")
    assert scanned_columns(names).startswith("lance[id#") and "bucket" not in scanned_columns(names)
    assert sorted(row.name for row in names.collect()) == [f"name-{i}" for i in range(5)]
    grouped = df.groupBy("bucket").count()
    assert scanned_columns(grouped).startswith("lance[bucket#")
    assert {row.bucket: row["count"] for row in grouped.collect()} == dict.fromkeys(
        range(10), ROWS // 10
    )
    assert scanned_columns(df).count("#") == 3  # all of them when all are used
    assert len(df.collect()) == ROWS


def test_counts_with_distinct_or_grouping_are_not_taken_from_metadata(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    write_table(spark, adapter_url, table_name)
    df = load(spark, adapter_url, table_name)
    df.createOrReplaceTempView(table_name)
    distinct = spark.sql(f"SELECT COUNT(DISTINCT bucket) AS n FROM {table_name}")
    assert distinct.collect()[0].n == 10
    assert ROW_COUNT_COLUMN not in scanned_columns(distinct)
    both = spark.sql(f"SELECT COUNT(*) AS n, MAX(id) AS top FROM {table_name}").collect()[0]
    assert (both.n, both.top) == (ROWS, ROWS - 1)
    ones = spark.sql(f"SELECT 1 AS one FROM {table_name}")
    assert scanned_columns(ones) == "lance[]"
    assert ones.count() == ROWS and len(ones.collect()) == ROWS


VECTOR_ROWS = 1000


def write_vectors(spark: SparkSession, url: str, table: str, vector: str) -> None:
    """`id`, `bucket` and `v`, a vector of 4 floats given by the SQL expression `vector`."""
    frame = spark.range(VECTOR_ROWS, numPartitions=2).selectExpr(
        "id", "CAST(id % 10 AS INT) AS bucket", f"{vector} AS v"
    )
    options = lance_options(url, table, vector_columns="v:4")
    frame.write.format("lance").options(**options).mode("append").save()


def scanned_names(df: DataFrame) -> list[str]:
    """The names of the scan's columns in `df`'s plan."""
    columns = scanned_columns(df).removeprefix("lance[").removesuffix("]")
    return [column.rsplit("#", 1)[0] for column in columns.split(", ")]


def element_columns(df: DataFrame) -> list[str]:
    """The scan's columns that each hold one element of a vector, or the partial aggregates
    of one (lance_adapter_spark/aggregates.py) when the query aggregates it by groups."""
    names = [
        partial.source if (partial := partial_aggregate(name)) else name
        for name in scanned_names(df)
    ]
    return [name for name in dict.fromkeys(names) if name.startswith(ELEMENT_COLUMN_PREFIX)]


def test_a_query_using_single_elements_of_a_vector_reads_only_those(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    """element_at(v, k) and v[k] with literal indexes read those elements, not the vector;
    a null vector gives null elements."""
    vector = "IF(id % 100 = 5, NULL, TRANSFORM(SEQUENCE(0, 3), i -> CAST(id * 4 + i AS FLOAT)))"
    write_vectors(spark, adapter_url, table_name, vector)
    df = load(spark, adapter_url, table_name)
    grouped = df.groupBy("bucket").agg(
        F.max(F.element_at("v", 1)).alias("first"),
        F.min(F.col("v")[3]).alias("last"),
        F.max(F.element_at("v", -2)).alias("third"),
        F.count(F.col("v")[0]).alias("present"),
    )
    prefix = ELEMENT_COLUMN_PREFIX
    assert set(element_columns(grouped)) == {f"{prefix}0:v", f"{prefix}3:v", f"{prefix}-2:v"}
    assert "v" not in scanned_names(grouped)
    expected = {}
    for bucket in range(10):
        ids = [i for i in range(bucket, VECTOR_ROWS, 10) if i % 100 != 5]
        expected[bucket] = (max(ids) * 4, min(ids) * 4 + 3, max(ids) * 4 + 2, len(ids))
    rows = grouped.collect()
    assert {r.bucket: (r.first, r.last, r.third, r.present) for r in rows} == expected

    # Through a filter on another column; a null vector's element is null.
    picked = df.where("id IN (4, 5)").select("id", F.element_at("v", 2).alias("second"))
    assert element_columns(picked) == [f"{prefix}1:v"]
    assert sorted(picked.collect()) == [(4, 17.0), (5, None)]


def test_vectors_used_otherwise_are_read_whole(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    """A vector used whole, filtered on, indexed past its size or given a schema that
    allows null elements is read whole, and Spark answers or fails as it would anyway."""
    vector = "TRANSFORM(SEQUENCE(0, 3), i -> CAST(id * 4 + i AS FLOAT))"
    write_vectors(spark, adapter_url, table_name, vector)
    df = load(spark, adapter_url, table_name)
    whole = df.where("id = 2").select(F.col("v")[0].alias("first"), "v")
    assert element_columns(whole) == [] and "v" in scanned_names(whole)
    assert whole.collect() == [(8.0, [8.0, 9.0, 10.0, 11.0])]
    filtered = df.where(F.col("v")[0] > 3990).select(F.col("v")[1].alias("second"))
    assert element_columns(filtered) == [] and filtered.collect() == [(3993.0,), (3997.0,)]
    past_end = [
        (F.element_at("v", 5), "INVALID_ARRAY_INDEX_IN_ELEMENT_AT"),
        (F.col("v")[4], r"INVALID_ARRAY_INDEX\]"),
    ]
    for element, error in past_end:
        past = df.select(element)
        assert element_columns(past) == [] and "v" in scanned_names(past)
        with pytest.raises(ArrayIndexOutOfBoundsException, match=error):
            past.collect()
    nullable = spark.read.format("lance").options(**lance_options(adapter_url, table_name))
    nullable = nullable.schema("id BIGINT, v ARRAY<FLOAT>").load()
    second = nullable.where("id = 1").select(F.col("v")[1])
    assert element_columns(second) == [] and second.collect() == [(5.0,)]


def test_an_element_of_a_vector_holding_a_null_element_fails_as_the_vector_would(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    vector = "ARRAY(1.0F, 2.0F, 3.0F, IF(id = 7, NULL, 4.0F))"
    table = spark.range(10).selectExpr("id", "CAST(id AS INT) AS bucket", f"{vector} AS v")
    options = lance_options(adapter_url, table_name, vector_columns="v:4")
    table.write.format("lance").options(**options).mode("append").save()
    first = load(spark, adapter_url, table_name).select(F.element_at("v", 1))
    assert element_columns(first) == [f"{ELEMENT_COLUMN_PREFIX}0:v"]
    with pytest.raises(PythonException, match="vector column 'v' has a null element"):
        first.collect()


def test_without_javac_pruning_is_off_with_a_warning(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(pruning.PruningUnavailable, match="no javac"):
        pruning.javac(str(tmp_path))
    monkeypatch.setattr(pruning, "javac", lambda _home: str(tmp_path / "javac"))
    monkeypatch.setattr(pruning, "RULE_SOURCE", tmp_path / "Changed.java")
    (tmp_path / "Changed.java").write_text("class Changed {}")
    with pytest.warns(UserWarning, match="column pruning is off: javac did not run"):
        assert pruning.install_column_pruning(spark, "lance") is False
