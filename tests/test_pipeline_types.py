"""Every supported Spark type survives a write to Lance and a read back, cell by cell."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest
from lance.namespace import RestNamespace
from pyspark.sql import DataFrame, SparkSession

import pipeline
from tests import pipeline_support
from tests.pipeline_support import first_difference, lance_options, sorted_arrow

# The shared fixtures, under the names the tests ask for.
spark = pipeline_support.spark
adapter_url = pipeline_support.adapter_url
table_name = pipeline_support.table_name

ROWS = 100_000
VECTOR_SIZE = 8

# One column per supported type, with nulls, extremes, unicode and nesting.
ALL_TYPES_COLUMNS = {
    "flag": "IF(id % 7 = 0, NULL, id % 2 = 0)",
    "tiny": "CAST(id % 256 - 128 AS TINYINT)",
    "small": "IF(id % 11 = 0, NULL, CAST(id % 65536 - 32768 AS SMALLINT))",
    "num": "CAST(IF(id = 1, 2147483647, IF(id = 2, -2147483648, id * 37)) AS INT)",
    "big": "IF(id = 3, 9223372036854775807, IF(id = 4, -9223372036854775808, id * id))",
    "real": "IF(id % 13 = 0, NULL, CAST(id / 3.0 AS FLOAT))",
    "dbl": "IF(id = 5, CAST('Infinity' AS DOUBLE), id * 1.0e-3 - 17.25)",
    "money": "IF(id % 5 = 0, NULL, CAST(id * 12345.6789 - 1e9 AS DECIMAL(38, 10)))",
    "price": "CAST(id % 100000 / 100.0 AS DECIMAL(9, 2))",
    "day": "IF(id % 17 = 0, NULL, DATE_ADD(DATE'1900-01-01', CAST(id % 80000 AS INT)))",
    "at": "TIMESTAMP_MICROS(id * 1234567891 - 500000000000000)",
    "local_at": "CAST(TIMESTAMP_MICROS(id * 987654321) AS TIMESTAMP_NTZ)",
    "label": "IF(id % 19 = 0, NULL, CONCAT('row-', id, IF(id % 3 = 0, ' ünï ✓', '')))",
    "blob": "IF(id % 23 = 0, NULL, UNHEX(HEX(id * 31)))",
    "ints": "IF(id % 29 = 0, NULL, ARRAY(CAST(id AS INT), NULL, CAST(-id AS INT)))",
    "words": "SLICE(ARRAY('a', 'bb', NULL, 'dddd'), 1, CAST(id % 5 AS INT))",
    "point": (
        # Fields are nullable: pyspark's toArrow cannot convert null structs otherwise.
        "IF(id % 31 = 0, NULL, NAMED_STRUCT('x', IF(id % 4 = 1, NULL, CAST(id AS INT)),"
        " 'name', IF(id % 4 = 2, NULL, CAST(id AS STRING)),"
        " 'tags', IF(id % 4 = 3, NULL, ARRAY(id * 0.5, NULL))))"
    ),
    "attrs": "IF(id % 37 = 0, NULL, MAP('k', CAST(id AS INT), 'n', IF(id % 2 = 0, NULL, 1)))",
    "embedding": (
        "TRANSFORM(SEQUENCE(1, " + str(VECTOR_SIZE) + "), i -> CAST(id * i / 7.0 AS FLOAT))"
    ),
}


def all_types_frame(spark: SparkSession, rows: int) -> DataFrame:
    columns = [f"{expression} AS {name}" for name, expression in ALL_TYPES_COLUMNS.items()]
    return spark.range(rows).selectExpr("id", *columns).repartition(4)


def test_round_trip_of_every_supported_type(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    source = all_types_frame(spark, ROWS).cache()
    options = lance_options(adapter_url, table_name, vector_columns=f"embedding:{VECTOR_SIZE}")
    source.write.format("lance").options(**options).mode("append").save()

    back = spark.read.format("lance").options(**lance_options(adapter_url, table_name)).load()

    assert back.schema == source.schema
    difference = first_difference(sorted_arrow(source), sorted_arrow(back))
    assert difference is None, difference
    stored = lance.dataset(namespace_client=RestNamespace(uri=adapter_url), table_id=[table_name])
    assert stored.schema.field("embedding").type == pa.list_(
        pa.field("item", pa.float32()), VECTOR_SIZE
    )
    assert stored.count_rows() == ROWS
    source.unpersist()


def test_read_is_one_partition_per_fragment_group(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    df = spark.range(1000).repartition(5)
    df.write.format("lance").options(**lance_options(adapter_url, table_name)).mode("append").save()
    options = lance_options(adapter_url, table_name)

    def partitions(rows_per_partition: int) -> int:
        grouped = {**options, "rows_per_partition": str(rows_per_partition)}
        return spark.read.format("lance").options(**grouped).load().rdd.getNumPartitions()

    # Five fragments of 200 rows: one partition each, or packed up to the row budget.
    assert partitions(200) == 5
    assert partitions(450) == 3
    assert partitions(1_000_000) == 1


def test_vector_of_wrong_length_is_refused(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    df = spark.range(10).selectExpr("id", "ARRAY(1.0F, 2.0F, IF(id = 7, NULL, 3.0F)) AS v")
    shorter = df.selectExpr("id", "IF(id = 7, ARRAY(1.0F), v) AS v")
    options = lance_options(adapter_url, table_name, vector_columns="v:3")

    with pytest.raises(Exception, match="vector column 'v' has a row whose length is not 3"):
        shorter.write.format("lance").options(**options).mode("append").save()
    assert pipeline.save_table(df, table_name, mode="append", **_uri(adapter_url, "v:3"))
    assert (
        spark.read.format("lance").options(**lance_options(adapter_url, table_name)).load().count()
        == 10
    )


def _uri(url: str, vectors: str) -> dict[str, str]:
    return {"uri": url, "vector_columns": vectors}
