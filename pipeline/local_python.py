"""The Python that a local Spark session starts for the `lance` source.

Spark runs the source's Python code in processes forked from daemons, one daemon for
each kind of work (making the source and its schema, planning a read, running tasks),
each started as `<python> -m pyspark.daemon` with `$SPARK_HOME/python/lib/pyspark.zip`
first on the path. Python does not cache what it compiles from a zip, so each daemon
spends about 0.4 s compiling pyspark, three times over in a new session's first read.

In a local session (`local`, `local[N]`) `register` gives the source a launcher for its
Python: a script that starts `pipeline.worker_daemon` (pyspark's daemon, with the
installed pyspark and py4j ahead of their zips) in place of `pyspark.daemon`, and runs
anything else unchanged. Not where executors run outside the driver's JVM (a cluster,
`local-cluster`): they may have neither the script nor this package installed.
README: Spark pipelines, Set-up.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shlex
import subprocess
import tempfile
import threading
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource

from pipeline.cluster import PACKAGE_DIR, made_once

WORKER_DAEMON = "pipeline.worker_daemon"
LAUNCHER = """#!/bin/sh
# Made by the lance source (pipeline/local_python.py): Spark's Python for the source.
if [ "$1" = "-m" ] && [ "$2" = "pyspark.daemon" ]; then
    shift 2
    exec {python} -m {daemon} "$@"
fi
exec {python} "$@"
"""
_switching_python = threading.Lock()  # SparkContext.pythonExec is shared by the session


def register_source(spark: SparkSession, source: type[DataSource]) -> None:
    """Register `source`, in a local session with the launcher as its Python."""
    context = spark.sparkContext
    launcher = launcher_for(context.pythonExec) if runs_in_driver(context.master) else None
    if launcher is None:
        spark.dataSource.register(source)
        return
    with _switching_python:
        python = context.pythonExec
        context.pythonExec = launcher  # what the registration records as the source's Python
        try:
            spark.dataSource.register(source)
        finally:
            context.pythonExec = python


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
    try:
        answer = subprocess.run(
            [python, "-c", probe],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            cwd=tempfile.gettempdir(),
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return Path(answer.stdout.strip()).resolve() == PACKAGE_DIR / "worker_daemon.py"
