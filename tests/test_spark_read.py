"""Reads: filters and projections against pyarrow, pinned versions, time travel, errors."""

from __future__ import annotations

import datetime

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lance.namespace import RestNamespace
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

import lance_adapter_spark
from tests.support.common import run_python
from tests.support.pipeline import REPO_ROOT, adapter, lance_options

ROWS = 5000


def write_sample(spark: SparkSession, url: str, table: str) -> None:
    frame = spark.range(ROWS, numPartitions=3).selectExpr(
        "id",
        "CAST(id % 100 AS INT) AS bucket",
        "IF(id % 9 = 0, NULL, CONCAT(IF(id % 2 = 0, 'even-', 'odd-'), id)) AS label",
        "DATE_ADD(DATE'2024-01-01', CAST(id % 366 AS INT)) AS day",
        "id % 3 = 0 AS flag",
        "id * 0.25 AS score",
    )
    frame.write.format("lance").options(**lance_options(url, table)).mode("append").save()


def stored_table(url: str, table: str) -> pa.Table:
    return lance.dataset(namespace_client=RestNamespace(uri=url), table_id=[table]).to_table()


def load(spark: SparkSession, url: str, table: str, **options: object) -> DataFrame:
    return spark.read.format("lance").options(**lance_options(url, table, **options)).load()


def plan_of(df: DataFrame) -> str:
    return df._jdf.queryExecution().executedPlan().toString() + "\n" + _formatted(df)


def _formatted(df: DataFrame) -> str:
    return df._sc._jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "formatted")


CASES = [
    # (Spark condition, the same condition in pyarrow, filters Lance must receive)
    (
        "bucket > 90 AND label LIKE 'odd%'",
        lambda t: pc.and_(pc.greater(t["bucket"], 90), pc.starts_with(t["label"], "odd")),
        ["GreaterThan(bucket,90)", "StringStartsWith(label,odd)"],
    ),
    (
        "day >= DATE'2024-12-01' AND NOT flag",
        lambda t: pc.and_(
            pc.greater_equal(t["day"], pa.scalar(datetime.date(2024, 12, 1))),
            pc.invert(t["flag"]),
        ),
        ["GreaterThanOrEqual(day,2024-12-01)"],
    ),
    (
        "bucket IN (1, 2, 3) AND label IS NOT NULL AND label LIKE '%1'",
        lambda t: pc.and_(
            pc.and_(
                pc.is_in(t["bucket"], pa.array([1, 2, 3], pa.int32())), pc.is_valid(t["label"])
            ),
            pc.ends_with(t["label"], "1"),
        ),
        ["In(bucket, [1,2,3])", "IsNotNull(label)", "StringEndsWith(label,1)"],
    ),
    (
        "label IS NULL OR score > 1200",  # an OR: not offered to the source, Spark filters
        lambda t: pc.or_kleene(pc.is_null(t["label"]), pc.greater(t["score"], 1200)),
        [],
    ),
]


@pytest.mark.parametrize("condition, arrow_condition, pushed", CASES)
def test_filters_and_projections_match_pyarrow(
    spark: SparkSession, adapter_url: str, condition: str, arrow_condition, pushed: list[str]
) -> None:
    table = "filter_sample"
    if not _exists(adapter_url, table):
        write_sample(spark, adapter_url, table)
    stored = stored_table(adapter_url, table)
    expected_rows = stored.filter(arrow_condition(stored))

    query = load(spark, adapter_url, table, pushdown="true")
    query = query.where(condition).select("id", "label", "day")
    actual = query.toArrow().sort_by("id")

    expected = expected_rows.select(["id", "label", "day"]).sort_by("id")
    assert actual.num_rows == expected.num_rows > 0
    assert actual.equals(expected.cast(actual.schema))
    plan = plan_of(query)
    for pushed_filter in pushed:
        assert pushed_filter in plan, plan
    if not pushed:  # Spark evaluates the whole condition itself
        assert "PushedFilters" not in plan and "Condition : " in plan, plan


def test_read_table_prunes_columns(spark: SparkSession, adapter_url: str, table_name: str) -> None:
    write_sample(spark, adapter_url, table_name)
    df = lance_adapter_spark.read_table(spark, table_name, uri=adapter_url, columns=["label", "id"])
    assert df.columns == ["label", "id"]
    assert "ReadSchema: struct<label:string,id:bigint>" in _formatted(df)
    expected = stored_table(adapter_url, table_name).select(["label", "id"])
    assert df.toArrow().sort_by("id").equals(expected.sort_by("id"))
    assert load(spark, adapter_url, table_name, columns="day").columns == ["day"]


def test_reads_stay_on_their_version_while_another_job_appends(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    options = lance_options(adapter_url, table_name)
    spark.range(100).write.format("lance").options(**options).mode("append").save()
    pinned = load(spark, adapter_url, table_name)
    assert pinned.count() == 100

    spark.range(100, 250).write.format("lance").options(**options).mode("append").save()

    assert pinned.count() == 100  # loaded before the append: same version for every job
    assert load(spark, adapter_url, table_name).count() == 250
    versions = lance.dataset(namespace_client=RestNamespace(uri=adapter_url), table_id=[table_name])
    first_with_rows = versions.version - 1
    old = load(spark, adapter_url, table_name, version=first_with_rows)
    assert sorted(row.id for row in old.collect()) == list(range(100))


def test_reading_a_missing_table_says_so(spark: SparkSession, adapter_url: str) -> None:
    with pytest.raises(
        lance_adapter_spark.LanceSourceError, match="table 'nowhere' does not exist"
    ):
        lance_adapter_spark.read_table(spark, "nowhere", uri=adapter_url)
    with pytest.raises(AnalysisException, match="table 'nowhere' does not exist"):
        load(spark, adapter_url, "nowhere").collect()


def test_unreachable_adapter_says_so(spark: SparkSession) -> None:
    dead = "http://127.0.0.1:9"
    unreachable = "cannot reach the Lance REST namespace"
    with pytest.raises(lance_adapter_spark.LanceSourceError, match=unreachable):
        lance_adapter_spark.read_table(spark, "t", uri=dead)
    with pytest.raises(lance_adapter_spark.LanceSourceError, match=unreachable):
        lance_adapter_spark.save_table(spark.range(3), "t", uri=dead)


def test_schema_mismatch_on_append_names_the_column(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    spark.range(5).selectExpr("id", "'a' AS label").write.format("lance").options(
        **lance_options(adapter_url, table_name)
    ).mode("append").save()
    wrong = spark.range(5).selectExpr("id", "id AS label")
    with pytest.raises(
        lance_adapter_spark.LanceSourceError, match="column 'label' is bigint in the DataFrame"
    ):
        lance_adapter_spark.save_table(wrong, table_name, mode="append", uri=adapter_url)
    extra = spark.range(5).selectExpr("id", "'b' AS label", "1 AS extra")
    with pytest.raises(AnalysisException, match="column 'extra' is not in the table"):
        extra.write.format("lance").options(**lance_options(adapter_url, table_name)).mode(
            "append"
        ).save()


def test_unsupported_type_says_so(spark: SparkSession, adapter_url: str, table_name: str) -> None:
    intervals = spark.range(3).selectExpr("id", "INTERVAL '1' YEAR AS span")
    with pytest.raises(
        lance_adapter_spark.LanceSourceError, match="column 'span' has type interval year"
    ):
        lance_adapter_spark.save_table(intervals, table_name, uri=adapter_url)


def _exists(url: str, table: str) -> bool:
    try:
        stored_table(url, table)
    except Exception:
        return False
    return True


def test_filtered_and_unfiltered_queries_are_both_right(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    """By default one loaded DataFrame serves a filtered, then an unfiltered query rightly;
    with pushdown on, a DataFrame per query (the documented way round Spark 4.3 reusing a
    filtered scan) is right too."""
    write_sample(spark, adapter_url, table_name)
    reused = load(spark, adapter_url, table_name)
    assert reused.where("bucket < 10").count() == ROWS // 10
    assert reused.count() == ROWS
    assert len(reused.where("bucket < 50").collect()) == ROWS // 2
    assert len(reused.collect()) == ROWS
    read = lambda: lance_adapter_spark.read_table(  # noqa: E731
        spark, table_name, uri=adapter_url, pushdown="true"
    )
    assert read().where("bucket < 10").count() == ROWS // 10
    assert read().count() == ROWS


def test_direct_implementation_and_adapter_see_the_same_table(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    root = adapter()[1]
    direct = {"table": table_name, "impl": "dir", "ns.root": str(root)}
    spark.range(42).write.format("lance").options(**direct).mode("append").save()

    assert load(spark, adapter_url, table_name).count() == 42
    assert spark.read.format("lance").options(**direct).load().count() == 42


def python_output(code: str) -> str:
    """What `code` prints in a fresh interpreter started at the repository root."""
    finished = run_python(code, cwd=REPO_ROOT)
    assert finished.returncode == 0, finished.stderr
    return finished.stdout


def test_read_tasks_import_neither_the_namespace_client_nor_the_write_side() -> None:
    # What a planning or read task unpickles: the source and the reader.
    code = (
        "import sys, lance_adapter_spark.source, lance_adapter_spark.read; "
        "print(sorted(m for m in sys.modules "
        "if m.startswith(('lance_namespace', 'lance_adapter_spark.'))))"
    )
    loaded = python_output(code).strip()
    assert "lance_namespace" not in loaded, loaded
    assert loaded == str(
        [
            "lance_adapter_spark.aggregates",
            "lance_adapter_spark.filters",
            "lance_adapter_spark.options",
            "lance_adapter_spark.read",
            "lance_adapter_spark.schema",
            "lance_adapter_spark.shared_storage",
            "lance_adapter_spark.source",
        ]
    )


def test_loading_through_a_rest_uri_imports_no_namespace_client(
    spark: SparkSession, adapter_url: str, table_name: str
) -> None:
    # What `load()` runs in a Python process of its own: the source's schema, which pins
    # the table. Through `uri` it asks pylance's native REST client, so a fresh session
    # does not pay for importing the Python namespace client there.
    write_sample(spark, adapter_url, table_name)
    code = (
        "import sys, lance_adapter_spark.source; "
        f"source = lance_adapter_spark.source.LanceDataSource({{'uri': {adapter_url!r}, "
        f"'table': {table_name!r}, 'columns': 'id,label'}}); "
        "print(source.schema().simpleString(), source.pinned.version); "
        "print(sorted(m for m in sys.modules if m.startswith('lance_namespace')))"
    )
    schema_line, modules_line = python_output(code).strip().splitlines()[-2:]
    assert schema_line == "struct<id:bigint,label:string> 2"
    assert modules_line == "[]"
