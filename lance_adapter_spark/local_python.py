"""The Python that a local Spark session starts for the `lance` source.

Spark runs the source's Python code in processes forked from daemons, one daemon for
each kind of work (making the source and its schema, planning a read, running tasks),
each started as `<python> -m pyspark.daemon` with `$SPARK_HOME/python/lib/pyspark.zip`
first on the path. Python does not cache what it compiles from a zip, so each daemon
spends about 0.4 s compiling pyspark, three times over in a new session's first read.

In a local session (`local`, `local[N]`) the source's Python is the one PYSPARK_PYTHON
names or, when it is unset, the driver's own (Spark's default, `python3` from PATH, is
often another Python, without lance). `register` gives the source a launcher for it: a
script that starts `lance_adapter_spark.worker_daemon` (pyspark's daemon, with the
installed pyspark and py4j ahead of their zips) in place of `pyspark.daemon`, and runs
anything else unchanged. Not where executors run outside the driver's JVM (a cluster,
`local-cluster`): they may have neither the script nor this package installed.
docs/spark.md, Set-up.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource

from lance_adapter_spark.cluster import EXECUTOR_MODULES, PACKAGE_DIR, made_once
from lance_adapter_spark.options import LanceSourceError
from lance_adapter_spark.spark_internals import python_executable, set_python_executable

WORKER_DAEMON = "lance_adapter_spark.worker_daemon"
PYTHON_ENV = "PYSPARK_PYTHON"  # Spark's setting for the Python it starts
LAUNCHER = """#!/bin/sh
# Made by the lance source (lance_adapter_spark/local_python.py): Spark's Python for the source.
if [ "$1" = "-m" ] && [ "$2" = "pyspark.daemon" ]; then
    shift 2
    exec {python} -m {daemon} "$@"
fi
exec {python} "$@"
"""
_switching_python = threading.Lock()  # SparkContext.pythonExec is shared by the session


def register_source(spark: SparkSession, source: type[DataSource]) -> None:
    """Register `source`, in a local session with `local_source_python` as its Python."""
    context = spark.sparkContext
    if not runs_in_driver(context.master):
        spark.dataSource.register(source)
        return
    chosen = local_source_python(python_executable(context))
    with _switching_python:
        python = python_executable(context)
        set_python_executable(context, chosen)  # what the registration records as its Python
        try:
            spark.dataSource.register(source)
        finally:
            set_python_executable(context, python)


def local_source_python(configured: str) -> str:
    """The Python a local session runs the source in: the one PYSPARK_PYTHON names (Spark's
    `configured` Python), else this interpreter, which has the source; through the launcher
    when it imports this package. A named Python that cannot import what the source needs
    is refused here, once, instead of in every task."""
    python = configured if os.environ.get(PYTHON_ENV) else sys.executable
    launcher = launcher_for(python)
    if launcher is not None:
        return launcher
    if python != sys.executable:
        missing = missing_modules(python)
        if missing:
            raise LanceSourceError(
                f"{PYTHON_ENV} is {python}, which cannot import {', '.join(missing)}, and "
                "Spark runs the lance source in that Python. Unset it (the source then runs "
                f"in this Python, {sys.executable}) or install "
                f"{' '.join(EXECUTOR_MODULES[name] for name in missing)} there"
            )
    return python


def missing_modules(python: str) -> list[str]:
    """The modules of EXECUTOR_MODULES that `python` cannot import (all, if it cannot run)."""
    probe = (
        "import importlib.util as u, sys\n"
        "print(' '.join(n for n in sys.argv[1:] if u.find_spec(n) is None))"
    )
    answer = _printed_by(python, probe, *EXECUTOR_MODULES)
    return list(EXECUTOR_MODULES) if answer is None else answer.split()


def _printed_by(python: str, code: str, *arguments: str) -> str | None:
    """What `python -c code arguments…` prints, run as Spark starts it (this environment,
    outside the checkout); None when it cannot run or fails."""
    try:
        return subprocess.run(
            [python, "-c", code, *arguments],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            cwd=tempfile.gettempdir(),
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def launcher_for(python: str) -> str | None:
    """The launcher script running `python` (made again if it was removed); None where
    it cannot serve: not a POSIX system, or `python` does not import this very package."""
    if os.name != "posix" or not imports_this_package(python):
        return None
    script = LAUNCHER.format(python=shlex.quote(python), daemon=WORKER_DAEMON)
    digest = hashlib.sha256(script.encode()).hexdigest()[:16]
    made = made_once(f"python-{digest}", lambda partial: partial.write_text(script), 0o755)
    return str(made)


def runs_in_driver(master: str) -> bool:
    """Whether the executors run inside the driver's JVM (`local`, `local[N]`), hence
    in the environment `imports_this_package` checks; `local-cluster` executors do not."""
    return master == "local" or master.startswith("local[")


@functools.lru_cache(maxsize=8)
def imports_this_package(python: str) -> bool:
    """Whether `python`, started as Spark starts it (this environment), imports this
    package from where this process does, worker_daemon included."""
    probe = f"import importlib.util as u; print(u.find_spec({WORKER_DAEMON!r}).origin)"
    answer = _printed_by(python, probe)
    return answer is not None and (
        Path(answer.strip()).resolve() == PACKAGE_DIR / "worker_daemon.py"
    )
