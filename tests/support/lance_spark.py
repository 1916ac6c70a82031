"""lance-spark, the JVM Spark connector for Lance, as a client of this server.

Maven Central carries lance-spark only for Spark 3.5 / Scala 2.12 (`org.lance:lance-spark-3.5_2.12`,
no bundle and nothing for Spark 4.x / Scala 2.13), and a Scala 2.12 connector cannot load into
the project's pyspark 4.x. So lance-spark runs in a pyspark 3.5 of its own: a virtualenv made
from PyPI in the test cache (`maven.cache_root()/venvs/pyspark-<version>`, outside the
checkout, made once and reused), with the connector's jars from `tests/java/lance-spark/pom.xml`.

A `SparkDriver` is a Spark session in a child Python process (either pyspark: the 3.5 one for
lance-spark, the project's own for Parquet and the `lance_adapter_spark` source in the
benchmark). The parent sends it one JSON request per line on stdin and reads one JSON answer
per line on stdout; every wait is bounded. This file is also the child's program (`python
lance_spark.py --driver`), so its top level imports only the standard library: the pyspark 3.5
virtualenv has nothing else.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CATALOG_CLASS = "org.lance.spark.LanceNamespaceSparkCatalog"
MARKER = "@@lance-spark-driver@@ "
REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_TIMEOUT_SECONDS = 900
START_TIMEOUT_SECONDS = 180
REQUEST_TIMEOUT_SECONDS = 900
# Jars of the connector's dependency tree that pyspark 3.5 already ships (its own versions
# stay). The connector's Arrow (18, where Spark 3.5 has 12) and flatbuffers go first on the
# class path: lance-core needs them and Spark 3.5 works with them.
PROVIDED_BY_SPARK = (
    "jackson-core-", "jackson-annotations-", "jackson-databind-2", "jackson-datatype-",
    "netty-", "commons-codec-", "commons-lang3-", "jsr305-",
)  # fmt: skip


# ----------------------------------------------------------------------------------------
# The parent's side
# ----------------------------------------------------------------------------------------


def pyspark35_python() -> Path:
    """The Python of a virtualenv holding pyspark 3.5, made once in the test cache."""
    from tests.support.locked import locked_version
    from tests.support.maven import cache_root

    pyspark = locked_version("pyspark-35")
    venv = cache_root() / "venvs" / f"pyspark-{pyspark}"
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".pyspark-{pyspark}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes make it once
        if not (venv / ".complete").exists():
            base = getattr(sys, "_base_executable", sys.executable)
            steps = [[base, "-m", "venv", "--clear", str(venv)],
                     [str(python), "-m", "pip", "install", "-q", f"pyspark=={pyspark}"]]
            for step in steps:
                done = subprocess.run(step, capture_output=True, text=True,
                                      timeout=VENV_TIMEOUT_SECONDS, check=False)
                if done.returncode != 0:
                    raise RuntimeError(f"{' '.join(step)} failed:\n{done.stderr[-4000:]}")
            (venv / ".complete").touch()
    return python


def connector_jars() -> list[str]:
    """lance-spark (its version: lock/services.toml) and the jars it needs beyond pyspark
    3.5's own."""
    from tests.support.maven import maven_jars

    return [str(jar) for jar in sorted(maven_jars("lance-spark").glob("*.jar"))
            if not jar.name.startswith(PROVIDED_BY_SPARK)]


def lance_spark_conf(catalogs: dict[str, str]) -> dict[str, str]:
    """Spark settings that load lance-spark and name one catalog per adapter URL."""
    classpath = os.pathsep.join(connector_jars())
    conf = {"spark.driver.extraClassPath": classpath, "spark.executor.extraClassPath": classpath}
    for name, url in catalogs.items():
        conf[f"spark.sql.catalog.{name}"] = CATALOG_CLASS
        conf[f"spark.sql.catalog.{name}.impl"] = "rest"
        conf[f"spark.sql.catalog.{name}.uri"] = url
    return conf


class DriverError(RuntimeError):
    """A request the child's Spark failed; `.error` is its message."""


class SparkDriver:
    """A Spark session in a child process, driven by JSON lines (see the module docstring)."""

    def __init__(self, python: Path | str, master: str, conf: dict[str, str], log: Path,
                 app_name: str = "lance-spark", register_pipeline: bool = False,
                 environment: dict[str, str] | None = None) -> None:
        self.log = log
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_"))}
        env.update(SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1", **(environment or {}))
        if register_pipeline:  # the project's source: the child imports this checkout
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                              env.get("PYTHONPATH")]))
            env["PYSPARK_PYTHON"] = str(python)
        else:
            env.pop("PYTHONPATH", None)
        self._log_file = log.open("ab")
        self._process = subprocess.Popen(
            [str(python), str(Path(__file__).resolve()), "--driver"], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log_file,
            text=True, start_new_session=True,
        )
        self._answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read_answers, daemon=True).start()
        settings = {"master": master, "conf": conf, "app": app_name,
                    "pipeline": register_pipeline}
        try:
            self.spark_version = self._call(settings, START_TIMEOUT_SECONDS)
        except BaseException:
            self.close()
            raise

    def _read_answers(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            if line.startswith(MARKER):
                self._answers.put(line[len(MARKER):])
        self._answers.put(None)

    def _call(self, request: dict[str, Any], timeout: float) -> Any:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            self.close()
            raise TimeoutError(f"no answer within {timeout:.0f}s to {request}\n"
                               f"{self.log_tail()}") from None
        if line is None:
            raise RuntimeError(f"the Spark driver exited\n{self.log_tail()}")
        answer = json.loads(line)
        if not answer["ok"]:
            raise DriverError(answer["error"])
        return answer["result"]

    def log_tail(self, characters: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-characters:]
        return ""

    def sql(self, query: str, timeout: float = REQUEST_TIMEOUT_SECONDS) -> list[dict[str, Any]]:
        """The rows of `query`, each a dict (nested rows as dicts, arrays as lists)."""
        return self._call({"op": "sql", "query": query}, timeout)

    def time_sql(self, query: str, action: str = "collect",
                 timeout: float = REQUEST_TIMEOUT_SECONDS) -> float:
        """Seconds `query` takes: `collect`, `count`, `noop` (scan every row) or `run`."""
        return self._call({"op": "time_sql", "query": query, "action": action}, timeout)

    def time_write(self, query: str, format_name: str, options: dict[str, str], mode: str,
                   path: str | None = None, timeout: float = REQUEST_TIMEOUT_SECONDS) -> float:
        """Seconds writing the rows of `query` with `spark.write.format(format_name)` takes."""
        request = {"op": "time_write", "query": query, "format": format_name,
                   "options": options, "mode": mode, "path": path}
        return self._call(request, timeout)

    def time_read(self, view: str, format_name: str, options: dict[str, str],
                  query: str, action: str, path: str | None = None,
                  timeout: float = REQUEST_TIMEOUT_SECONDS) -> float:
        """Seconds loading `format_name` as temporary view `view` and running `query` take."""
        request = {"op": "time_read", "view": view, "format": format_name, "options": options,
                   "path": path, "query": query, "action": action}
        return self._call(request, timeout)

    def executors(self) -> int:
        """How many executors (not counting the driver) the session has now."""
        return self._call({"op": "executors"}, 60)

    def close(self) -> None:
        if self._process.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                assert self._process.stdin is not None
                self._process.stdin.close()  # the child stops its session and exits
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._process.pid, 9)
                self._process.wait(timeout=30)
        self._log_file.close()

    def __enter__(self) -> SparkDriver:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def lance_spark_driver(master: str, catalogs: dict[str, str], log: Path,
                       extra_conf: dict[str, str] | None = None) -> SparkDriver:
    """A pyspark 3.5 session with lance-spark and one catalog per adapter (name: URL)."""
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2", "spark.sql.session.timeZone": "UTC",
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            **lance_spark_conf(catalogs), **(extra_conf or {})}
    return SparkDriver(pyspark35_python(), master, conf, log)


@contextlib.contextmanager
def pyspark35_cluster(workdir: Path, workers: int = 2,
                      worker_memory: str = "1g") -> Iterator[Any]:
    """A standalone cluster of pyspark 3.5 (`tests.support.spark_cluster` with that Spark):
    lance-spark cannot join the suite's pyspark 4 cluster."""
    from unittest import mock

    from tests.support import spark_cluster

    home = next((pyspark35_python().parent.parent / "lib").glob("python3*/site-packages/pyspark"))
    with mock.patch.object(spark_cluster, "SPARK_HOME", home):
        cluster = spark_cluster.start_cluster(workdir, [str(REPO_ROOT)], workers=workers,
                                              worker_memory=worker_memory)
    try:
        yield cluster
    finally:
        cluster.stop()


# ----------------------------------------------------------------------------------------
# The child's side: python lance_spark.py --driver
# ----------------------------------------------------------------------------------------


def _answer(ok: bool, value: Any) -> None:
    body = {"ok": ok, "result" if ok else "error": value}
    sys.stdout.write(MARKER + json.dumps(body, default=str) + "\n")
    sys.stdout.flush()


def _run_action(frame: Any, action: str) -> None:
    if action == "collect":
        frame.collect()
    elif action == "count":
        frame.count()
    elif action == "noop":
        frame.write.format("noop").mode("overwrite").save()
    elif action != "run":
        raise ValueError(f"unknown action {action!r}")


def _serve() -> None:
    from pyspark.sql import SparkSession

    settings = json.loads(sys.stdin.readline())
    builder = SparkSession.builder.master(settings["master"]).appName(settings["app"])
    for key, value in settings["conf"].items():
        builder = builder.config(key, value)
    if settings["pipeline"]:
        import lance_adapter_spark

        builder = builder.config(map=lance_adapter_spark.session_conf())
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if settings["pipeline"]:
        lance_adapter_spark.register(spark)
    _answer(True, spark.version)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            _answer(True, _handle(spark, request))
        except Exception as error:  # the parent sees every failure as a DriverError
            _answer(False, f"{type(error).__name__}: {error}")
    spark.stop()


def _handle(spark: Any, request: dict[str, Any]) -> Any:
    op = request["op"]
    started = time.perf_counter()
    if op == "executors":
        return len(spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) - 1
    if op == "sql":
        return [row.asDict(recursive=True) for row in spark.sql(request["query"]).collect()]
    if op == "time_sql":
        _run_action(spark.sql(request["query"]), request["action"])
    elif op == "time_write":
        writer = spark.sql(request["query"]).write.format(request["format"])
        writer = writer.options(**request["options"]).mode(request["mode"])
        writer.save(request["path"]) if request["path"] else writer.save()
    elif op == "time_read":
        reader = spark.read.format(request["format"]).options(**request["options"])
        frame = reader.load(request["path"]) if request["path"] else reader.load()
        frame.createOrReplaceTempView(request["view"])
        _run_action(spark.sql(request["query"]), request["action"])
    else:
        raise ValueError(f"unknown op {op!r}")
    return time.perf_counter() - started


if __name__ == "__main__" and sys.argv[1:] == ["--driver"]:
    # Run as a script, this folder would be first on the path, and its modules (`tables.py`,
    # `cli.py`, ...) would hide installed modules of the same names; the child needs none of them.
    HERE = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
    _serve()
