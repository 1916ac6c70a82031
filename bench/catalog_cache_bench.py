"""Repeated DescribeTable and ListTables on catalog backends, with and without the metadata cache.

Starts a real Hive Metastore 2.3.10 (pyspark jars, embedded Derby) for `hive2` and moto's
server for `glue`, declares --tables Lance tables in one database of each, then serves each
backend with `lance-adapter serve` (one worker per CPU) twice: with an opted-in
LANCE_ADAPTER_METADATA_CACHE_TTL=2 (catalog answers cached unvalidated for 2 s), and with
LANCE_ADAPTER_METADATA_CACHE=false (what the defaults cost too: they cache no catalog answer),
and drives each with wrk at one connection (latency) cycling over all tables. Prints req/s,
p50 and p99, and beside them one catalog round trip: the catalog's own get_table, called from
Python over the same tables (Thrift for hive2, boto3 for glue), and the ratio of the adapter's
DescribeTable p50 to it.

    .venv/bin/python bench/catalog_cache_bench.py [--tables 100] [--seconds 5] [--only glue]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import lance_namespace as ln

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backends import load_namespace
from bench.rest_adapter_bench import CHECKOUT, Measurement, free_port, run_wrk, serving
from tests.support.glue import glue_properties, start_moto
from tests.support.hive import HiveMetastoreProcess, metastore_client

DATABASE = "bench"
CLI = str(Path(sys.executable).parent / "lance-adapter")


def declare_tables(backend: ln.LanceNamespace, count: int) -> list[str]:
    backend.create_namespace(ln.CreateNamespaceRequest(id=[DATABASE]))
    names = [f"table_{index:04d}" for index in range(count)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(
            lambda name: backend.declare_table(ln.DeclareTableRequest(id=[DATABASE, name])),
            names,
        ))
    return names


@contextlib.contextmanager
def hive2(workdir: Path) -> Iterator[dict[str, str]]:
    metastore = HiveMetastoreProcess(workdir / "metastore")
    metastore.start()
    try:
        yield {"uri": metastore.uri, "root": str(workdir / "hive-lake")}
    finally:
        metastore.stop()


@contextlib.contextmanager
def glue(workdir: Path) -> Iterator[dict[str, str]]:
    server, url = start_moto()
    try:
        yield glue_properties(url, root=str(workdir / "glue-lake"))
    finally:
        server.stop()


CATALOGS = {"hive2": hive2, "glue": glue}


@contextlib.contextmanager
def adapter(impl: str, properties: dict[str, str], cached: bool) -> Iterator[str]:
    port = free_port()
    command = [CLI, "serve", "--impl", impl, "--port", str(port), "--log-level", "warning"]
    for key, value in properties.items():
        command += ["--prop", f"{key}={value}"]
    cache = {"LANCE_ADAPTER_METADATA_CACHE_TTL": "2"} if cached else {
        "LANCE_ADAPTER_METADATA_CACHE": "false"
    }
    environment = {**CHECKOUT, **cache}
    with serving(command, port, environment) as url:
        yield url


def measure(url: str, names: list[str], args: argparse.Namespace) -> dict[str, Measurement]:
    describe = [f"/v1/table/{DATABASE}${name}/describe" for name in names]
    listing = [f"/v1/namespace/{DATABASE}/table/list"]
    return {
        "DescribeTable": run_wrk(url, "POST", describe, '"{}"', args),
        "ListTables": run_wrk(url, "GET", listing, "nil", args),
    }


@contextlib.contextmanager
def catalog_get_table(impl: str, properties: dict[str, str]) -> Iterator[Callable[[str], None]]:
    """One get_table of the catalog itself, for a table name."""
    if impl == "hive2":
        port = int(properties["uri"].rsplit(":", 1)[1])
        with metastore_client(port) as client:
            yield lambda name: client.get_table(DATABASE, name)
        return
    import boto3

    client = boto3.client(
        "glue", endpoint_url=properties["endpoint"], region_name=properties["region"],
        aws_access_key_id=properties["access_key_id"],
        aws_secret_access_key=properties["secret_access_key"],
    )
    yield lambda name: client.get_table(DatabaseName=DATABASE, Name=name)


def round_trip(
    impl: str, properties: dict[str, str], names: list[str], seconds: int
) -> Measurement:
    """The catalog's own get_table, one at a time over `names`, for `seconds`."""
    latencies: list[float] = []
    with catalog_get_table(impl, properties) as get_table:
        deadline = time.monotonic() + seconds
        for name in itertools.cycle(names):
            started = time.perf_counter()
            get_table(name)
            latencies.append(time.perf_counter() - started)
            if time.monotonic() > deadline:
                break
    ordered = sorted(latencies)
    return Measurement(len(latencies) / seconds, statistics.median(ordered) * 1000,
                       ordered[int(len(ordered) * 0.99)] * 1000, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", choices=sorted(CATALOGS))
    args = parser.parse_args()
    rows: list[tuple[str, str, str, Measurement]] = []
    with tempfile.TemporaryDirectory(prefix="catalog-bench-") as scratch:
        for impl, catalog in CATALOGS.items():
            if args.only and impl != args.only:
                continue
            workdir = Path(scratch) / impl
            with catalog(workdir) as properties:
                names = declare_tables(load_namespace(impl, properties), args.tables)
                rows.append((impl, "catalog itself", "get_table",
                             round_trip(impl, properties, names, args.seconds)))
                for cached in (True, False):
                    with adapter(impl, properties, cached) as url:
                        label = "ttl 2 s (opt-in)" if cached else "off (= defaults)"
                        for operation, result in measure(url, names, args).items():
                            rows.append((impl, label, operation, result))
    print(f"{args.tables} tables; wrk -t{args.threads} -c{args.connections} -d{args.seconds}s; "
          "adapter with an opted-in cache TTL of 2 s or with the cache off; load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'backend':<8}{'cache':<18}{'operation':<15}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
          f"{'errors':>8}")
    for impl, label, operation, m in rows:
        print(f"{impl:<8}{label:<18}{operation:<15}{m.requests_per_second:>9.0f}"
              f"{m.p50_ms:>9.2f}{m.p99_ms:>9.2f}{m.errors:>8}")
    trips = {impl: m.p50_ms for impl, label, _, m in rows if label == "catalog itself"}
    for impl, label, operation, m in rows:
        if operation == "DescribeTable":
            print(f"{impl}: DescribeTable ({label}) p50 / one get_table p50: "
                  f"{m.p50_ms / trips[impl]:.2f}")


if __name__ == "__main__":
    main()
