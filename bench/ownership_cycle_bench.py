"""RegisterTable + DescribeTable + DropTable of one small table, while another namespace of the
catalog holds 0, 1,000 or 10,000 other Lance tables: what a write costs as the catalog grows.

Runs the adapter (a real uvicorn server on 127.0.0.1, metadata cache off) on `--impl glue`
(moto) and `--impl hive2` (the real Hive Metastore 2.3 of pyspark's jars, as the tests start
it). The other tables are catalog entries marked as Lance tables, made through the catalog's
own API (boto3 / Thrift), as another tool would. Each cycle writes the small table with
pylance first (not timed), then times the three calls through the official REST client.
Prints the median cycle per size and its ratio to the empty catalog (issue 24's target: within
1.2x at 10,000).

    .venv/bin/python bench/ownership_cycle_bench.py [--impls glue,hive2] [--sizes 0,1000,10000]
        [--cycles 5]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import lance
import pyarrow as pa
from lance.namespace import RestNamespace
from lance_namespace import (
    CreateNamespaceRequest,
    DescribeTableRequest,
    DropTableRequest,
    RegisterTableRequest,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.adapter import running_server
from tests.support.glue import glue_properties, start_moto
from tests.support.hive import HiveMetastoreProcess, create_raw_table

LANCE_PARAMETERS = {"table_type": "lance"}


@contextmanager
def glue_catalog(root: Path) -> Iterator[tuple[dict[str, str], Callable[[int], None]]]:
    server, url = start_moto()
    httpx.post(f"{url}/moto-api/reset")  # moto's state is one per process: start empty
    properties = glue_properties(url, root=str(root))

    def populate(count: int) -> None:
        import boto3

        glue = boto3.client("glue", endpoint_url=url, region_name=properties["region"],
                            aws_access_key_id=properties["access_key_id"],
                            aws_secret_access_key=properties["secret_access_key"])
        glue.create_database(DatabaseInput={"Name": "others"})
        for index in range(count):
            glue.create_table(DatabaseName="others", TableInput={
                "Name": f"t{index:05d}", "TableType": "EXTERNAL_TABLE",
                "Parameters": LANCE_PARAMETERS,
                "StorageDescriptor": {"Location": str(root / "others" / f"t{index:05d}.lance")},
            })

    try:
        yield properties, populate
    finally:
        server.stop()


@contextmanager
def hive_catalog(root: Path) -> Iterator[tuple[dict[str, str], Callable[[int], None]]]:
    metastore = HiveMetastoreProcess(Path(tempfile.mkdtemp(prefix="bench-hms-")))
    metastore.start()
    properties = {"uri": metastore.uri, "root": str(root)}

    def populate(count: int) -> None:
        from hive_metastore.ttypes import Database

        from tests.support.hive import metastore_client

        with metastore_client(metastore.port) as client:
            client.create_database(Database(name="others", locationUri=str(root / "others")))
        for index in range(count):
            create_raw_table(metastore.port, "others", f"t{index:05d}", "EXTERNAL_TABLE",
                             {**LANCE_PARAMETERS, "EXTERNAL": "TRUE"},
                             root / "others" / f"t{index:05d}")

    try:
        yield properties, populate
    finally:
        metastore.stop()


CATALOGS = {"glue": glue_catalog, "hive2": hive_catalog}


# Where each backend's layout puts table mine$t (`backends/layouts.py`): a table registered
# at its own path is dropped with its data, as a table the server created.
OWN_PATHS = {"glue": Path("mine", "t.lance"), "hive2": Path("mine.db", "t")}


# Cycles run first and not counted: connections, the metastore's JIT and caches warm up.
WARM_UP_CYCLES = 5


def cycle_seconds(client: RestNamespace, location: Path, cycles: int) -> list[float]:
    rows = pa.table({"id": list(range(100))})
    timings = []
    for _ in range(cycles + WARM_UP_CYCLES):
        lance.write_dataset(rows, str(location), mode="overwrite")
        start = time.perf_counter()
        client.register_table(RegisterTableRequest(id=["mine", "t"], location=str(location)))
        client.describe_table(DescribeTableRequest(id=["mine", "t"]))
        client.drop_table(DropTableRequest(id=["mine", "t"]))
        timings.append(time.perf_counter() - start)
    return timings[WARM_UP_CYCLES:]


def measure(impl: str, size: int, cycles: int) -> float:
    """The median cycle, in seconds, with `size` other tables in the catalog."""
    root = Path(tempfile.mkdtemp(prefix=f"bench-{impl}-{size}-"))
    with CATALOGS[impl](root) as (properties, populate):
        populate(size)
        with running_server(impl, properties, metadata_cache=False) as url:
            client = RestNamespace(uri=url)
            client.create_namespace(CreateNamespaceRequest(id=["mine"]))
            return statistics.median(cycle_seconds(client, root / OWN_PATHS[impl], cycles))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impls", default="glue,hive2")
    parser.add_argument("--sizes", default="0,1000,10000")
    parser.add_argument("--cycles", type=int, default=5)
    arguments = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto logs every request
    sizes = [int(size) for size in arguments.sizes.split(",")]
    for impl in arguments.impls.split(","):
        baseline = None
        for size in sizes:
            median = measure(impl, size, arguments.cycles)
            baseline = baseline or median
            print(f"{impl:6} {size:>6} other tables: cycle median {median * 1000:8.1f} ms, "
                  f"{median / baseline:6.2f}x the first size", flush=True)


if __name__ == "__main__":
    main()
