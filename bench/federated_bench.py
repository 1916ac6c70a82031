"""DescribeTable and ListTables on a server of several catalogs against the same server with one
backend: what routing by catalog costs (issue 48's target: DescribeTable within 10%).

Builds one directory root of `--tables` tables in 10 namespaces (as `rest_adapter_bench.py`
does) and serves a copy of it, in turn: `lance-adapter serve` with `--prop root=...`
("single", ids `ns0$t0`), and with `catalogs` holding that root as the catalog `lake` beside a
second, empty `dir` catalog ("federated", ids `lake$ns0$t0`). Both at their defaults (access
log on, metadata cache on); wrk drives each with the same load; with `--rounds N` they take
turns N times. Prints requests/s, p50, p99 and the federated server's ratio to the single one.

    .venv/bin/python bench/federated_bench.py [--tables 1000] [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.rest_adapter_bench import (
    CHECKOUT,
    NAMESPACES,
    Results,
    build_root,
    free_port,
    ours,
    parse_arguments,
    run_wrk,
    serving,
    workloads,
)


def main() -> None:
    args = parse_arguments(__doc__, rounds=3)
    results: Results = {}
    with tempfile.TemporaryDirectory() as scratch:
        template = Path(scratch) / "template"
        identifiers = build_root(template, args.tables)
        roots = {name: Path(scratch) / name for name in ("single", "federated")}
        for root in roots.values():
            shutil.copytree(template, root)
        catalogs = {"lake": {"impl": "dir", "root": str(roots["federated"])},
                    "scratch": {"impl": "dir", "root": str(Path(scratch) / "scratch")}}
        servers = {
            "single": (roots["single"], CHECKOUT, ""),
            "federated": (None, {**CHECKOUT, "LANCE_ADAPTER_CATALOGS": json.dumps(catalogs)},
                          "lake$"),
        }
        for _ in range(args.rounds):
            for server, (root, environment, prefix) in servers.items():
                port = free_port()
                with serving(ours(root, port, args.workers), port, environment) as url:
                    for operation, (method, paths, body) in workloads(
                            identifiers, prefix).items():
                        results.setdefault((server, operation), []).append(
                            run_wrk(url, method, paths, body, args))
    print(f"{args.tables} tables in {NAMESPACES} namespaces; wrk -t{args.threads} "
          f"-c{args.connections} -d{args.seconds}s; {args.rounds} round(s)")
    print(f"{'operation':<14}{'server':<11}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for operation in ("DescribeTable", "ListTables"):
        for server in servers:
            for measured in results[(server, operation)]:
                print(f"{operation:<14}{server:<11}{measured.requests_per_second:>10.0f}"
                      f"{measured.p50_ms:>9.2f}{measured.p99_ms:>9.2f}{measured.errors:>8}")
        ratios = [federated.requests_per_second / single.requests_per_second
                  for federated, single in zip(results[("federated", operation)],
                                               results[("single", operation)], strict=True)]
        print(f"{operation:<14}ratio federated/single (req/s): "
              f"{' '.join(f'{ratio:.2f}' for ratio in ratios)} (min {min(ratios):.2f}, "
              f"max {max(ratios):.2f})")


if __name__ == "__main__":
    main()
