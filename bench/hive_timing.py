"""Time DescribeTable and ListTables through the adapter against a real Hive Metastore.

Starts Hive Metastore 2.3.10 (pyspark jars, embedded Derby) unless --uri names one, registers
--tables Lance tables (default 1,000) in one database with the hive2 backend, serves that
backend with the adapter and times the official Lance REST client against it.

    .venv/bin/python bench/hive_timing.py [--tables 1000] [--describes 200] [--lists 20]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import lance_namespace as ln
from lance.namespace import RestNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backends.hive import Hive2Namespace
from tests.support.adapter import running_server
from tests.support.hive import HiveMetastoreProcess


def timed(call: Callable[[], object], repeats: int) -> list[float]:
    durations = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        durations.append(time.perf_counter() - started)
    return durations


def report(label: str, durations: list[float]) -> None:
    ordered = sorted(durations)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    print(
        f"{label}: mean {statistics.mean(durations) * 1000:.1f} ms, "
        f"median {statistics.median(durations) * 1000:.1f} ms, "
        f"p95 {p95 * 1000:.1f} ms over {len(durations)} calls"
    )


def register_tables(uri: str, root: str, database: str, count: int) -> float:
    backend = Hive2Namespace(uri=uri, root=root, **{"client.pool-size": "4"})
    backend.create_namespace(ln.CreateNamespaceRequest(id=[database]))
    names = [f"table_{index:04d}" for index in range(count)]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(
            pool.map(
                lambda name: backend.declare_table(ln.DeclareTableRequest(id=[database, name])),
                names,
            )
        )
    backend.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--uri", help="an existing metastore (thrift://host:port)")
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--describes", type=int, default=200)
    parser.add_argument("--lists", type=int, default=20)
    arguments = parser.parse_args()

    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hive-bench-")))
        uri = arguments.uri
        if uri is None:
            metastore = HiveMetastoreProcess(workdir / "metastore")
            started = time.perf_counter()
            metastore.start()
            stack.callback(metastore.stop)
            print(f"metastore started in {time.perf_counter() - started:.1f} s at {metastore.uri}")
            uri = metastore.uri

        database = f"bench_{uuid.uuid4().hex[:8]}"
        took = register_tables(uri, str(workdir / "lake"), database, arguments.tables)
        print(f"declared {arguments.tables} tables in {took:.1f} s (4 threads, direct backend)")

        url = stack.enter_context(running_server("hive2", {"uri": uri, "root": str(workdir)}))
        client = RestNamespace(uri=url)
        names = client.list_tables(ln.ListTablesRequest(id=[database])).tables
        assert len(names) == arguments.tables, f"expected {arguments.tables}, got {len(names)}"

        report(
            "DescribeTable",
            timed(
                lambda: client.describe_table(
                    ln.DescribeTableRequest(id=[database, random.choice(names)])
                ),
                arguments.describes,
            ),
        )
        report(
            f"ListTables ({arguments.tables} tables, one page)",
            timed(lambda: client.list_tables(ln.ListTablesRequest(id=[database])), arguments.lists),
        )
        report(
            "ListTables (first page, limit 100)",
            timed(
                lambda: client.list_tables(ln.ListTablesRequest(id=[database], limit=100)),
                arguments.lists,
            ),
        )


if __name__ == "__main__":
    main()
