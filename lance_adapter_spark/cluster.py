"""What the `lance` source needs from a cluster: its code on the executors, the native
libraries there, and storage that the driver and every executor see alike.

docs/spark.md, "Running on a cluster".
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import py_compile
import socket
import stat
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from lance_adapter_spark.options import LanceSourceError
from lance_adapter_spark.spark_internals import shipped_python_files

PACKAGE_DIR = Path(__file__).resolve().parent
# What a task imports besides pyspark and this package; pip names for the message.
EXECUTOR_MODULES = {"pyarrow": "pyarrow", "lance": "pylance", "lance_namespace": "lance-namespace"}


def package_zip() -> Path:
    """This package's sources as a zip named after their content (Spark refuses a file
    added twice under one name with another content).

    Beside each source goes its byte code for this Python, unchecked (zipimport cannot
    cache what it compiles, so every new Python worker would compile the package again);
    a worker on another Python version finds the magic number wrong and uses the source.
    """
    sources = sorted(PACKAGE_DIR.glob("*.py"))
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER)
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())

    def write(partial: Path) -> None:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for source in sources:
                archive.write(source, f"lance_adapter_spark/{source.name}")
                archive.writestr(
                    f"lance_adapter_spark/{source.stem}.pyc", _unchecked_byte_code(source)
                )

    return made_once(f"lance_adapter_spark-{digest.hexdigest()[:16]}.zip", write)


def made_once(name: str, write: Callable[[Path], None], mode: int = 0o644) -> Path:
    """The file `name` in this user's private directory, written by `write` (to a partial
    file, then renamed into place) unless it is there already: names carry a digest of
    what the file holds."""
    target = private_directory() / name
    if not target.exists():
        partial = target.with_name(f"{name}.{os.getpid()}.partial")
        write(partial)
        partial.chmod(mode)
        partial.replace(target)
    return target


def private_directory() -> Path:
    """This user's directory for the files the package makes for Spark (its zip, the
    local launcher). Spark runs what is there, so the directory is made 0700 and refused
    unless this user alone owns it: no other local user can put a file in its place."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    directory = Path(tempfile.gettempdir()) / f"lance-pipeline-{uid if uid is not None else 'user'}"
    directory.mkdir(mode=0o700, exist_ok=True)
    status = directory.lstat()
    foreign = uid is not None and (status.st_uid != uid or status.st_mode & 0o077)
    if stat.S_ISLNK(status.st_mode) or not stat.S_ISDIR(status.st_mode) or foreign:
        raise LanceSourceError(
            f"{directory} must be a directory of this user's alone (mode 0700), since Spark "
            "runs the files the lance source puts there; remove it and try again"
        )
    return directory


def _unchecked_byte_code(source: Path) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        compiled = py_compile.compile(
            str(source),
            cfile=str(Path(folder) / "module.pyc"),
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
        return Path(compiled).read_bytes()


def ship_package(spark: SparkSession) -> bool:
    """Add this package to the files every Python worker puts on its path (SparkContext.
    addPyFile); returns False when it was already added. Python functions made before
    this call (such as a data source registered earlier) do not carry it: register after."""
    context = spark.sparkContext
    archive = package_zip()
    if archive.name in shipped_python_files(context):
        return False
    context.addPyFile(str(archive))
    return True


# The data source `check_executor_modules` reads: a read of a Python data source, as the
# `lance` source's reads are, so that it starts the Python daemon those reads use.
EXECUTOR_CHECK_SOURCE = "lance_executor_check"


def check_executor_modules(spark: SparkSession, modules: dict[str, str] | None = None) -> None:
    """Fail at once, naming what to install, when executors cannot import what the tasks
    need (pyarrow, pylance, lance-namespace), instead of every task failing later.

    The check is a read of a data source of its own, registered (after this package is
    shipped) exactly as the `lance` source is: Spark then keys both on one Python and one
    environment, so the check starts each executor's Python daemon, and loads the reader's
    modules in a worker, for the reads that follow. A first read then starts neither."""
    modules = EXECUTOR_MODULES if modules is None else modules
    spark.dataSource.register(ExecutorImportCheck)
    slots = max(spark.sparkContext.defaultParallelism, 1)
    answers = (
        spark.read.format(EXECUTOR_CHECK_SOURCE)
        .options(modules=",".join(modules), slots=str(slots))
        .load()
        .collect()
    )
    missing = {(row.host, row.module, row.error) for row in answers}
    if not missing:
        return
    host, name, error = sorted(missing)[0]
    wanted = " ".join(sorted({modules[name] for _, name, _ in missing}))
    raise LanceSourceError(
        f"the Spark executors cannot import {name} (on {host}: {error}); the lance data source "
        f"needs {', '.join(modules.values())} in the executors' Python. Install them there "
        f"(pip install {wanted}), or ship a packed environment: pack a virtualenv holding them "
        "with venv-pack (or conda-pack) and start Spark with "
        "--conf spark.archives=env.tar.gz#env --conf spark.pyspark.python=./env/bin/python"
    )


class ExecutorImportCheck(DataSource):
    """Rows (host, module, error) for each module of option `modules` that an executor
    cannot import, read in option `slots` partitions (one per executor core)."""

    @classmethod
    def name(cls) -> str:
        return EXECUTOR_CHECK_SOURCE

    def schema(self) -> str:
        return "host string, module string, error string"

    def reader(self, schema: StructType) -> DataSourceReader:
        return _ImportCheckReader(self.options["modules"].split(","), int(self.options["slots"]))


class _ImportCheckReader(DataSourceReader):
    def __init__(self, modules: list[str], slots: int) -> None:
        self.modules = modules
        self.slots = slots

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(slot) for slot in range(self.slots)]

    def read(self, partition: InputPartition) -> Iterator[tuple[str, str, str]]:
        host, failures = _import_failures(self.modules)
        if not failures:
            # The reader's own modules, loaded in this worker for the reads that follow;
            # should they fail, a read reports it.
            with contextlib.suppress(ImportError):
                import lance_adapter_spark.read  # noqa: F401
        for name, error in failures:
            yield host, name, error


def _import_failures(names: list[str]) -> tuple[str, list[tuple[str, str]]]:
    import importlib

    failures = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as error:  # reported to the driver, which raises one clear error
            failures.append((name, f"{type(error).__name__}: {error}"))
    return socket.gethostname(), failures
