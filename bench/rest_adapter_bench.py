"""DescribeTable and ListTables: this adapter vs pylance's own RestAdapter, same load.

Builds one directory root holding 1,000 tables in 10 namespaces, copies it for each server,
starts both servers on 127.0.0.1, drives each with wrk (Debian package `wrk`) at the same
concurrency, and prints requests/s, p50, p99 and the ratio ours / RestAdapter.

    .venv/bin/python bench/rest_adapter_bench.py [--tables 1000] [--seconds 10] [--workers 2]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyarrow as pa
from lance.namespace import DirectoryNamespace
from lance_namespace import CreateNamespaceRequest, DeclareTableRequest

NAMESPACES = 10
LUA = """
local paths = {%(paths)s}
local counter = 0
request = function()
  counter = counter + 1
  local path = paths[(counter %% #paths) + 1]
  return wrk.format("%(method)s", path, {["Content-Type"] = "application/json"}, %(body)s)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %%d %%d %%d %%d %%d %%d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
"""


@dataclass
class Measurement:
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    errors: int


def build_root(root: Path, tables: int) -> list[list[str]]:
    namespace = DirectoryNamespace(root=str(root))
    rows = pa.table({"id": pa.array(range(10)), "v": pa.array([float(i) for i in range(10)])})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows)
    data = sink.getvalue().to_pybytes()
    identifiers = []
    for n in range(NAMESPACES):
        namespace.create_namespace(CreateNamespaceRequest(id=[f"ns{n}"]))
    for t in range(tables):
        identifier = [f"ns{t % NAMESPACES}", f"table{t:04d}"]
        if t % 10 == 0:
            from lance_namespace import CreateTableRequest

            namespace.create_table(CreateTableRequest(id=identifier), data)
        else:
            namespace.declare_table(DeclareTableRequest(id=identifier))
        identifiers.append(identifier)
    return identifiers


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_ready(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/v1/namespace/$/list", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not start")


@contextlib.contextmanager
def serving(command: list[str], port: int) -> Iterator[str]:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def ours(root: Path, port: int, workers: int) -> list[str]:
    cli = str(Path(sys.executable).parent / "lance-adapter")
    return [
        cli,
        "serve",
        "--prop",
        f"root={root}",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--log-level",
        "warning",
    ]


def rest_adapter(root: Path, port: int) -> list[str]:
    script = (
        "import time, lance.namespace as n\n"
        f"a = n.RestAdapter('dir', {{'root': {str(root)!r}}}, host='127.0.0.1', port={port})\n"
        "a.start()\nwhile True: time.sleep(3600)\n"
    )
    return [sys.executable, "-c", script]


def run_wrk(url: str, method: str, paths: list[str], body: str, args: argparse.Namespace):
    quoted = ", ".join(f'"{p}"' for p in paths)
    script = LUA % {"paths": quoted, "method": method, "body": body}
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as handle:
        handle.write(script)

    def wrk(seconds: int) -> str:
        command = [
            "wrk",
            "-t",
            str(args.threads),
            "-c",
            str(args.connections),
            "-d",
            f"{seconds}s",
            "-s",
            handle.name,
            url,
        ]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout

    wrk(2)  # warm-up
    output = wrk(args.seconds)
    os.unlink(handle.name)
    match = re.search(r"RESULT (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)", output)
    requests, duration_us, p50, p99, socket_errors, status_errors = map(int, match.groups())
    return Measurement(
        requests / (duration_us / 1e6), p50 / 1000, p99 / 1000, socket_errors + status_errors
    )


def workloads(identifiers: list[list[str]]) -> dict[str, tuple[str, list[str], str]]:
    describe = [f"/v1/table/{'$'.join(i)}/describe" for i in identifiers]
    listing = [f"/v1/namespace/ns{n}/table/list" for n in range(NAMESPACES)]
    return {"DescribeTable": ("POST", describe, '"{}"'), "ListTables": ("GET", listing, "nil")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="our worker processes")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install wrk")
    with tempfile.TemporaryDirectory() as scratch:
        template = Path(scratch) / "template"
        identifiers = build_root(template, args.tables)
        roots = {name: Path(scratch) / name for name in ("ours", "peer")}
        for root in roots.values():
            shutil.copytree(template, root)
        results: dict[tuple[str, str], Measurement] = {}
        servers = {
            "ours": lambda port: ours(roots["ours"], port, args.workers),
            "RestAdapter": lambda port: rest_adapter(roots["peer"], port),
        }
        for server, command in servers.items():
            port = free_port()
            with serving(command(port), port) as url:
                for operation, (method, paths, body) in workloads(identifiers).items():
                    results[(server, operation)] = run_wrk(url, method, paths, body, args)
    print(
        f"{args.tables} tables in {NAMESPACES} namespaces; wrk -t{args.threads} "
        f"-c{args.connections} -d{args.seconds}s; ours with {args.workers} worker(s)"
    )
    print(f"{'operation':<14}{'server':<13}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for operation in ("DescribeTable", "ListTables"):
        for server in servers:
            m = results[(server, operation)]
            print(
                f"{operation:<14}{server:<13}{m.requests_per_second:>10.0f}"
                f"{m.p50_ms:>9.2f}{m.p99_ms:>9.2f}{m.errors:>8}"
            )
        ratio = (
            results[("ours", operation)].requests_per_second
            / results[("RestAdapter", operation)].requests_per_second
        )
        print(f"{operation:<14}ratio ours/RestAdapter (req/s): {ratio:.2f}")


if __name__ == "__main__":
    main()
