"""Column pruning for the `lance` source: a Spark optimizer rule, `jvm/PruneLanceColumns.java`,
compiled on first use against the driver's own Spark and added to the session's extra
optimizations by `register`.

Spark 4 hands a Python data source the table's whole schema whatever the query uses; the
rule narrows each scan of the source to the columns the query needs (none for `count()`,
which is then answered from Lance's fragment metadata; single elements of a vector the
query only indexes) and has the read tasks compute grouped aggregates partially
(`lance_adapter_spark.aggregates`). Only the driver runs it, so a
cluster's executors need nothing more. It needs a JDK's `javac` where the driver runs;
without one, reads stay correct and read every column, and a warning says so.
docs/spark.md, "Column pruning".
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import warnings
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession

from lance_adapter_spark.cluster import PACKAGE_DIR, made_once
from lance_adapter_spark.spark_internals import jvm, jvm_session, py4j_gateway

RULE_SOURCE = PACKAGE_DIR / "jvm" / "PruneLanceColumns.java"
RULE_CLASS = "lance.adapter.spark.PruneLanceColumns"
JAVA_RELEASE = "17"  # Spark 4's minimum: the class must load on any JVM Spark 4 runs on


class PruningUnavailable(Exception):
    """Why the rule could not be made or installed; reads then take every column."""


def install_column_pruning(spark: SparkSession, source_name: str) -> bool:
    """Add the rule for `source_name` to `spark` (once per session); False, with a warning
    naming the reason, when it cannot be."""
    try:
        if jvm(spark) is None:
            raise PruningUnavailable("the session has no JVM in this process (Spark Connect)")
        jar = rule_jar(spark)
        _call_install(spark, jar, source_name)
    except PruningUnavailable as reason:
        warnings.warn(
            f"lance: reads take every column of a table, since column pruning is off: {reason}",
            stacklevel=2,
        )
        return False
    return True


def rule_jar(spark: SparkSession) -> Path:
    """The compiled rule for this Spark and this source text, compiled once per user."""
    system = jvm(spark).java.lang.System
    java_home = system.getProperty("java.home")
    class_path = system.getProperty("java.class.path")
    source = RULE_SOURCE.read_bytes()
    digest = hashlib.sha256(source + spark.version.encode() + JAVA_RELEASE.encode())
    return made_once(
        f"prune-columns-{digest.hexdigest()[:16]}.jar",
        lambda partial: _compile(partial, javac(java_home), class_path),
    )


def javac(java_home: str) -> str:
    """The compiler of the JDK the driver runs on, else JAVA_HOME's, else one on PATH."""
    homes = [java_home, os.environ.get("JAVA_HOME")]
    for home in filter(None, homes):
        candidate = Path(home) / "bin" / "javac"
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("javac")
    if found is None:
        raise PruningUnavailable("no javac (a JDK) where the Spark driver runs")
    return found


def _compile(jar: Path, compiler: str, class_path: str) -> None:
    with tempfile.TemporaryDirectory() as classes:
        command = [compiler, "--release", JAVA_RELEASE, "-nowarn", "-cp", class_path]
        command += ["-d", classes, str(RULE_SOURCE)]
        try:
            subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
        except subprocess.CalledProcessError as error:
            last = (error.stderr or error.stdout or "").strip().splitlines()[:1]
            raise PruningUnavailable(f"javac failed: {' '.join(last)}") from error
        except (OSError, subprocess.TimeoutExpired) as error:
            raise PruningUnavailable(f"javac did not run: {error}") from error
        with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as archive:
            for compiled in sorted(Path(classes).rglob("*.class")):
                archive.write(compiled, compiled.relative_to(classes).as_posix())


def _call_install(spark: SparkSession, jar: Path, source_name: str) -> None:
    """Load the rule in a class loader of its own (a child of Spark's) and call its
    `install(session, name)`: nothing is added to the session's or the executors' jars."""
    java, gateway, session = jvm(spark), py4j_gateway(spark), jvm_session(spark)
    urls = gateway.new_array(java.java.net.URL, 1)
    urls[0] = java.java.io.File(str(jar)).toURI().toURL()
    parent = session.getClass().getClassLoader()
    loader = java.java.net.URLClassLoader(urls, parent)
    load = java.java.lang.Class.forName
    parameter_types = gateway.new_array(java.java.lang.Class, 2)
    parameter_types[0] = load("org.apache.spark.sql.SparkSession", True, parent)
    parameter_types[1] = load("java.lang.String", True, parent)
    arguments = gateway.new_array(java.java.lang.Object, 2)
    arguments[0] = session
    arguments[1] = source_name
    try:
        rule = load(RULE_CLASS, True, loader)
        rule.getMethod("install", parameter_types).invoke(None, arguments)
    except Exception as error:  # py4j's Py4JJavaError: the JVM refused the class or the call
        raise PruningUnavailable(f"the JVM refused the rule: {str(error)[:300]}") from error
