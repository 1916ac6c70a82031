"""Spark on the same data three ways: Parquet, lance-spark through this server, and the
project's own Python data source (`lance_adapter_spark`, format `lance`) through this server.

    .venv/bin/python bench/spark_three_way.py                      # 3M rows, local[2]
    .venv/bin/python bench/spark_three_way.py --rows 1000000 --cluster

One run generates the rows once (an id, a category, a price, a name, a flag and a 128-d
float32 vector) into a staging Parquet file; every writing session caches that file and
writes it (timed twice: first in the session, then warm). Reads run in a new Spark (new JVM)
per format and query: the first run is the "first in session" figure, the best of --warm
more the warm one. Queries: `scan` (every column of every row, Spark's noop sink), `narrow`
(average price per category: two columns) and `count`.

lance-spark exists on Maven Central only for Spark 3.5 / Scala 2.12, so it runs in a pyspark
3.5 of its own (made once in the test cache, see tests/support/lance_spark.py); Parquet is
timed on both Sparks, and each Lance figure is set against Parquet on its own Spark
(lance-spark also against Parquet on Spark 4). With --cluster the same runs again on a
standalone cluster of two one-core workers on 127.0.0.1 (one per Spark version, in turn).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import lance  # noqa: E402
from lance.namespace import RestNamespace  # noqa: E402
from lance_namespace import CreateNamespaceRequest  # noqa: E402

import lance_adapter_spark  # noqa: E402
from bench.spark_lance_vs_parquet import (  # noqa: E402
    in_workdir,
    standalone_cluster,
    with_query_list,
)
from examples.spark_runtime import embedded_adapter  # noqa: E402
from tests.support.lance_spark import (  # noqa: E402
    SparkDriver,
    lance_spark_driver,
    pyspark35_cluster,
)

DIMENSION = 128
NAMESPACE = "bench"
PIPELINE_TABLE = "pipeline_vectors"
SPARK_TABLE = "spark_vectors"
QUERIES = {  # name: (SQL over {t}, action); every source prunes columns itself
    "scan": ("SELECT * FROM {t}", "noop"),
    "narrow": ("SELECT category, avg(price) FROM {t} GROUP BY category", "collect"),
    "count": ("SELECT count(*) FROM {t}", "collect"),
}
FORMATS = ("parquet4", "pipeline", "parquet35", "lance-spark")
HEADINGS = {"parquet4": "Parquet (Spark 4)", "pipeline": "lance_adapter_spark (Spark 4)",
            "parquet35": "Parquet (Spark 3.5)", "lance-spark": "lance-spark (3.5)"}
GENERATE = (
    "SELECT id, CAST(id % 1000 AS INT) AS category, (id * 7919 % 100000) / 100.0 AS price, "
    "concat('item-', id) AS name, id % 3 = 0 AS flag, "
    f"transform(sequence(1, {DIMENSION}), i -> CAST(sin(id * i + 0.5) AS FLOAT)) AS embedding "
    "FROM range(0, {rows}, 1, {partitions})"
)
CREATE_SPARK_TABLE = (
    "CREATE TABLE {t} (id BIGINT NOT NULL, category INT, price DOUBLE, name STRING, "
    "flag BOOLEAN, embedding ARRAY<FLOAT> NOT NULL) "
    f"TBLPROPERTIES ('embedding.arrow.fixed-size-list.size' = '{DIMENSION}')"
)


def parse_arguments(arguments: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--partitions", type=int, default=4, help="of the generated data")
    parser.add_argument("--cores", type=int, default=2, help="local[N]")
    parser.add_argument("--memory", default="6g", help="Spark driver memory")
    parser.add_argument("--warm", type=int, default=2, help="reads after the first")
    parser.add_argument("--cluster", action="store_true",
                        help="also on a 2-worker standalone cluster")
    parser.add_argument("--cluster-only", action="store_true", help="only on the cluster")
    parser.add_argument("--executor-memory", default="1500m", help="on the cluster")
    parser.add_argument("--queries", default=",".join(QUERIES),
                        help=f"comma-separated, of {', '.join(QUERIES)}")
    parser.add_argument("--workdir", type=Path, help="where data goes (default: a temp dir)")
    return with_query_list(parser, parser.parse_args(arguments), QUERIES)


class Bench:
    """One run: the adapter, the staging data and every figure, for one master at a time."""

    def __init__(self, arguments: argparse.Namespace, workdir: Path, url: str) -> None:
        self.arguments, self.workdir, self.url = arguments, workdir, url
        self.staging = str(workdir / "staging.parquet")
        self.figures: dict[tuple[str, str, str], float] = {}  # (master, operation, format)
        self.logs = workdir / "logs"
        self.logs.mkdir(exist_ok=True)

    def base_conf(self, master: str) -> dict[str, str]:
        conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.sql.shuffle.partitions": str(self.arguments.cores),
                "spark.driver.memory": self.arguments.memory,
                "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
        if master.startswith("spark://"):
            conf.update({"spark.executor.memory": self.arguments.executor_memory,
                         "spark.executor.cores": "1", "spark.cores.max": "2"})
        return conf

    def spark4(self, master: str, name: str) -> SparkDriver:
        return SparkDriver(sys.executable, master, self.base_conf(master),
                           self.logs / f"{name}.log", app_name=name, register_pipeline=True)

    def spark35(self, master: str, name: str) -> SparkDriver:
        return lance_spark_driver(master, {"lance": self.url}, self.logs / f"{name}.log",
                                  self.base_conf(master))

    def pipeline_options(self, master: str) -> dict[str, str]:
        shared = "true" if master.startswith("spark://") else None
        return lance_adapter_spark.source_options(
            f"{NAMESPACE}.{PIPELINE_TABLE}", uri=self.url,
            vector_columns=f"embedding:{DIMENSION}", shared_storage=shared)

    def record(self, master: str, operation: str, format_name: str, seconds: float) -> None:
        self.figures[(master, operation, format_name)] = seconds
        print(f"  {master:<24}{operation:<16}{HEADINGS[format_name]:<30}{seconds:8.2f}s",
              flush=True)

    def generate(self) -> None:
        rows, partitions = self.arguments.rows, self.arguments.partitions
        print(f"generating {rows:,} rows into {self.staging} ...", flush=True)
        with self.spark4(f"local[{self.arguments.cores}]", "generate") as spark:
            taken = spark.time_write(GENERATE.format(rows=rows, partitions=partitions),
                                     "parquet", {}, "overwrite", path=self.staging)
        print(f"  generated in {taken:.1f}s", flush=True)
        RestNamespace(uri=self.url).create_namespace(CreateNamespaceRequest(id=[NAMESPACE]))

    def cache_source(self, spark: SparkDriver) -> None:
        spark.sql(f"CACHE TABLE source AS SELECT * FROM parquet.`{self.staging}`")

    def writes_spark4(self, master: str) -> None:
        parquet = str(self.workdir / f"out-{_slug(master)}-4.parquet")
        with self.spark4(master, f"write4-{_slug(master)}") as spark:
            self.cache_source(spark)
            for when in ("first", "warm"):
                self.record(master, f"write {when}", "parquet4", spark.time_write(
                    "SELECT * FROM source", "parquet", {}, "overwrite", path=parquet))
                self.record(master, f"write {when}", "pipeline", spark.time_write(
                    "SELECT * FROM source", "lance", self.pipeline_options(master), "overwrite"))
        self.check_rows(PIPELINE_TABLE)

    def writes_spark35(self, master: str) -> None:
        parquet = str(self.workdir / f"out-{_slug(master)}-35.parquet")
        table = f"lance.{NAMESPACE}.{SPARK_TABLE}"
        with self.spark35(master, f"write35-{_slug(master)}") as spark:
            self.cache_source(spark)
            for when in ("first", "warm"):
                self.record(master, f"write {when}", "parquet35", spark.time_write(
                    "SELECT * FROM source", "parquet", {}, "overwrite", path=parquet))
                spark.sql(f"DROP TABLE IF EXISTS {table} PURGE")  # as Parquet's overwrite, untimed
                started = time.perf_counter()
                spark.sql(CREATE_SPARK_TABLE.format(t=table))
                spark.sql(f"INSERT INTO {table} SELECT * FROM source")
                self.record(master, f"write {when}", "lance-spark", time.perf_counter() - started)
        self.check_rows(SPARK_TABLE)

    def check_rows(self, table: str) -> None:
        client = RestNamespace(uri=self.url)
        written = lance.dataset(namespace_client=client, table_id=[NAMESPACE, table])
        if written.count_rows() != self.arguments.rows:
            raise RuntimeError(f"{table} holds {written.count_rows():,} rows, "
                               f"not {self.arguments.rows:,}")

    def reads(self, master: str, formats: tuple[str, ...]) -> None:
        """Each (format, query) in a new Spark: its first run, then the best of --warm."""
        for query in self.arguments.query_list:
            for format_name in formats:
                name = f"read-{format_name}-{query}-{_slug(master)}"
                spark4 = format_name in ("parquet4", "pipeline")
                with (self.spark4 if spark4 else self.spark35)(master, name) as spark:
                    first = self.read_once(spark, master, format_name, query)
                    self.record(master, f"{query} first", format_name, first)
                    warm = min(self.read_once(spark, master, format_name, query)
                               for _ in range(self.arguments.warm))
                    self.record(master, f"{query} warm", format_name, warm)

    def read_once(self, spark: SparkDriver, master: str, format_name: str, query: str) -> float:
        sql, action = QUERIES[query]
        if format_name == "lance-spark":  # the catalog resolves the table in the timed query
            return spark.time_sql(sql.format(t=f"lance.{NAMESPACE}.{SPARK_TABLE}"), action)
        if format_name == "pipeline":
            options = self.pipeline_options(master)
            return spark.time_read("t", "lance", options, sql.format(t="t"), action)
        version = "4" if format_name == "parquet4" else "35"
        path = str(self.workdir / f"out-{_slug(master)}-{version}.parquet")
        return spark.time_read("t", "parquet", {}, sql.format(t="t"), action, path=path)

    def report(self, masters: list[str]) -> None:
        operations = ["write first", "write warm"]
        operations += [f"{q} {w}" for q in self.arguments.query_list for w in ("first", "warm")]
        for master in masters:
            print(f"\n{self.arguments.rows:,} rows with a {DIMENSION}-d float vector; "
                  f"master {master}; seconds (ratio to Parquet on the same Spark)")
            header = f"| {'operation':<13}|" + "".join(f" {HEADINGS[f]:<30}|" for f in FORMATS)
            print(header + " lance-spark / Parquet (Spark 4) |")
            print("|" + "---|" * (len(FORMATS) + 2))
            for operation in operations:
                cells = []
                for format_name in FORMATS:
                    seconds = self.figures.get((master, operation, format_name))
                    base = {"pipeline": "parquet4", "lance-spark": "parquet35"}.get(format_name)
                    text = "-" if seconds is None else f"{seconds:.2f}"
                    reference = self.figures.get((master, operation, base)) if base else None
                    if seconds is not None and reference:
                        text += f" ({seconds / reference:.2f}x)"
                    cells.append(f" {text:<30}|")
                spark_figure = self.figures.get((master, operation, "lance-spark"))
                parquet_figure = self.figures.get((master, operation, "parquet4"))
                cross = (f"{spark_figure / parquet_figure:.2f}x"
                         if spark_figure and parquet_figure else "-")
                print(f"| {operation:<13}|" + "".join(cells) + f" {cross:<32}|")


def _slug(master: str) -> str:
    return "cluster" if master.startswith("spark://") else "local"


def run(arguments: argparse.Namespace, workdir: Path) -> None:
    with embedded_adapter(workdir / "lance-data") as url:
        bench = Bench(arguments, workdir, url)
        bench.generate()
        masters: list[str] = []
        if not arguments.cluster_only:
            local = f"local[{arguments.cores}]"
            masters.append(local)
            bench.writes_spark4(local)
            bench.writes_spark35(local)
            bench.reads(local, FORMATS)
        if arguments.cluster or arguments.cluster_only:
            with standalone_cluster(workdir, worker_memory="2g") as master:
                masters.append("spark://cluster (2 workers)")
                label = masters[-1]
                bench.writes_spark4(master)
                bench.reads(master, ("parquet4", "pipeline"))
                _relabel(bench, master, label)
            with pyspark35_cluster(workdir / "cluster35", worker_memory="2g") as cluster:
                bench.writes_spark35(cluster.master_url)
                bench.reads(cluster.master_url, ("parquet35", "lance-spark"))
                _relabel(bench, cluster.master_url, label)
        bench.report(masters)


def _relabel(bench: Bench, master: str, label: str) -> None:
    """Both clusters' figures under one label (their URLs differ)."""
    for key in [key for key in bench.figures if key[0] == master]:
        bench.figures[(label, *key[1:])] = bench.figures.pop(key)


def main() -> int:
    in_workdir(parse_arguments(), run, "bench-three-way-")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
