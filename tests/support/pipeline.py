"""Shared pieces of the pipeline tests: one Spark session and one adapter for the whole run.

Both are process-wide singletons (not plain session fixtures) because several test
modules import the fixtures, and pytest would otherwise build one per module.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from lance.namespace import RestNamespace
from lance_namespace import DeclareTableRequest
from pyspark.sql import DataFrame, SparkSession

import lance_adapter_spark
from tests.support.adapter import running_server
from tests.support.common import environment

REPO_ROOT = Path(__file__).resolve().parents[2]
_resources = contextlib.ExitStack()
atexit.register(_resources.close)
_singletons: dict[str, object] = {}
_table_numbers = itertools.count()


def spark_session() -> SparkSession:
    if "spark" not in _singletons:
        # Spark's Python workers must run this interpreter and import this checkout: the JVM
        # and the context take both from the environment when they start; then it is restored.
        python_path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
        with environment(PYSPARK_PYTHON=sys.executable, PYTHONPATH=python_path):
            session = (
                SparkSession.builder.master("local[2,2]")  # 2 cores; a failed task: one retry
                .appName("pipeline-tests")
                .config(map=lance_adapter_spark.session_conf())
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.shuffle.partitions", "2")
                .config("spark.sql.session.timeZone", "UTC")
                .config("spark.driver.memory", "2g")
                .getOrCreate()
            )
        session.sparkContext.setLogLevel("ERROR")
        lance_adapter_spark.register(session)
        _resources.callback(session.stop)
        _singletons["spark"] = session
    return _singletons["spark"]  # type: ignore[return-value]


def adapter() -> tuple[str, Path]:
    """The base URL of this project's adapter on a dir backend, and that backend's root."""
    if "adapter" not in _singletons:
        root = Path(tempfile.mkdtemp(prefix="pipeline-tests-"))
        _resources.callback(_remove_tree, root)
        url = _resources.enter_context(running_server("dir", {"root": str(root)}))
        _singletons["adapter"] = (url, root)
    return _singletons["adapter"]  # type: ignore[return-value]


def _remove_tree(root: Path) -> None:
    import shutil

    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def spark() -> SparkSession:
    # Not cached by pytest: the cluster tests stop the local session, and a module that
    # comes after them gets a new one from spark_session().
    return spark_session()


@pytest.fixture(scope="session")
def adapter_url() -> str:
    return adapter()[0]


@pytest.fixture
def table_name() -> str:
    """A table name no other test uses."""
    return f"t{next(_table_numbers)}_{os.getpid()}"


def lance_options(url: str, table: str, **options: object) -> dict[str, str]:
    return lance_adapter_spark.source_options(table, uri=url, **options)


def sorted_arrow(df: DataFrame, key: str = "id") -> pa.Table:
    return df.toArrow().sort_by(key)


def first_difference(expected: pa.Table, actual: pa.Table, key: str = "id") -> str | None:
    """Where two tables differ, cell by cell, or None when they are equal."""
    if expected.schema != actual.schema:
        return f"schemas differ:\n{expected.schema}\n---\n{actual.schema}"
    if expected.num_rows != actual.num_rows:
        return f"{expected.num_rows} rows expected, {actual.num_rows} read"
    keys = expected.column(key).to_pylist()
    for name in expected.column_names:
        left, right = expected.column(name), actual.column(name)
        if left.equals(right):
            continue
        for row, (a, b) in enumerate(zip(left.to_pylist(), right.to_pylist(), strict=True)):
            if a != b:
                return f"column {name!r}, {key}={keys[row]}: expected {a!r}, read {b!r}"
        return f"column {name!r} differs in its Arrow layout"
    return None


def python_daemons(spark: SparkSession) -> list[str]:
    """The command lines of the Python daemons this session's JVM started."""
    jvm = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]
    commands = []
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if f"\nPPid:\t{jvm}\n" in status and b"-m" in command:
            commands.append(" ".join(part.decode() for part in command if part))
    return commands


def run_concurrently(jobs: list[Callable[[], object]], timeout: float = 300) -> None:
    """Run the jobs in threads at once; fail with every job's error, if any."""
    errors: list[BaseException] = []

    def run(job: Callable[[], object]) -> None:
        try:
            job()
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not any(thread.is_alive() for thread in threads), f"jobs still running after {timeout}s"
    assert not errors, [f"{type(error).__name__}: {error}" for error in errors]


def write_with_pylance(url: str, table: str, data: pa.Table) -> None:
    """A table written by pylance itself, at the location the namespace declares."""
    declared = RestNamespace(uri=url).declare_table(DeclareTableRequest(id=[table]))
    lance.write_dataset(data, declared.location)
