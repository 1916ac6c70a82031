"""Every use the source makes of PySpark beyond its public API, in one place: what a new Spark
release may change or remove. `check_supported` runs at registration: a Spark outside the
supported releases, or one that lacks any of these attributes, is one `LanceSourceError`
naming what is missing, instead of an AttributeError deep in a read.

(The column-pruning rule, `jvm/PruneLanceColumns.java`, reaches Spark's internals on the JVM
side; it checks them itself and reads take every column when it cannot be installed.)
"""

from __future__ import annotations

from typing import Any

from pyspark import SparkContext
from pyspark.sql import SparkSession

from lance_adapter_spark.options import LanceSourceError

# The Spark releases the source is built and tested for (pyproject.toml: pyspark>=4.0,<5).
SUPPORTED_MAJOR = 4
# What is used, and why (each function below says where).
_CONTEXT_ATTRIBUTES = ("_python_includes", "pythonExec", "environment", "_gateway")
_SESSION_ATTRIBUTES = ("_jvm", "_jsparkSession")


def check_supported(spark: SparkSession) -> None:
    """LanceSourceError unless `spark` is a supported release with what the source uses."""
    major = spark.version.split(".")[0]
    if major != str(SUPPORTED_MAJOR):
        raise LanceSourceError(
            f"the lance source runs on Spark {SUPPORTED_MAJOR}.x; this session is Spark "
            f"{spark.version}")
    missing = [f"SparkContext.{name}" for name in _CONTEXT_ATTRIBUTES
               if not hasattr(spark.sparkContext, name)]
    missing += [f"SparkSession.{name}" for name in _SESSION_ATTRIBUTES
                if not hasattr(spark, name)]
    if missing:
        raise LanceSourceError(
            f"the lance source cannot run on Spark {spark.version}: it has no "
            f"{', '.join(missing)}")


def shipped_python_files(context: SparkContext) -> list[str]:
    """The names of the files `addPyFile` has shipped to the Python workers so far."""
    return list(context._python_includes)  # type: ignore[attr-defined]


def python_executable(context: SparkContext) -> str:
    """The Python the session's Python workers run (what a registration records)."""
    return context.pythonExec


def set_python_executable(context: SparkContext, python: str) -> None:
    context.pythonExec = python


def worker_environment(context: SparkContext) -> dict[str, str]:
    """The environment Spark gives its Python workers (changes reach later workers)."""
    return context.environment  # type: ignore[attr-defined,no-any-return]


def jvm(spark: SparkSession) -> Any:
    """The py4j view of the driver's JVM; None in a session without one (Spark Connect)."""
    return getattr(spark, "_jvm", None)


def jvm_session(spark: SparkSession) -> Any:
    """The JVM's SparkSession behind `spark`."""
    return spark._jsparkSession  # type: ignore[attr-defined]


def py4j_gateway(spark: SparkSession) -> Any:
    """The py4j gateway (to make Java arrays)."""
    return spark.sparkContext._gateway  # type: ignore[attr-defined]


def activate(spark: SparkSession) -> None:
    """Make `spark` the JVM's active session in this thread: Spark looks Python data sources
    up in the thread's active session, which a new thread does not have (without this,
    `format("lance")` is not found there)."""
    jvm(spark).org.apache.spark.sql.SparkSession.setActiveSession(jvm_session(spark))
