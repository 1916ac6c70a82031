"""Spark writing and reading Lance through the namespace vs Spark writing and reading Parquet.

    .venv/bin/python bench/spark_lance_vs_parquet.py --rows 10000000
    .venv/bin/python bench/spark_lance_vs_parquet.py --rows 1000000 --uri http://127.0.0.1:2333
    .venv/bin/python bench/spark_lance_vs_parquet.py --master spark://127.0.0.1:7077 \
        --queries aggregate,scan,narrow,count
    .venv/bin/python bench/spark_lance_vs_parquet.py --cluster --queries aggregate,count

The same DataFrame (an id, a few scalar columns and a 128-dim float32 vector) is cached,
then written by Spark to Parquet and to a Lance table through the adapter. Then, for
each of --fresh-runs rounds, a new Spark (new JVM, new Python workers) per format reads
it back and aggregates: the first read is the fresh-session figure, the best of the
next --warm-reads (5) the warm one, for each query of --queries (each in a session of its
own). Writes are timed twice in the first session: first in the session, and warm.
Prints the times and the ratios Lance/Parquet (goal: write <= 1.1x, read <= 1.2x).
Without --uri an adapter on a dir backend is started. With --master spark://... the
sessions run on that cluster; its executors must see --workdir (and the adapter's root)
at the same path (a one-machine cluster does; otherwise use --uri and shared storage).
--cluster starts such a cluster on 127.0.0.1 for the run (a master and two one-core
workers from the pyspark wheel, as the suite's tests/test_spark_cluster.py does).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import lance
from lance.namespace import RestNamespace
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import lance_adapter_spark
from examples.spark_runtime import embedded_adapter, local_spark

VECTOR_SIZE = 128
QUERIES = ("aggregate", "scan", "narrow", "count")
TABLE = "bench_vectors"
# The figures each read reports, as labelled: its first read, the best of the warm reads
# (the goal's figure), and their median (how a typical warm read compares).
READ_FIGURES = (("fresh", "fresh session"), ("warm", "warm"), ("warm_median", "warm, median"))


def parse_arguments(arguments: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=0, help="default: 2 per core")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--memory", default="8g", help="Spark driver memory")
    parser.add_argument("--uri", help="a running adapter; default: start one")
    parser.add_argument("--workdir", type=Path, help="where data goes (default: a temp dir)")
    parser.add_argument("--fresh-runs", type=int, default=2, help="fresh sessions per format")
    # Five: a new session's first warm reads still wait on its executors' JIT compiler,
    # which on two cores moves one read by a third either way (bench/README.md).
    parser.add_argument("--warm-reads", type=int, default=5, help="reads after the first")
    parser.add_argument("--master", default="", help="a Spark master; default: local[--cores]")
    parser.add_argument(
        "--cluster", action="store_true", help="start a 2-worker standalone cluster as master"
    )
    parser.add_argument("--executor-memory", default="2g", help="with --master spark://...")
    parser.add_argument(
        "--queries", default="aggregate", help=f"comma-separated, of {', '.join(QUERIES)}"
    )
    parser.add_argument("--read-only", choices=("lance", "parquet"), help=argparse.SUPPRESS)
    parser.add_argument("--parquet-path", help=argparse.SUPPRESS)
    parser.add_argument("--query", default="aggregate", help=argparse.SUPPRESS)
    return with_query_list(parser, parser.parse_args(arguments), QUERIES)


def with_query_list(
    parser: argparse.ArgumentParser, parsed: argparse.Namespace, known: Iterable[str]
) -> argparse.Namespace:
    """`parsed` with `query_list`, its `--queries` split and checked against `known`."""
    known = list(known)
    parsed.query_list = [q.strip() for q in parsed.queries.split(",") if q.strip()]
    unknown = set(parsed.query_list) - set(known)
    if unknown:
        parser.error(f"unknown queries {sorted(unknown)}; known: {', '.join(known)}")
    return parsed


def session(arguments: argparse.Namespace, app_name: str) -> SparkSession:
    if not arguments.master or arguments.master.startswith("local"):
        return local_spark(app_name, arguments.cores, arguments.memory)
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the executors' Python, as pyspark reads it
    spark = (
        SparkSession.builder.master(arguments.master)
        .appName(app_name)
        .config(map=lance_adapter_spark.session_conf())
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", arguments.memory)
        .config("spark.executor.memory", arguments.executor_memory)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    lance_adapter_spark.register(spark)  # ships the package to the executors
    return spark


def source_frame(spark: SparkSession, rows: int, partitions: int) -> DataFrame:
    vector = F.transform(
        F.sequence(F.lit(1), F.lit(VECTOR_SIZE)),
        lambda i: (F.sin(F.col("id") * i) + F.rand(7)).cast("float"),
    )
    return spark.range(rows, numPartitions=partitions).select(
        "id",
        (F.col("id") % 1000).cast("int").alias("category"),
        (F.rand(1) * 1000).alias("price"),
        F.concat(F.lit("item-"), F.col("id")).alias("name"),
        (F.col("id") % 3 == 0).alias("flag"),
        vector.alias("embedding"),
    )


def aggregate(df: DataFrame) -> list:
    return (
        df.groupBy("category")
        .agg(F.count("*"), F.avg("price"), F.max(F.element_at("embedding", 1)))
        .collect()
    )


def run_query(query: str, df: DataFrame) -> object:
    if query == "aggregate":
        return aggregate(df)
    if query == "narrow":
        return df.groupBy("category").agg(F.avg("price")).collect()
    if query == "count":
        return df.count()
    return df.write.format("noop").mode("overwrite").save()  # scan: every column, every row


def timed(label: str, action: Callable[[], object]) -> float:
    taken = seconds(action)
    print(f"  {label:<28}{taken:8.1f}s", flush=True)
    return taken


@contextlib.contextmanager
def adapter(uri: str | None, root: Path) -> Iterator[str]:
    if uri:
        yield uri
        return
    root.mkdir(parents=True, exist_ok=True)
    with embedded_adapter(root) as url:
        yield url


@contextlib.contextmanager
def standalone_cluster(workdir: Path, worker_memory: str = "3g") -> Iterator[str]:
    """A master and two one-core workers on 127.0.0.1 for the run; yields the master URL."""
    from tests.support.spark_cluster import start_cluster

    repo_root = str(Path(__file__).resolve().parent.parent)
    cluster = start_cluster(
        workdir / "cluster", [repo_root], workers=2, worker_memory=worker_memory
    )
    try:
        yield cluster.master_url
    finally:
        cluster.stop()


def run(arguments: argparse.Namespace, workdir: Path) -> None:
    if arguments.cluster and not arguments.master:
        with standalone_cluster(workdir) as master:
            arguments.master = master
            run(arguments, workdir)
        return
    spark = session(arguments, "bench-lance-vs-parquet")
    partitions = arguments.partitions or arguments.cores * 2
    source = source_frame(spark, arguments.rows, partitions).cache()
    print(f"materialising {arguments.rows:,} rows in {partitions} partitions ...", flush=True)
    timed("generate + cache", source.count)
    parquet_path = str(workdir / "bench.parquet")
    with adapter(arguments.uri, workdir / "lance-data") as url:
        options = lance_options(url, arguments)
        write_lance = source.write.format("lance").options(**options).mode("overwrite")
        write_parquet = source.write.mode("overwrite")
        results = {}
        for when in ("first", "warm"):
            results[f"parquet write {when}"] = timed(
                f"parquet write ({when})", lambda w=write_parquet: w.parquet(parquet_path)
            )
            results[f"lance write {when}"] = timed(f"lance write ({when})", write_lance.save)
        written = lance.dataset(namespace_client=RestNamespace(uri=url), table_id=[TABLE])
        print(f"  lance table holds {written.count_rows():,} rows", flush=True)
        spark.stop()  # frees the cache's memory for the reading sessions
        reads = [
            fresh_session_reads(arguments, format_name, url, parquet_path, query)
            for _ in range(arguments.fresh_runs)
            for query in arguments.query_list
            for format_name in ("parquet", "lance")
        ]
    report(arguments, results, reads)


def lance_options(url: str, arguments: argparse.Namespace) -> dict[str, str]:
    # On a cluster the table root is this machine's disk, which a one-machine cluster shares.
    shared = "true" if arguments.master and not arguments.master.startswith("local") else None
    return lance_adapter_spark.source_options(
        TABLE, uri=url, vector_columns=f"embedding:{VECTOR_SIZE}", shared_storage=shared
    )


def fresh_session_reads(
    arguments: argparse.Namespace, format_name: str, url: str, parquet_path: str, query: str
) -> dict[str, object]:
    """One query in a new process: its first run, then --warm-reads more."""
    command = [sys.executable, __file__, "--read-only", format_name, "--uri", url]
    command += ["--parquet-path", parquet_path, "--cores", str(arguments.cores)]
    command += ["--memory", arguments.memory, "--warm-reads", str(arguments.warm_reads)]
    command += ["--query", query, "--master", arguments.master]
    command += ["--executor-memory", arguments.executor_memory]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=True)
    figures = json.loads(finished.stdout.strip().splitlines()[-1])
    every_warm = " ".join(f"{taken:.1f}" for taken in figures["warm_reads"])
    print(
        f"  {query:<10}{format_name:<8} fresh {figures['fresh']:6.1f}s   "
        f"warm {figures['warm']:6.1f}s  (of {every_warm})",
        flush=True,
    )
    return figures


def read_in_this_process(arguments: argparse.Namespace) -> None:
    spark = session(arguments, f"bench-read-{arguments.read_only}")
    query = arguments.query

    def read() -> object:
        if arguments.read_only == "parquet":
            return run_query(query, spark.read.parquet(arguments.parquet_path))
        options = lance_options(arguments.uri, arguments)  # no `columns`: pruned as Parquet is
        return run_query(query, spark.read.format("lance").options(**options).load())

    fresh = seconds(read)
    warm_reads = [seconds(read) for _ in range(arguments.warm_reads)]
    spark.stop()
    figures = {"format": arguments.read_only, "query": query, "fresh": fresh,
               "warm": min(warm_reads), "warm_median": statistics.median(warm_reads),
               "warm_reads": warm_reads}
    print(json.dumps(figures), flush=True)


def seconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def report(
    arguments: argparse.Namespace, results: dict[str, float], reads: list[dict[str, object]]
) -> None:
    def ratios(query: str, kind: str) -> list[float]:
        mine = [r for r in reads if r["query"] == query]
        lance_times = [r[kind] for r in mine if r["format"] == "lance"]
        parquet_times = [r[kind] for r in mine if r["format"] == "parquet"]
        return [lt / pt for lt, pt in zip(lance_times, parquet_times, strict=True)]  # type: ignore[operator]

    print(f"\nrows: {arguments.rows:,}; master: {arguments.master or f'local[{arguments.cores}]'}")
    for when in ("first", "warm"):
        ratio = results[f"lance write {when}"] / results[f"parquet write {when}"]
        label = f"write, {'first in session' if when == 'first' else 'warm'}"
        print(f"{label:<32}Lance/Parquet: {ratio:.2f}x  (goal <= 1.10x)")
    for query in arguments.query_list:
        for kind, label in READ_FIGURES:
            figures = ", ".join(f"{ratio:.2f}x" for ratio in ratios(query, kind))
            print(f"{f'read {query}, {label}':<32}Lance/Parquet: {figures}  (goal <= 1.20x)")


def main() -> int:
    arguments = parse_arguments()
    if arguments.read_only:
        read_in_this_process(arguments)
        return 0
    in_workdir(arguments, run, "bench-lance-")
    return 0


def in_workdir(
    arguments: argparse.Namespace, run: Callable[[argparse.Namespace, Path], None], prefix: str
) -> None:
    """`run` in `--workdir` (kept), or in a scratch directory removed afterwards."""
    if arguments.workdir:
        arguments.workdir.mkdir(parents=True, exist_ok=True)
        run(arguments, arguments.workdir)
        return
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        run(arguments, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
