"""Every supported Spark type survives a write to Lance and a read back, cell by cell."""

from __future__ import annotations

import datetime
from decimal import Decimal

import lance
import pyarrow as pa
import pytest
from lance.namespace import RestNamespace
from pyspark.errors import AnalysisException, PythonException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, FloatType, StructField, StructType

import lance_adapter_spark
from tests.support.pipeline import first_difference, lance_options, sorted_arrow, write_with_pylance

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

    # Vectors come back as arrays without null elements (docs/spark.md: Types); all else as written.
    expected_schema = StructType(
        [
            StructField(f.name, ArrayType(FloatType(), False), f.nullable)
            if f.name == "embedding"
            else f
            for f in source.schema
        ]
    )
    assert back.schema == expected_schema
    expected = sorted_arrow(source)
    embedding_index = expected.schema.get_field_index("embedding")
    expected = expected.cast(
        expected.schema.set(embedding_index, sorted_arrow(back).schema.field("embedding"))
    )
    difference = first_difference(expected, sorted_arrow(back))
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

    with pytest.raises(PythonException, match="vector column 'v' has a row whose length is not 3"):
        shorter.write.format("lance").options(**options).mode("append").save()
    assert lance_adapter_spark.save_table(df, table_name, mode="append", **_uri(adapter_url, "v:3"))
    reader = spark.read.format("lance").options(**lance_options(adapter_url, table_name))
    # Vectors read as arrays without null elements; row 7 has one, and says so.
    with pytest.raises(PythonException, match="vector column 'v' has a null element"):
        reader.load().collect()
    nullable = reader.schema("id BIGINT, v ARRAY<FLOAT>").load()
    assert nullable.where("id = 7").first().v == [1.0, 2.0, None]
    assert nullable.count() == 10


def _uri(url: str, vectors: str) -> dict[str, str]:
    return {"uri": url, "vector_columns": vectors}


NANOS = 1_700_000_000_123_456_789  # a timestamp with digits below the microsecond
ARROW_ONLY_TYPES = pa.table(
    {
        "id": pa.array([0, 1, 2, 3], pa.int64()),
        "code": pa.array(["a", "bb", None, "a"]).dictionary_encode(),
        "u8": pa.array([0, 255, None, 7], pa.uint8()),
        "u16": pa.array([0, 65535, None, 7], pa.uint16()),
        "u32": pa.array([0, 2**32 - 1, None, 7], pa.uint32()),
        "u64": pa.array([0, 2**64 - 1, None, 7], pa.uint64()),
        "half": pa.array([0.5, -2.25, None, 65504], pa.float16()),
        "day64": pa.array([0, 86_400_000 * 19_000, None, -86_400_000], pa.date64()),
        "clock": pa.array([0, 86_399_999_999_999, None, 1_001], pa.time64("ns")),
        "clock_ms": pa.array([0, 86_399_999, None, 1], pa.time32("ms")),
        "at_ns": pa.array([0, NANOS, None, -1_001], pa.timestamp("ns", tz="UTC")),
        "local_ns": pa.array([0, NANOS, None, 1_001], pa.timestamp("ns")),
        "nested": pa.array(
            [{"n": 1, "tag": "x"}, None, {"n": 2**32 - 1, "tag": None}, {"n": None, "tag": "y"}],
            pa.struct([("n", pa.uint32()), ("tag", pa.dictionary(pa.int8(), pa.utf8()))]),
        ),
    }
)


def expected_spark_rows() -> list[tuple]:
    """What the documented mapping (docs/spark.md: Types) makes of each cell;
    Spark returns timestamps as naive datetimes in the session's time zone (UTC here)."""
    epoch = datetime.datetime(1970, 1, 1)
    return [
        (0, "a", 0, 0, 0, Decimal(0), 0.5, datetime.date(1970, 1, 1), datetime.time(0, 0),
         datetime.time(0, 0), epoch, epoch, (1, "x")),
        (1, "bb", 255, 65535, 2**32 - 1, Decimal(2**64 - 1), -2.25,
         datetime.date(1970, 1, 1) + datetime.timedelta(days=19_000),
         datetime.time(23, 59, 59, 999_999), datetime.time(23, 59, 59, 999_000),
         datetime.datetime(2023, 11, 14, 22, 13, 20, 123_456),
         datetime.datetime(2023, 11, 14, 22, 13, 20, 123_456), None),
        (2, None, None, None, None, None, None, None, None, None, None, None, (2**32 - 1, None)),
        (3, "a", 7, 7, 7, Decimal(7), 65504.0, datetime.date(1969, 12, 31),
         datetime.time(0, 0, 0, 1), datetime.time(0, 0, 0, 1_000),
         # Truncated toward zero, as pyspark converts nanoseconds.
         epoch - datetime.timedelta(microseconds=1),
         epoch + datetime.timedelta(microseconds=1), (None, "y")),
    ]  # fmt: skip


def test_every_arrow_type_of_a_pylance_table_reads_cell_for_cell(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    write_with_pylance(adapter_url, table_name, ARROW_ONLY_TYPES)

    back = spark.read.format("lance").options(**lance_options(adapter_url, table_name)).load()

    assert [(f.name, f.dataType.simpleString()) for f in back.schema] == [
        ("id", "bigint"), ("code", "string"), ("u8", "smallint"), ("u16", "int"),
        ("u32", "bigint"), ("u64", "decimal(20,0)"), ("half", "float"), ("day64", "date"),
        ("clock", "time(6)"), ("clock_ms", "time(6)"), ("at_ns", "timestamp"),
        ("local_ns", "timestamp_ntz"), ("nested", "struct<n:bigint,tag:string>"),
    ]  # fmt: skip
    rows = [tuple(row) for row in back.orderBy("id").collect()]
    expected = expected_spark_rows()
    for got, want in zip(rows, expected, strict=True):
        for name, a, b in zip(ARROW_ONLY_TYPES.column_names, got, want, strict=True):
            assert a == b, f"column {name!r}, id={got[0]}: expected {b!r}, read {a!r}"


def test_columns_left_out_are_never_converted(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    data = pa.table({"id": pa.array([1, 2]), "span": pa.array([3, None], pa.duration("s"))})
    write_with_pylance(adapter_url, table_name, data)
    options = lance_options(adapter_url, table_name)

    pruned = spark.read.format("lance").options(**options, columns="id").load()
    assert sorted(row.id for row in pruned.collect()) == [1, 2]
    with pytest.raises(AnalysisException, match="column 'span' has type duration"):
        spark.read.format("lance").options(**options).load()
