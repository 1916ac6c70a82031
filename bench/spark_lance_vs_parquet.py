"""Spark writing and reading Lance through the namespace vs Spark writing and reading Parquet.

    .venv/bin/python bench/spark_lance_vs_parquet.py --rows 10000000
    .venv/bin/python bench/spark_lance_vs_parquet.py --rows 1000000 --uri http://127.0.0.1:2333

The same DataFrame (an id, a few scalar columns and a 128-dim float32 vector) is cached,
then written by Spark to Parquet and to a Lance table through the adapter. Then, for
each of --fresh-runs rounds, a new Spark (new JVM, new Python workers) per format reads
it back and aggregates: the first read is the fresh-session figure, the best of the
next --warm-reads the warm one. Prints the times and the ratios Lance/Parquet (goal:
write <= 1.1x, read <= 1.2x). Without --uri an adapter on a dir backend is started.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import lance
from lance.namespace import RestNamespace
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import pipeline
from examples.spark_runtime import embedded_adapter, local_spark

VECTOR_SIZE = 128
AGGREGATED = "category,price,embedding"  # the columns `aggregate` uses
TABLE = "bench_vectors"


def parse_arguments(arguments: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=0, help="default: 2 per core")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--memory", default="8g", help="Spark driver memory")
    parser.add_argument("--uri", help="a running adapter; default: start one")
    parser.add_argument("--workdir", type=Path, help="where data goes (default: a temp dir)")
    parser.add_argument("--fresh-runs", type=int, default=2, help="fresh sessions per format")
    parser.add_argument("--warm-reads", type=int, default=2, help="reads after the first")
    parser.add_argument("--read-only", choices=("lance", "parquet"), help=argparse.SUPPRESS)
    parser.add_argument("--parquet-path", help=argparse.SUPPRESS)
    return parser.parse_args(arguments)


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


def run(arguments: argparse.Namespace, workdir: Path) -> None:
    spark = local_spark("bench-lance-vs-parquet", arguments.cores, arguments.memory)
    partitions = arguments.partitions or arguments.cores * 2
    source = source_frame(spark, arguments.rows, partitions).cache()
    print(f"materialising {arguments.rows:,} rows in {partitions} partitions ...", flush=True)
    timed("generate + cache", source.count)
    parquet_path = str(workdir / "bench.parquet")
    with adapter(arguments.uri, workdir / "lance-data") as url:
        options = lance_options(url)
        write_lance = source.write.format("lance").options(**options).mode("overwrite")
        results = {
            "parquet write": timed(
                "parquet write", lambda: source.write.mode("overwrite").parquet(parquet_path)
            ),
            "lance write": timed("lance write", write_lance.save),
        }
        written = lance.dataset(namespace_client=RestNamespace(uri=url), table_id=[TABLE])
        print(f"  lance table holds {written.count_rows():,} rows", flush=True)
        spark.stop()  # frees the cache's memory for the reading sessions
        reads = [
            fresh_session_reads(arguments, format_name, url, parquet_path)
            for _ in range(arguments.fresh_runs)
            for format_name in ("parquet", "lance")
        ]
    report(arguments.rows, results, reads)


def lance_options(url: str) -> dict[str, str]:
    return pipeline.source_options(TABLE, uri=url, vector_columns=f"embedding:{VECTOR_SIZE}")


def fresh_session_reads(
    arguments: argparse.Namespace, format_name: str, url: str, parquet_path: str
) -> dict[str, object]:
    """Read + aggregate in a new process: its first read, then --warm-reads more."""
    command = [sys.executable, __file__, "--read-only", format_name, "--uri", url]
    command += ["--parquet-path", parquet_path, "--cores", str(arguments.cores)]
    command += ["--memory", arguments.memory, "--warm-reads", str(arguments.warm_reads)]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=True)
    figures = json.loads(finished.stdout.strip().splitlines()[-1])
    print(f"  {format_name:<8} fresh {figures['fresh']:6.1f}s   warm {figures['warm']:6.1f}s")
    return figures


def read_in_this_process(arguments: argparse.Namespace) -> None:
    spark = local_spark(f"bench-read-{arguments.read_only}", arguments.cores, arguments.memory)

    def read() -> list:
        if arguments.read_only == "parquet":
            return aggregate(spark.read.parquet(arguments.parquet_path))
        # Spark prunes Parquet columns itself; Python sources are told explicitly.
        options = {**lance_options(arguments.uri), "columns": AGGREGATED}
        return aggregate(spark.read.format("lance").options(**options).load())

    fresh = seconds(read)
    warm = min(seconds(read) for _ in range(arguments.warm_reads))
    spark.stop()
    figures = {"format": arguments.read_only, "fresh": fresh, "warm": warm}
    print(json.dumps(figures), flush=True)


def seconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def report(rows: int, results: dict[str, float], reads: list[dict[str, object]]) -> None:
    def ratios(kind: str) -> list[float]:
        lance_times = [r[kind] for r in reads if r["format"] == "lance"]
        parquet_times = [r[kind] for r in reads if r["format"] == "parquet"]
        return [lt / pt for lt, pt in zip(lance_times, parquet_times, strict=True)]  # type: ignore[operator]

    write_ratio = results["lance write"] / results["parquet write"]
    print(f"\nrows: {rows:,}")
    print(f"write               Lance/Parquet: {write_ratio:.2f}x  (goal <= 1.10x)")
    for kind, label in (("fresh", "read, fresh session"), ("warm", "read, warm")):
        figures = ", ".join(f"{ratio:.2f}x" for ratio in ratios(kind))
        print(f"{label:<20}Lance/Parquet: {figures}  (goal <= 1.20x)")


def main() -> int:
    arguments = parse_arguments()
    if arguments.read_only:
        read_in_this_process(arguments)
        return 0
    if arguments.workdir:
        arguments.workdir.mkdir(parents=True, exist_ok=True)
        run(arguments, arguments.workdir)
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="bench-lance-"))
    try:
        run(arguments, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
