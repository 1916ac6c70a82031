"""Example pipeline: raw CSV and Parquet files -> transform -> a Lance table -> summary.

    .venv/bin/python -m examples.spark_pipeline                 # starts its own adapter
    .venv/bin/python -m examples.spark_pipeline --uri http://127.0.0.1:2333

It makes a small raw data set of taxi-like trips (CSV for the zones, Parquet for the
trips), joins and cleans it with Spark, writes it to the Lance table `demo.trips` of the
namespace, reads the table back through the namespace and prints a summary.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from lance_namespace import CreateNamespaceRequest, NamespaceExistsRequest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import lance_adapter_spark
from examples.spark_runtime import Progress, embedded_adapter, local_spark
from lance_adapter_spark.options import LanceSourceError, connect, parse_options
from lance_adapter_spark.tables import call_namespace

ZONES = ["Airport", "Downtown", "Harbor", "Midtown", "Old Town", "University"]


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m examples.spark_pipeline", description=__doc__)
    parser.add_argument("--uri", help="a running adapter; default: start one on a temp dir")
    parser.add_argument("--rows", type=int, default=200_000, help="trips to generate")
    parser.add_argument("--table", default="demo.trips", help="target table identifier")
    parser.add_argument("--raw-dir", type=Path, help="where the raw files go (default: temp)")
    return parser.parse_args(argv)


def make_raw_files(spark: SparkSession, raw_dir: Path, rows: int) -> tuple[Path, Path]:
    """A CSV of zones and a Parquet data set of trips, standing in for a landing zone."""
    zones_csv = raw_dir / "zones.csv"
    zones_csv.write_text(
        "zone_id,zone_name\n" + "".join(f"{i},{name}\n" for i, name in enumerate(ZONES))
    )
    trips_parquet = raw_dir / "trips.parquet"
    spark.range(rows, numPartitions=4).selectExpr(
        "id AS trip_id",
        f"CAST(id % {len(ZONES)} AS INT) AS pickup_zone",
        "TIMESTAMP'2025-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id * 7) AS pickup_at",
        "ROUND(0.5 + (id * 7919 % 2000) / 100.0, 2) AS distance_km",
        "CAST(ROUND(3 + (id * 104729 % 6000) / 100.0, 2) AS DECIMAL(10, 2)) AS fare",
        "IF(id % 50 = 0, NULL, CAST(1 + id % 4 AS TINYINT)) AS passengers",
        "TRANSFORM(SEQUENCE(1, 8), i -> CAST(SIN(id * i) AS FLOAT)) AS route_embedding",
    ).write.mode("overwrite").parquet(str(trips_parquet))
    return zones_csv, trips_parquet


def transform(trips: DataFrame, zones: DataFrame) -> DataFrame:
    """Clean, enrich and derive: the part of a real pipeline that holds the business rules."""
    return (
        trips.where(F.col("distance_km") > 0)
        .join(F.broadcast(zones), trips.pickup_zone == zones.zone_id, "left")
        .select(
            "trip_id",
            F.col("zone_name").alias("pickup_zone"),
            "pickup_at",
            F.to_date("pickup_at").alias("pickup_day"),
            "distance_km",
            "fare",
            F.round(F.col("fare") / F.col("distance_km"), 2).alias("fare_per_km"),
            F.coalesce("passengers", F.lit(1).cast("tinyint")).alias("passengers"),
            "route_embedding",
        )
    )


def ensure_namespace(options: dict[str, str]) -> None:
    """Create the table's parent namespace (e.g. `demo`) when it does not exist yet."""
    parsed = parse_options(options)
    parent = parsed.table_id[:-1]
    if not parent:
        return
    namespace = connect(parsed)
    try:
        call_namespace(
            parsed, lambda: namespace.namespace_exists(NamespaceExistsRequest(id=parent))
        )
    except LanceSourceError as error:
        if "does not exist" not in str(error):
            raise
        call_namespace(
            parsed, lambda: namespace.create_namespace(CreateNamespaceRequest(id=parent))
        )


def summarize(table: DataFrame) -> DataFrame:
    return (
        table.groupBy("pickup_zone")
        .agg(
            F.count("*").alias("trips"),
            F.round(F.avg("distance_km"), 2).alias("avg_km"),
            F.sum("fare").alias("revenue"),
            F.round(F.avg("fare_per_km"), 2).alias("avg_fare_per_km"),
        )
        .orderBy("pickup_zone")
    )


def run(uri: str, arguments: argparse.Namespace, raw_dir: Path) -> None:
    spark = local_spark("lance-example-pipeline")
    progress = Progress(spark)
    options = lance_adapter_spark.source_options(arguments.table, uri=uri)
    with progress.step(f"checking the namespace of '{arguments.table}' at {uri}"):
        ensure_namespace(options)
    with progress.step(f"writing {arguments.rows:,} raw trips (Parquet) and zones (CSV)"):
        zones_csv, trips_parquet = make_raw_files(spark, raw_dir, arguments.rows)
    with progress.step("reading the raw files and transforming them"):
        zones = spark.read.option("header", True).option("inferSchema", True).csv(str(zones_csv))
        cleaned = transform(spark.read.parquet(str(trips_parquet)), zones)
    with progress.step(f"writing Lance table '{arguments.table}' through {uri}"):
        lance_adapter_spark.save_table(
            cleaned, arguments.table, mode="overwrite", uri=uri, vector_columns="route_embedding:8"
        )
    with progress.step("reading the table back through the namespace"):
        # One DataFrame per query: Spark 4.3 reuses a filtered scan for later unfiltered
        # queries on the same loaded DataFrame (see docs/spark.md, "Known limits").
        table = lance_adapter_spark.read_table(spark, arguments.table, uri=uri)
        rows = table.count()
        overall = summarize(table).collect()
        shared = lance_adapter_spark.read_table(spark, arguments.table, uri=uri)
        busiest = summarize(shared.where("passengers >= 2")).collect()
    print(f"\nTable {arguments.table}: {rows:,} rows, columns: {', '.join(table.columns)}")
    print(f"{'zone':<12}{'trips':>10}{'avg km':>10}{'revenue':>16}{'fare/km':>10}")
    for row in overall:
        print(
            f"{row.pickup_zone:<12}{row.trips:>10,}{row.avg_km:>10}"
            f"{row.revenue:>16,}{row.avg_fare_per_km:>10}"
        )
    print(f"trips with 2+ passengers: {sum(r.trips for r in busiest):,}")


@contextlib.contextmanager
def adapter_for(arguments: argparse.Namespace, workdir: Path) -> Iterator[str]:
    if arguments.uri:
        yield arguments.uri
        return
    root = workdir / "lance-data"
    root.mkdir()
    print(f"starting an adapter on a dir backend at {root}")
    with embedded_adapter(root) as url:
        yield url


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    with tempfile.TemporaryDirectory(prefix="lance-example-") as workdir:
        raw_dir = arguments.raw_dir or Path(workdir) / "raw"
        raw_dir.mkdir(parents=True, exist_ok=True)
        try:
            with adapter_for(arguments, Path(workdir)) as uri:
                run(uri, arguments, raw_dir)
        except LanceSourceError as error:
            print(f"error: {error}")
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
