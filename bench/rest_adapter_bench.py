"""DescribeTable and ListTables: this adapter vs pylance's own RestAdapter, same load.

Builds one directory root holding 1,000 tables in 10 namespaces, copies it for each server,
and starts on 127.0.0.1, in turn: this adapter at its defaults ("ours"), this adapter with its
metadata cache off ("ours-uncached"), the ceiling (`bench/asgi_ceiling.py`: one answer held in
memory, on uvicorn with as many workers as ours) and pylance's RestAdapter at its defaults.
Drives each with wrk (Debian package `wrk`) at the same concurrency, and prints requests/s,
p50, p99 and each server's ratio to RestAdapter. With --rounds N the servers take turns N times
(one run, same load) and the ratio's range is printed.

    .venv/bin/python bench/rest_adapter_bench.py [--tables 1000] [--seconds 10] [--rounds 3]
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyarrow as pa
from lance.namespace import DirectoryNamespace
from lance_namespace import CreateNamespaceRequest, DeclareTableRequest

NAMESPACES = 10
# The shared venv's `lance-adapter` may be installed from another checkout: serve this one.
CHECKOUT = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
LUA = """
local paths = {%(paths)s}
local counter = 0
request = function()
  counter = counter + 1
  local path = paths[(counter %% #paths) + 1]
  return wrk.format("%(method)s", path, {["Content-Type"] = "application/json"%(headers)s},
    %(body)s)
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
            # Any answer of the protocol (401 from a server that wants a token) means serving.
            if httpx.get(f"{url}/v1/namespace/$/list", timeout=2).status_code in (200, 401):
                return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not start")


@contextlib.contextmanager
def serving(
    command: list[str], port: int, environment: dict[str, str] | None = None
) -> Iterator[str]:
    env = {**os.environ, **(environment or {})}
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def ours(root: Path | None, port: int, workers: int | None) -> list[str]:
    """`lance-adapter serve` on `root` (None: as its environment configures it)."""
    cli = str(Path(sys.executable).parent / "lance-adapter")
    command = [cli, "serve", "--port", str(port)]
    if root is not None:
        command += ["--prop", f"root={root}"]
    if workers is not None:
        command += ["--workers", str(workers)]
    return command  # its defaults: the access log on (written to /dev/null here)


def ceiling(port: int, workers: int | None) -> list[str]:
    count = workers if workers is not None else len(os.sched_getaffinity(0))
    return [sys.executable, "-m", "uvicorn", "bench.asgi_ceiling:app", "--port", str(port),
            "--workers", str(count), "--log-level", "warning", "--no-access-log"]


def rest_adapter(root: Path, port: int) -> list[str]:
    script = (
        "import time, lance.namespace as n\n"
        f"a = n.RestAdapter('dir', {{'root': {str(root)!r}}}, host='127.0.0.1', port={port})\n"
        "a.start()\nwhile True: time.sleep(3600)\n"
    )
    return [sys.executable, "-c", script]


def run_wrk(url: str, method: str, paths: list[str], body: str, args: argparse.Namespace,
            headers: dict[str, str] | None = None):
    quoted = ", ".join(f'"{p}"' for p in paths)
    extra = "".join(f', ["{name}"] = "{value}"' for name, value in (headers or {}).items())
    script = LUA % {"paths": quoted, "method": method, "body": body, "headers": extra}
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


def workloads(
    identifiers: list[list[str]], prefix: str = ""
) -> dict[str, tuple[str, list[str], str]]:
    """The requests wrk sends, each id led by `prefix` (a catalog's, `lake$`)."""
    describe = [f"/v1/table/{prefix}{'$'.join(i)}/describe" for i in identifiers]
    listing = [f"/v1/namespace/{prefix}ns{n}/table/list" for n in range(NAMESPACES)]
    return {"DescribeTable": ("POST", describe, '"{}"'), "ListTables": ("GET", listing, "nil")}


UNCACHED = {**CHECKOUT, "LANCE_ADAPTER_METADATA_CACHE": "false"}


def parse_arguments(description: str = __doc__, rounds: int = 1) -> argparse.Namespace:
    """The load's options, shared by the benchmarks that drive DescribeTable with wrk."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--workers", type=int, help="our worker processes (default: ours)")
    return parser.parse_args()


Results = dict[tuple[str, str], list[Measurement]]


Servers = dict[str, tuple[Callable[[int], list[str]], dict[str, str]]]


def measure_round(
    servers: Servers, identifiers: list[list[str]], args: argparse.Namespace, results: Results
) -> None:
    for server, (command, environment) in servers.items():
        port = free_port()
        with serving(command(port), port, environment) as url:
            for operation, (method, paths, body) in workloads(identifiers).items():
                measurement = run_wrk(url, method, paths, body, args)
                results.setdefault((server, operation), []).append(measurement)


def print_results(results: Results, servers: list[str], args: argparse.Namespace) -> None:
    workers = args.workers if args.workers is not None else "default"
    print(
        f"{args.tables} tables in {NAMESPACES} namespaces; wrk -t{args.threads} "
        f"-c{args.connections} -d{args.seconds}s; {args.rounds} round(s); ours with "
        f"{workers} worker(s); CPUs usable: {len(os.sched_getaffinity(0))}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'operation':<14}{'server':<15}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for operation in ("DescribeTable", "ListTables"):
        for server in servers:
            for m in results[(server, operation)]:
                print(
                    f"{operation:<14}{server:<15}{m.requests_per_second:>10.0f}"
                    f"{m.p50_ms:>9.2f}{m.p99_ms:>9.2f}{m.errors:>8}"
                )
        for server in servers[:-1]:
            ratios = [
                ours.requests_per_second / peer.requests_per_second
                for ours, peer in zip(
                    results[(server, operation)], results[("RestAdapter", operation)],
                    strict=True,
                )
            ]
            print(f"{operation:<14}ratio {server}/RestAdapter (req/s): "
                  f"{' '.join(f'{r:.2f}' for r in ratios)} (min {min(ratios):.2f}, "
                  f"max {max(ratios):.2f})")


def main() -> None:
    args = parse_arguments()
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install wrk")
    results: Results = {}
    with tempfile.TemporaryDirectory() as scratch:
        template = Path(scratch) / "template"
        identifiers = build_root(template, args.tables)
        roots = {name: Path(scratch) / name for name in ("ours", "uncached", "peer")}
        for root in roots.values():
            shutil.copytree(template, root)
        servers: Servers = {
            "ours": (lambda port: ours(roots["ours"], port, args.workers), CHECKOUT),
            "ours-uncached": (lambda port: ours(roots["uncached"], port, args.workers), UNCACHED),
            "ceiling": (lambda port: ceiling(port, args.workers), CHECKOUT),
            "RestAdapter": (lambda port: rest_adapter(roots["peer"], port), {}),
        }
        for _ in range(args.rounds):
            measure_round(servers, identifiers, args, results)
    print_results(results, list(servers), args)


if __name__ == "__main__":
    main()
