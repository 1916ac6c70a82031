"""Vector search: this server vs pylance's RestAdapter vs the same search in-process.

Builds one directory root holding a table of `--rows` rows with a 128-d float32 vector and an
IVF_PQ index, and measures, in one run on the same data: k=10 searches one at a time (p50,
p99) and with 8 clients at once (QPS), through this server (`lance-adapter serve`, one worker
per CPU, its defaults: one Lance session per worker; and again with Lance's caches sized to
nothing, "ours-uncached"), through RestAdapter (QueryTable on the
same route) and on a dataset opened in-process. Every answer's ids are checked against the
in-process answer. The servers' QPS is also measured with wrk's connections (the Python
clients share the GIL and the server's cores). Prints each figure and its ratio.

    .venv/bin/python bench/vector_search_bench.py [--rows 200000] [--queries 300] [--clients 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

os.environ.setdefault("LANCE_LOG", "error")  # before lance: no warning per search
import lance
import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.rest_adapter_bench import CHECKOUT, free_port, ours, rest_adapter, run_wrk, serving

DIMENSION = 128
K = 10


def build(root: Path, rows: int) -> np.ndarray:
    """The table `vectors` in `root` (written in batches, then indexed); its query vectors."""
    generator = np.random.default_rng(7)
    uri = str(root / "vectors.lance")
    batch = 50_000
    for start in range(0, rows, batch):
        count = min(batch, rows - start)
        values = generator.random((count, DIMENSION), dtype=np.float32)
        table = pa.table({
            "id": pa.array(np.arange(start, start + count), pa.int64()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(values.ravel()), DIMENSION),
        })
        lance.write_dataset(table, uri, mode="create" if start == 0 else "append")
    lance.dataset(uri).create_index("vector", index_type="IVF_PQ", num_partitions=64,
                                    num_sub_vectors=16)
    return generator.random((64, DIMENSION), dtype=np.float32)


def http_search(url: str) -> Callable[[httpx.Client, np.ndarray], list[int]]:
    def search(client: httpx.Client, query: np.ndarray) -> list[int]:
        answer = client.post(f"{url}/v1/table/vectors/query", json={
            "k": K, "vector": {"single_vector": query.tolist()},
            "columns": {"column_names": ["id"]}})
        answer.raise_for_status()
        return pa.ipc.open_file(answer.content).read_all().column("id").to_pylist()
    return search


def in_process_search(uri: str) -> Callable[[object, np.ndarray], list[int]]:
    dataset = lance.dataset(uri)

    def search(_: object, query: np.ndarray) -> list[int]:
        found = dataset.to_table(columns=["id", "_distance"],
                                 nearest={"column": "vector", "q": query, "k": K})
        return found.column("id").to_pylist()
    return search


def latencies(search: Callable, queries: np.ndarray, count: int) -> list[float]:
    client = httpx.Client(timeout=60)
    for query in queries[:8]:  # warm: the first searches load the index
        search(client, query)
    taken = []
    for index in range(count):
        started = time.perf_counter()
        search(client, queries[index % len(queries)])
        taken.append((time.perf_counter() - started) * 1000)
    return taken


def qps(search: Callable, queries: np.ndarray, clients: int, seconds: float) -> float:
    done = [0] * clients
    stop = threading.Event()

    def run(slot: int) -> None:
        client = httpx.Client(timeout=60)
        while not stop.is_set():
            search(client, queries[(slot + done[slot]) % len(queries)])
            done[slot] += 1

    threads = [threading.Thread(target=run, args=(slot,)) for slot in range(clients)]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return sum(done) / seconds


def wrk_qps(url: str, query: np.ndarray, args: argparse.Namespace) -> float:
    """Searches per second from `args.clients` connections driven by wrk (C, two threads):
    the server's capacity, not the Python clients' (which share the GIL and these cores)."""
    body = json.dumps({"k": K, "vector": {"single_vector": query.tolist()},
                       "columns": {"column_names": ["id"]}})
    load = argparse.Namespace(threads=2, connections=args.clients, seconds=int(args.seconds))
    measured = run_wrk(url, "POST", ["/v1/table/vectors/query"], f"[[{body}]]", load)
    if measured.errors:
        raise RuntimeError(f"wrk saw {measured.errors} errors")
    return measured.requests_per_second


def measure(name: str, search: Callable, queries: np.ndarray, args: argparse.Namespace,
            expected: list[list[int]], url: str | None = None) -> dict[str, float]:
    client = httpx.Client(timeout=60)
    wrong = sum(search(client, q) != e for q, e in zip(queries, expected, strict=True))
    taken = sorted(latencies(search, queries, args.queries))
    figures = {"p50": statistics.median(taken), "p99": taken[int(len(taken) * 0.99) - 1],
               "qps": qps(search, queries, args.clients, args.seconds)}
    if url is not None:
        figures["wrk"] = wrk_qps(url, queries[0], args)
    served = f"  wrk QPS {figures['wrk']:.0f}" if url is not None else ""
    print(f"{name:>12}: p50 {figures['p50']:.2f} ms  p99 {figures['p99']:.2f} ms  "
          f"{args.clients}-client QPS {figures['qps']:.0f}{served}  answers differing: {wrong}",
          flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        queries = build(root, args.rows)
        # The table's files written out now: the kernel writing them back later (about
        # 30 s on) took the CPU from whichever peer was measured then.
        os.sync()
        local = in_process_search(str(root / "vectors.lance"))
        expected = [local(None, query) for query in queries]
        results = {"in-process": measure("in-process", local, queries, args, expected)}
        port = free_port()
        with serving(ours(root, port, None), port, CHECKOUT) as url:
            results["ours"] = measure("ours", http_search(url), queries, args, expected, url)
        port = free_port()  # the same server with Lance's caches as good as off
        uncached = {**CHECKOUT, "LANCE_ADAPTER_LANCE_INDEX_CACHE_BYTES": "1",
                    "LANCE_ADAPTER_LANCE_METADATA_CACHE_BYTES": "1"}
        with serving(ours(root, port, None), port, uncached) as url:
            results["ours-uncached"] = measure("ours-uncached", http_search(url), queries, args,
                                               expected)
        port = free_port()
        with serving(rest_adapter(root, port), port) as url:
            results["RestAdapter"] = measure("RestAdapter", http_search(url), queries, args,
                                             expected, url)
    ours_, peer, inner = results["ours"], results["RestAdapter"], results["in-process"]
    print(f"p50: ours / in-process {ours_['p50'] / inner['p50']:.2f}x, "
          f"ours / RestAdapter {ours_['p50'] / peer['p50']:.2f}x")
    print(f"{args.clients}-client QPS: ours / RestAdapter {ours_['qps'] / peer['qps']:.2f}x, "
          f"ours / in-process {ours_['qps'] / inner['qps']:.2f}x; with wrk's {args.clients} "
          f"connections: ours / RestAdapter {ours_['wrk'] / peer['wrk']:.2f}x")


if __name__ == "__main__":
    main()
