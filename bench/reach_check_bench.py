"""The cost of checking what a table reaches (issue 68): DescribeTable and a k=10 vector search
in-process on `dir`, loaded as the server loads it, at this checkout and at an earlier commit
(before the check), alternating rounds in one run; prints each median and the ratio.

    .venv/bin/python bench/reach_check_bench.py --before 803e903 [--rounds 5] [--calls 400]

The earlier commit is checked out into a temporary git worktree; each round runs one fresh
interpreter per checkout on the same table (20,000 rows of 128-dim vectors, no index: the
search scans, as a small table's does).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]

MEASURE = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
import lance
from lance_namespace import DescribeTableRequest, QueryTableRequest
from backends import load_namespace
namespace = load_namespace("dir", {"root": sys.argv[2]}, session=lance.Session())
calls, table = int(sys.argv[3]), ["bench", "vectors"]
query = [0.5] * 128

def timed(call):
    for _ in range(20):
        call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6

print(json.dumps({
    "describe": timed(lambda: namespace.describe_table(DescribeTableRequest(id=table))),
    "describe_detailed": timed(lambda: namespace.describe_table(
        DescribeTableRequest(id=table, load_detailed_metadata=True))),
    "search_k10": timed(lambda: namespace.query_table(QueryTableRequest(
        id=table, k=10, vector={"single_vector": query}, columns={"column_names": ["id"]}))),
}))
"""


def make_root(directory: Path) -> str:
    from lance_namespace import CreateNamespaceRequest, CreateTableRequest

    from backends import load_namespace

    root = str(directory / "root")
    namespace = load_namespace("dir", {"root": root})
    namespace.create_namespace(CreateNamespaceRequest(id=["bench"]))
    vectors = np.random.default_rng(7).random((20_000, 128), dtype=np.float32)
    rows = pa.table({"id": pa.array(range(20_000), pa.int64()),
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 128)})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows)
    data = sink.getvalue().to_pybytes()
    namespace.create_table(CreateTableRequest(id=["bench", "vectors"]), data)
    return root


def measure(checkout: Path, root: str, calls: int) -> dict[str, float]:
    answer = subprocess.run([sys.executable, "-c", MEASURE, str(checkout), root, str(calls)],
                            check=True, capture_output=True, text=True, cwd=checkout)
    return json.loads(answer.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the commit before the check")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=400)
    arguments = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as scratch:
        before = Path(scratch) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(before),
                        arguments.before], check=True, capture_output=True)
        try:
            root = make_root(Path(scratch))
            runs: dict[str, list[dict[str, float]]] = {"before": [], "now": []}
            for _ in range(arguments.rounds):
                runs["before"].append(measure(before, root, arguments.calls))
                runs["now"].append(measure(ROOT, root, arguments.calls))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(before)], check=False, capture_output=True)
    print(f"{'measure':<20}{'before µs':>12}{'now µs':>12}{'now/before':>12}")
    for name in runs["now"][0]:
        old = statistics.median(run[name] for run in runs["before"])
        new = statistics.median(run[name] for run in runs["now"])
        print(f"{name:<20}{old:>12.0f}{new:>12.0f}{new / old:>12.2f}")


if __name__ == "__main__":
    main()
