"""Write modes, task failures and concurrent writers of the `lance` data source."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance.namespace import RestNamespace
from pyspark import TaskContext
from pyspark.errors import AnalysisException, PythonException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

import lance_adapter_spark
from lance_adapter_spark.tables import WRITTEN_MARKERS
from tests.support.pipeline import adapter, lance_options, run_concurrently, write_with_pylance


def ids_frame(spark: SparkSession, start: int, end: int, partitions: int = 2) -> DataFrame:
    return spark.range(start, end, numPartitions=partitions).selectExpr(
        "id", "CAST(id AS STRING) AS label"
    )


def stored_ids(url: str, table: str) -> list[int]:
    dataset = lance.dataset(namespace_client=RestNamespace(uri=url), table_id=[table])
    return sorted(dataset.to_table(columns=["id"]).column("id").to_pylist())


def table_versions(url: str, table: str) -> int:
    dataset = lance.dataset(namespace_client=RestNamespace(uri=url), table_id=[table])
    return len(dataset.versions())


def data_files(table: str) -> list[Path]:
    """The table's data files, and any marker of a write job still on storage."""
    return table_data_files(adapter()[1], table)


def table_data_files(root: Path, table: str) -> list[Path]:
    """`data_files` under `root`, for a Spark task that has no adapter of its own."""
    return sorted(
        path
        for path in root.rglob("*.lance")
        if path.parent.name == "data" and path.parent.parent.name.endswith(f"{table}.lance")
    ) + sorted(root.glob(f"**/{table}.lance/{WRITTEN_MARKERS}/*/*"))


def test_append_then_overwrite(spark: SparkSession, adapter_url: str, table_name: str) -> None:
    options = lance_options(adapter_url, table_name)
    ids_frame(spark, 0, 100).write.format("lance").options(**options).mode("append").save()
    ids_frame(spark, 100, 250).write.format("lance").options(**options).mode("append").save()
    assert stored_ids(adapter_url, table_name) == list(range(250))

    ids_frame(spark, 1000, 1010).write.format("lance").options(**options).mode("overwrite").save()
    assert stored_ids(adapter_url, table_name) == list(range(1000, 1010))
    # An empty first version creates the table; then one commit per Spark job.
    assert table_versions(adapter_url, table_name) == 4


def test_error_if_exists_and_ignore(spark: SparkSession, adapter_url: str, table_name: str) -> None:
    first, second = ids_frame(spark, 0, 10), ids_frame(spark, 10, 20)
    assert lance_adapter_spark.save_table(first, table_name, mode="errorifexists", uri=adapter_url)
    with pytest.raises(lance_adapter_spark.LanceSourceError, match="already exists"):
        lance_adapter_spark.save_table(second, table_name, mode="errorifexists", uri=adapter_url)
    ignored = lance_adapter_spark.save_table(second, table_name, mode="ignore", uri=adapter_url)
    assert ignored is False
    assert stored_ids(adapter_url, table_name) == list(range(10))

    # The same modes through the plain format, where Spark only knows append/overwrite.
    options = lance_options(adapter_url, table_name)
    writer = second.write.format("lance").options(**options).mode("append")
    with pytest.raises(AnalysisException, match="already exists"):
        writer.option("write_mode", "errorifexists").save()
    writer.option("write_mode", "ignore").save()
    assert stored_ids(adapter_url, table_name) == list(range(10))
    assert table_versions(adapter_url, table_name) == 2


def failing_first_attempt(marker: Path):
    """An identity UDF for ids; partition 1 raises on its first attempt, in mid-stream."""

    def identity(row_id: int) -> int:
        context = TaskContext.get()
        if context.partitionId() == 1 and context.attemptNumber() == 0 and row_id == 17_000:
            marker.touch()
            raise RuntimeError("injected failure on the first attempt")
        return row_id

    return F.udf(identity, LongType())


def test_task_retried_after_failure_leaves_exactly_the_successful_rows(
    spark: SparkSession, adapter_url: str, table_name: str, tmp_path: Path
) -> None:
    marker = tmp_path / "failed-once"
    flaky_id = failing_first_attempt(marker)
    frame = ids_frame(spark, 0, 20_000, partitions=2).withColumn("id", flaky_id("id"))
    # Small files, so that the failed attempt has finished some before it fails.
    options = lance_options(adapter_url, table_name, max_rows_per_file=1500)
    frame.write.format("lance").options(**options).mode("append").save()

    assert marker.exists(), "the injected failure did not happen"
    assert stored_ids(adapter_url, table_name) == list(range(20_000))
    # The failed attempt's files were removed: every data file belongs to the commit.
    dataset = lance.dataset(namespace_client=RestNamespace(uri=adapter_url), table_id=[table_name])
    committed = {f.path for fragment in dataset.get_fragments() for f in fragment.data_files()}
    assert {path.name for path in data_files(table_name)} == committed


def failing_once_partition_zero_wrote(table: str, files_before: int) -> Any:
    """A UDF whose partition 1 fails on every attempt, once partition 0's data file is on
    storage (or after a minute, which the test then reports)."""
    root = adapter()[1]

    def failing_id(row_id: int) -> int:
        if TaskContext.get().partitionId() == 1 and row_id == 4000:
            deadline = time.monotonic() + 60
            while len(table_data_files(root, table)) <= files_before:
                if time.monotonic() > deadline:
                    raise RuntimeError("boom, but partition 0 never wrote")
                time.sleep(0.05)
            raise RuntimeError("boom")
        return row_id

    return F.udf(failing_id, LongType())


def test_failed_job_leaves_no_rows_and_no_files(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    options = lance_options(adapter_url, table_name)
    ids_frame(spark, 0, 10).write.format("lance").options(**options).mode("append").save()
    files_before = data_files(table_name)
    failing_id = failing_once_partition_zero_wrote(table_name, len(files_before))
    broken = ids_frame(spark, 10, 5000, partitions=2).withColumn("id", failing_id("id"))
    with pytest.raises(PythonException, match="boom") as failure:
        broken.write.format("lance").options(**options).mode("append").save()
    assert "never wrote" not in str(failure.value)
    assert stored_ids(adapter_url, table_name) == list(range(10))
    # Partition 0's finished files were reported, so the abort deleted them.
    assert data_files(table_name) == files_before


def test_two_jobs_write_two_tables_concurrently(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    names = [f"{table_name}_a", f"{table_name}_b"]
    run_concurrently(
        [
            lambda: lance_adapter_spark.save_table(
                ids_frame(spark, 0, 3000), names[0], uri=adapter_url
            ),
            lambda: lance_adapter_spark.save_table(
                ids_frame(spark, 5000, 7000), names[1], uri=adapter_url
            ),
        ]
    )
    assert stored_ids(adapter_url, names[0]) == list(range(3000))
    assert stored_ids(adapter_url, names[1]) == list(range(5000, 7000))


def test_two_writers_appending_to_one_table_lose_no_rows(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    options = lance_options(adapter_url, table_name)
    ids_frame(spark, 0, 10).write.format("lance").options(**options).mode("append").save()

    def append(start: int) -> None:
        frame = ids_frame(spark, start, start + 2000, partitions=2)
        lance_adapter_spark.save_table(frame, table_name, mode="append", uri=adapter_url)

    run_concurrently([lambda: append(1000), lambda: append(5000), lambda: append(9000)])
    expected = [*range(10), *range(1000, 3000), *range(5000, 7000), *range(9000, 11000)]
    assert stored_ids(adapter_url, table_name) == expected


def test_first_writers_of_a_new_table_lose_no_rows(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    """Real concurrent Spark jobs creating one new table; the adapter-level race test
    (test_spark_race.py) repeats the same race many more times, without Spark."""

    def append(table: str, start: int) -> None:
        # The plain format in a new thread needs the session activated there.
        lance_adapter_spark.activate(spark)
        frame = ids_frame(spark, start, start + 500)
        writer = frame.write.format("lance").options(**lance_options(adapter_url, table))
        writer.mode("append").save()

    for repetition in range(3):
        table = f"{table_name}_{repetition}"
        run_concurrently([lambda t=table: append(t, 0), lambda t=table: append(t, 1000)])
        assert stored_ids(adapter_url, table) == [*range(500), *range(1000, 1500)]


def test_nulls_into_a_non_null_column_are_refused_clearly(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    write_with_pylance(adapter_url, table_name, pa.table({"id": [1, 2]}, schema=schema))
    with_null = spark.range(10, 15).selectExpr("IF(id = 13, NULL, id) AS id")

    with pytest.raises(
        lance_adapter_spark.LanceSourceError,
        match="column 'id' is not nullable in the table, but the Data",
    ):
        lance_adapter_spark.save_table(with_null, table_name, mode="append", uri=adapter_url)
    assert stored_ids(adapter_url, table_name) == [1, 2]
    assert len(data_files(table_name)) == 1
