"""A soak: `lance-adapter serve` on a `dir` root (`--workers 2`, maintenance on every
`--maintenance-interval` seconds) under a mixed load of `--clients` clients for `--minutes`
minutes, each sending its next request when answered (the server saturated: a minute's
throughput and p99 then move with whatever else the two cores do in it) or, with `--rate`, on a
schedule of that many requests a second (a production-like load below saturation, under
which a server degrading shows as growing latency and then falling throughput). Each
request is, in turn, a write of 20 rows, a vector search (k=10), a filtered
query, a count, a DescribeTable and a ListTables, over `--tables` tables of 5,000 rows. The
write is an upsert of 20 of the table's rows (MergeInsertIntoTable), so that the tables keep
their size and a request costs the same in the last minute as in the first unless the server
degrades; with `--growing` an append of 20 new rows (InsertIntoTable), under which each
search and filter reads more rows every minute. `--indexes` gives each table a vector index
and an index of `id`. Prints per minute: requests per second, p50 and p99 latency, errors,
and each worker's RSS (the minute's mean and peak of a read every 5 s) and open file
descriptors (read from /proc); below, from the server's metrics, each operation's mean
backend call in the minute and the maintenance done. At the end, each kind of
request's p99 in the first and last minute, and the last minute against the first: throughput
and p99 (issue 49's target: within 20%) and RSS growth after the first minute, the last
minute's mean against the second's (target: < 10%).

    .venv/bin/python bench/soak.py [--minutes 10] [--clients 16] [--tables 4] [--rate R]
        [--maintenance-interval 60] [--growing] [--indexes] [--directory DIR]
        [--setting NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.rest_adapter_bench import CHECKOUT, free_port, wait_ready
from tests.support.lance_data import VECTOR_DIMENSION, arrow_stream, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
TABLE_ROWS = 5000


@dataclass
class Minute:
    latencies: list[float] = field(default_factory=list)
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    errors: int = 0
    # The first answers that were not 200, as "<request> <status> <text>" (a few a minute).
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _requests(url: str, tables: int, growing: bool) -> itertools.cycle:
    """The load's requests in turn: (what, send)."""
    def insert(client: httpx.Client, n: int) -> httpx.Response:
        if growing:
            return client.post(f"{url}/v1/table/ns$t{n % tables}/insert", headers=ARROW,
                               content=arrow_stream(sample_table(20, 1_000_000 + n * 20)))
        # An upsert of 20 of the table's rows, their values new: the table stays its size.
        rows = sample_table(20, (n * 20) % TABLE_ROWS, seed=n % 1000)
        return client.post(
            f"{url}/v1/table/ns$t{n % tables}/merge_insert?on=id&when_matched_update_all=true"
            "&when_not_matched_insert_all=true", headers=ARROW, content=arrow_stream(rows))

    def search(client: httpx.Client, n: int) -> httpx.Response:
        return client.post(f"{url}/v1/table/ns$t{n % tables}/query", json={
            "vector": {"single_vector": [0.5] * VECTOR_DIMENSION}, "k": 10,
            "columns": {"column_names": ["id"]}})

    def filtered(client: httpx.Client, n: int) -> httpx.Response:
        return client.post(f"{url}/v1/table/ns$t{n % tables}/query", json={
            "vector": {}, "filter": "id < 500", "k": 100,
            "columns": {"column_names": ["id", "name"]}})

    def count(client: httpx.Client, n: int) -> httpx.Response:
        return client.post(f"{url}/v1/table/ns$t{n % tables}/count_rows", json={})

    def describe(client: httpx.Client, n: int) -> httpx.Response:
        return client.post(f"{url}/v1/table/ns$t{n % tables}/describe", json={})

    def listing(client: httpx.Client, n: int) -> httpx.Response:
        return client.get(f"{url}/v1/namespace/ns/table/list")

    return itertools.cycle([insert, search, filtered, count, describe, listing])


@dataclass(frozen=True)
class Load:
    """Who sends: `clients` clients, each sending its next request when its last is answered
    (the server saturated), or, at a `rate` of requests per second, at the times a schedule
    gives them in turn (a latency then counts from the scheduled time, so that a server
    falling behind shows in it rather than in fewer requests sent)."""

    clients: int
    rate: float | None = None

    def due(self, started: float, client: int, sent: int) -> float | None:
        """When the client's `sent`-th request is due (None: as soon as it can)."""
        if self.rate is None:
            return None
        return started + (sent * self.clients + client) / self.rate


def _client(url: str, tables: int, growing: bool, stop: threading.Event,
            minutes: list[Minute], started: float, offset: int, load: Load) -> None:
    sends = _requests(url, tables, growing)
    for _ in range(offset):
        next(sends)
    with httpx.Client(timeout=60) as client:
        for sent, n in enumerate(itertools.count(offset * 1000)):
            due = load.due(started, offset, sent)
            if due is not None:
                stop.wait(max(0.0, due - time.monotonic()))
            if stop.is_set():
                return
            send = next(sends)
            begun = time.monotonic() if due is None else due
            try:
                answer = send(client, n)
                ok, failure = answer.status_code == 200, f"{answer.status_code} {answer.text}"
            except httpx.HTTPError as error:
                ok, failure = False, repr(error)
            ended = time.monotonic()
            minute = minutes[min(int((ended - started) // 60), len(minutes) - 1)]
            with minute.lock:
                minute.latencies.append(ended - begun)
                minute.by_kind.setdefault(send.__name__, []).append(ended - begun)
                minute.errors += not ok
                if not ok and len(minute.failures) < 5:
                    minute.failures.append(f"{send.__name__} {failure[:300]}")


_FIGURES = ("lance_adapter_backend_call_duration_seconds_sum",
            "lance_adapter_backend_call_duration_seconds_count",
            "lance_adapter_maintained_tables_total", "lance_adapter_maintenance_passes_total")


def _server_figures(url: str) -> dict[str, float]:
    """From the server's metrics (all workers'): each operation's backend calls (their count
    and seconds), the tables maintained by action and the maintenance passes, so far."""
    figures: dict[str, float] = {}
    try:
        text = httpx.get(f"{url}/metrics", timeout=30).text
    except httpx.HTTPError:
        return figures
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name not in _FIGURES:
                continue
            name = sample.name.removeprefix("lance_adapter_")
            label = sample.labels.get("operation") or sample.labels.get("action") or ""
            figures[f"{name}:{label}"] = figures.get(f"{name}:{label}", 0.0) + sample.value
    return figures


def _server_minute(before: dict[str, float], after: dict[str, float]) -> str:
    """What the server did in a minute: each operation's mean backend call, and the
    maintenance done."""
    def delta(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)
    calls = sorted(key.split(":", 1)[1] for key in after
                   if key.startswith("backend_call_duration_seconds_count:"))
    means = "  ".join(
        f"{operation} {delta('backend_call_duration_seconds_sum:' + operation) * 1000 / count:.1f}"
        for operation in calls
        if (count := delta(f"backend_call_duration_seconds_count:{operation}")) > 0)
    actions = "  ".join(f"{key.split(':', 1)[1]} {delta(key):.0f}" for key in sorted(after)
                        if key.startswith("maintained_tables_total:") and delta(key))
    return (f"         backend ms: {means}; maintained: {actions or 'nothing'}, passes "
            f"{delta('maintenance_passes_total:'):.0f}")


def _workers(supervisor: int) -> list[int]:
    """The supervisor's worker processes (not its small helpers: multiprocessing's tracker)."""
    children = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()
    return [int(pid) for pid in children
            if b"resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes()]


def _rss_and_fds(pid: int) -> tuple[float, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
    return rss / 1024, len(list(Path(f"/proc/{pid}/fd").iterdir()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--rate", type=float, default=None,
                        help="requests per second, sent on a schedule (default: each client "
                             "sends when answered, which saturates the server)")
    parser.add_argument("--maintenance-interval", type=int, default=60)
    parser.add_argument("--growing", action="store_true",
                        help="appends instead of upserts: the tables grow, and with them the "
                             "cost of each unindexed search and filter")
    parser.add_argument("--indexes", action="store_true",
                        help="a vector index and an index of `id` on each table")
    parser.add_argument("--directory", default=None,
                        help="where the root is made (default: the system's temporary "
                             "directory; /dev/shm to take the disk's write-back out)")
    parser.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                        help="a server setting (e.g. maintenance_version_retention=120)")
    arguments = parser.parse_args()
    settings = dict(setting.split("=", 1) for setting in arguments.setting)
    with tempfile.TemporaryDirectory(prefix="soak-", dir=arguments.directory) as work:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        cli = str(Path(sys.executable).parent / "lance-adapter")
        process = subprocess.Popen(
            [cli, "serve", "--prop", f"root={Path(work) / 'root'}", "--port", str(port),
             "--workers", "2", "--log-level", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, **CHECKOUT,
                 "LANCE_ADAPTER_MAINTENANCE_INTERVAL": str(arguments.maintenance_interval),
                 **{f"LANCE_ADAPTER_{name.upper()}": value for name, value in settings.items()}})
        try:
            wait_ready(url, process)
            _prepare(url, arguments.tables, arguments.indexes)
            return _soak(url, process.pid, arguments)
        finally:
            process.terminate()
            process.wait(timeout=60)


def _prepare(url: str, tables: int, indexed: bool) -> None:
    """The tables, with a vector index and an index of `id` (as LanceDB users index theirs)
    when `indexed`: without them every search and filter reads the whole table, whose cost
    grows with the rows the soak inserts."""
    httpx.post(f"{url}/v1/namespace/ns/create", json={}, timeout=60).raise_for_status()
    for table in range(tables):
        httpx.post(f"{url}/v1/table/ns$t{table}/create", headers=ARROW, timeout=120,
                   content=arrow_stream(sample_table(TABLE_ROWS))).raise_for_status()
        if not indexed:
            continue
        for index in ({"column": "vector", "index_type": "IVF_PQ", "num_partitions": 8,
                       "num_sub_vectors": 4}, {"column": "id", "index_type": "BTREE"}):
            httpx.post(f"{url}/v1/table/ns$t{table}/create_index", json=index,
                       timeout=300).raise_for_status()


def _soak(url: str, supervisor: int, arguments: argparse.Namespace) -> int:
    minutes = [Minute() for _ in range(arguments.minutes)]
    stop = threading.Event()
    started = time.monotonic()
    load = Load(arguments.clients, arguments.rate)
    clients = [threading.Thread(target=_client, args=(url, arguments.tables, arguments.growing,
                                                      stop, minutes, started, index, load))
               for index in range(arguments.clients)]
    for client in clients:
        client.start()
    memory: list[list[tuple[float, float, int]]] = []
    print("minute  req/s    p50 ms   p99 ms  errors  workers' RSS MiB (mean, peak) / fds",
          flush=True)
    figures = [_server_figures(url)]
    for index in range(arguments.minutes):
        memory.append(_sampled_minute(supervisor, started + 60 * (index + 1), stop))
        figures.append(_server_figures(url))
        if index > 0:
            _report(index, minutes[index - 1], memory[index - 1])
            print(_server_minute(figures[index - 1], figures[index]), flush=True)
    stop.set()
    for client in clients:
        client.join(timeout=120)
    _report(arguments.minutes, minutes[-1], memory[-1])
    print(_server_minute(figures[-2], figures[-1]), flush=True)
    return _verdict(minutes, memory)


# A worker's memory moves by up to a Lance session's caches with the moment it is read (a
# renewal hands the old session's back): a minute's figure is the mean of a read every 5 s.
_SAMPLE_SECONDS = 5.0


def _sampled_minute(
    supervisor: int, ends: float, stop: threading.Event
) -> list[tuple[float, float, int]]:
    """Each worker's mean and peak RSS over the minute ending at `ends`, and its descriptors
    at the end."""
    samples: list[list[tuple[float, int]]] = []
    while True:
        samples.append([_rss_and_fds(pid) for pid in _workers(supervisor)])
        if time.monotonic() >= ends:
            break
        stop.wait(max(0.0, min(_SAMPLE_SECONDS, ends - time.monotonic())))
    workers = min(len(read) for read in samples)
    return [(statistics.mean(read[worker][0] for read in samples),
             max(read[worker][0] for read in samples), samples[-1][worker][1])
            for worker in range(workers)]


def _report(number: int, minute: Minute, memory: list[tuple[float, float, int]]) -> None:
    latencies = minute.latencies or [0.0]
    p99 = _p99(minute)
    workers = "  ".join(f"{mean:.0f},{peak:.0f}/{fds}" for mean, peak, fds in memory)
    print(f"{number:6d} {len(latencies) / 60:7.1f} {statistics.median(latencies) * 1000:8.1f} "
          f"{p99 * 1000:8.1f} {minute.errors:7d}  {workers}", flush=True)


def _verdict(minutes: list[Minute], memory: list[list[tuple[float, float, int]]]) -> int:
    first, last = minutes[0], minutes[-1]
    throughput = len(last.latencies) / max(1, len(first.latencies))
    p99 = _p99(last) / max(_p99(first), 1e-9)
    # Growth after the first minute (the caches fill during it): the second minute's mean on.
    after_first = memory[1] if len(memory) > 1 else memory[0]
    rss = sum(mean for mean, _, _ in memory[-1]) / max(1.0, sum(m for m, _, _ in after_first))
    for name, minute in (("first", first), ("last", last)):
        kinds = "  ".join(f"{kind} {_percentile(times, 0.99) * 1000:.0f}"
                          for kind, times in sorted(minute.by_kind.items()))
        print(f"p99 ms by request, {name} minute: {kinds}")
    print(f"last minute / first: throughput {throughput:.2f}x (target >= 0.80), p99 {p99:.2f}x "
          f"(target <= 1.20); workers' RSS, last minute / second (means) {rss:.2f}x "
          f"(target < 1.10); errors {sum(minute.errors for minute in minutes)}")
    for number, minute in enumerate(minutes, 1):
        for failure in minute.failures:
            print(f"minute {number}: {failure}")
    errors = sum(minute.errors for minute in minutes)
    return 0 if throughput >= 0.8 and p99 <= 1.2 and rss < 1.1 and not errors else 1


def _p99(minute: Minute) -> float:
    return _percentile(minute.latencies, 0.99)


def _percentile(times: list[float], fraction: float) -> float:
    ordered = sorted(times)
    return ordered[int(len(ordered) * fraction)] if ordered else 0.0


if __name__ == "__main__":
    sys.exit(main())
