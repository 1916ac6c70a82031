"""Convenience entry points: register the source, save and read tables with clear errors.

The helpers check the table through the namespace in the calling process first, so the
mistakes a user makes (adapter down, table missing, schema mismatch, unsupported type,
table already there) raise one LanceSourceError instead of a wrapped Spark stack trace.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession

from lance_adapter_spark.cluster import check_executor_modules, package_zip, ship_package
from lance_adapter_spark.local_python import register_source
from lance_adapter_spark.options import LanceSourceError, parse_options
from lance_adapter_spark.pruning import install_column_pruning
from lance_adapter_spark.read import pin_table, pinned_options, read_schema
from lance_adapter_spark.schema import check_append_schema, lance_schema_for
from lance_adapter_spark.shared_storage import MASTER_ENV, is_local_master
from lance_adapter_spark.source import LanceDataSource
from lance_adapter_spark.spark_internals import (
    activate,
    check_supported,
    shipped_python_files,
    worker_environment,
)
from lance_adapter_spark.tables import inspect_table
from lance_adapter_spark.write import effective_mode

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
# Arrow Java checks bounds, and that a value is not null, on every element it hands Spark;
# without those checks a read of vector columns spends far less of the JVM's time copying
# them into Spark rows. Spark tests nullable values for null itself before reading them,
# and the reader fails on a null where the schema promises none (vector elements).
ARROW_JAVA_OPTIONS = (
    "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"
)


def session_conf() -> dict[str, str]:
    """Spark settings for sessions that read Lance: pass them to the session builder (the
    JVM options only take effect when the JVM starts), as
    `examples.spark_runtime.local_spark` does."""
    return {
        "spark.driver.extraJavaOptions": ARROW_JAVA_OPTIONS,
        "spark.executor.extraJavaOptions": ARROW_JAVA_OPTIONS,
    }


def register(spark: SparkSession, *, check_executors: bool = True) -> None:
    """Register the `lance` format and enable the filter pushdown it implements.

    It also ships this package to the executors (SparkContext.addPyFile, before the
    registration, which captures the files shipped so far) and, on a cluster, checks that
    the executors import pyarrow and pylance, failing at once with what to install (a read
    that also starts the executors' Python for the reads, `check_executor_modules`). In a
    local session the source's Python processes run PYSPARK_PYTHON or else this Python,
    through `local_python`'s launcher (`local_python.local_source_python`).
    """
    check_supported(spark)
    spark.conf.set(PUSHDOWN_CONF, "true")
    context = spark.sparkContext
    # The Python processes that plan reads and writes learn the master from here.
    worker_environment(context)[MASTER_ENV] = context.master
    os.environ[MASTER_ENV] = context.master
    ship_package(spark)
    register_source(spark, LanceDataSource)
    # After the registration, with the same environment: the check warms the reads' Python.
    if check_executors and not is_local_master(context.master):
        check_executor_modules(spark)
    install_column_pruning(spark, LanceDataSource.name())


def ensure_registered(spark: SparkSession) -> None:
    """Register (again) unless the package is shipped and the source registered after it,
    so that the helpers work whether or not, and when, `register` was called."""
    context = spark.sparkContext
    shipped = package_zip().name in shipped_python_files(context)
    if not shipped or worker_environment(context).get(MASTER_ENV) != context.master:
        register(spark)


def source_options(
    table: str,
    *,
    uri: str | None = None,
    impl: str | None = None,
    properties: Mapping[str, str] | None = None,
    **options: object,
) -> dict[str, str]:
    """The string options of the `lance` format for a table in a namespace."""
    result = {"table": table, **{k: str(v) for k, v in options.items() if v is not None}}
    if uri:
        result["uri"] = uri
    if impl:
        result["impl"] = impl
    result.update({f"ns.{key}": str(value) for key, value in (properties or {}).items()})
    return result


def save_table(
    df: DataFrame, table: str, *, mode: str = "errorifexists", **options: object
) -> bool:
    """Write `df` to `table` (saveAsTable-like); returns False when mode ignore skipped it."""
    ensure_registered(df.sparkSession)
    spark_options = source_options(table, write_mode=mode, **options)
    parsed = parse_options(spark_options)
    mode = effective_mode(parsed, overwrite=False)
    state = inspect_table(parsed)
    lance_schema_for(df.schema, {})  # raises on unsupported column types
    if state is not None and state.has_data:
        if mode == "errorifexists":
            raise LanceSourceError(
                f"table '{table}' already exists in {parsed.namespace_description}; "
                "use mode append, overwrite or ignore"
            )
        if mode == "ignore":
            return False
        if mode == "append":
            check_append_schema(df.schema, state.schema)
    spark_mode = "overwrite" if mode == "overwrite" else "append"
    activate(df.sparkSession)
    try:
        df.write.format("lance").options(**spark_options).mode(spark_mode).save()
    except Exception as error:
        raise _unwrapped(error) from error
    return True


def _unwrapped(error: Exception) -> Exception:
    """The LanceSourceError inside a Spark exception (raised by the source in a Python
    worker), so that the helpers raise one LanceSourceError; other errors unchanged."""
    found = re.search(r"LanceSourceError: ([^\n]+)", str(error))
    return LanceSourceError(found.group(1).strip()) if found else error


def read_table(
    spark: SparkSession,
    table: str,
    *,
    version: int | None = None,
    columns: list[str] | None = None,
    **options: object,
) -> DataFrame:
    """A DataFrame over `table` (optionally one version, only some columns)."""
    ensure_registered(spark)
    spark_options = source_options(table, version=version, **options)
    pinned = pin_table(parse_options(spark_options))
    schema = read_schema(pinned, columns)
    # Spark reads the version pinned here, at the location found here (tasks never ask the
    # namespace), and prunes columns by the narrower schema handed to it.
    spark_options.update(pinned_options(pinned))
    activate(spark)
    return spark.read.format("lance").options(**spark_options).schema(schema).load()
