"""Spark writing and reading Lance through the namespace vs Spark writing and reading Parquet.

    .venv/bin/python bench/spark_lance_vs_parquet.py --rows 10000000
    .venv/bin/python bench/spark_lance_vs_parquet.py --rows 1000000 --uri http://127.0.0.1:2333

The same DataFrame (an id, a few scalar columns and a 128-dim float32 vector) is cached,
then written by Spark to Parquet and to a Lance table through the adapter, then each is
read back and aggregated. Prints the times and the ratios Lance/Parquet (goal: write
<= 1.1x, read <= 1.2x). Without --uri an adapter on a dir backend is started for the run.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
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
from pipeline.runtime import embedded_adapter, local_spark

VECTOR_SIZE = 128
AGGREGATED = "category,price,embedding"  # the columns `aggregate` uses


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=0, help="default: 2 per core")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--memory", default="8g", help="Spark driver memory")
    parser.add_argument("--uri", help="a running adapter; default: start one")
    parser.add_argument("--workdir", type=Path, help="where data goes (default: a temp dir)")
    return parser.parse_args()


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
    started = time.perf_counter()
    action()
    seconds = time.perf_counter() - started
    print(f"  {label:<28}{seconds:8.1f}s", flush=True)
    return seconds


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
    table = "bench_vectors"
    with adapter(arguments.uri, workdir / "lance-data") as url:
        options = pipeline.source_options(table, uri=url, vector_columns=f"embedding:{VECTOR_SIZE}")
        write_lance = source.write.format("lance").options(**options).mode("overwrite")
        results = {
            "parquet write": timed(
                "parquet write", lambda: source.write.mode("overwrite").parquet(parquet_path)
            ),
            "lance write": timed("lance write", write_lance.save),
            "parquet read+agg": timed(
                "parquet read + aggregate", lambda: aggregate(spark.read.parquet(parquet_path))
            ),
            "lance read+agg": timed(
                "lance read + aggregate",
                # Spark prunes Parquet columns itself; Python sources are told explicitly.
                lambda: aggregate(
                    spark.read.format("lance").options(**options, columns=AGGREGATED).load()
                ),
            ),
        }
        written = lance.dataset(namespace_client=RestNamespace(uri=url), table_id=[table])
        print(f"  lance table holds {written.count_rows():,} rows", flush=True)
    report(arguments.rows, results)
    spark.stop()


def report(rows: int, results: dict[str, float]) -> None:
    write_ratio = results["lance write"] / results["parquet write"]
    read_ratio = results["lance read+agg"] / results["parquet read+agg"]
    print(f"\nrows: {rows:,}")
    print(f"write  Lance/Parquet: {write_ratio:.2f}x  (goal <= 1.10x)")
    print(f"read   Lance/Parquet: {read_ratio:.2f}x  (goal <= 1.20x)")


def main() -> int:
    arguments = parse_arguments()
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
