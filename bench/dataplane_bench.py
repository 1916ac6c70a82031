"""The data path: this server vs pylance's RestAdapter vs the same work in-process.

Builds one directory root holding `scans` (`--rows` rows: an id, a 128-d float32 vector and a
200-byte text, in fragments of 20,000 rows) and copies it for each server. In one run, on the
same data, it measures through this server (`lance-adapter serve --workers 1`, its defaults),
through RestAdapter and on a dataset opened in-process:

- ingest: InsertIntoTable of 1,000-row and 10,000-row batches (rows/s), and one large body
  of 20,000-row batches (`--large-mb`, MB/s and the server's peak RSS growth against the
  body's size);
- scans: a filter returning 10,000 rows and a scan returning 200,000 (p50; answers read with
  large receives, as a native client reads them), the same scan read to its last byte and
  dropped (the server's own part), with the server's peak RSS growth over all of them;
- count, with and without a predicate (p50); merge-insert of 10,000 rows (rows/s); delete of
  100 rows by predicate (p50), from a table of its own (the same for every peer).

Both servers run throughout, and each workload's rounds are taken by the three in turns (the
order reversed every round), so that what the machine does meanwhile falls on all of them
alike. Every answer is checked against the in-process one; ratios are printed against both
peers.
Vector search has its own script (`vector_search_bench.py`).

    .venv/bin/python bench/dataplane_bench.py [--rows 200000] [--large-mb 250] [--rounds 5]
        [--small-rounds 40]

`--rounds` times each large request (inserts of 10,000 rows, scans); `--small-rounds` the
small ones (inserts of 1,000 rows, counts, deletes), whose few milliseconds vary more.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

os.environ.setdefault("LANCE_LOG", "error")
import lance
import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.rest_adapter_bench import CHECKOUT, free_port, ours, rest_adapter, wait_ready

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
FRAGMENT_ROWS = 20_000
DELETED_FROM = 40_000_000  # the first id of the table `deletes`


def rows(start: int, count: int) -> pa.Table:
    vectors = np.random.default_rng(start).random((count, 128), dtype=np.float32)
    return pa.table({
        "id": pa.array(np.arange(start, start + count), pa.int64()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 128),
        "text": pa.array([f"{index:010d}" + "x" * 190 for index in range(start, start + count)]),
    })


def stream(table: pa.Table, rows_per_batch: int | None = None) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=rows_per_batch)
    return sink.getvalue().to_pybytes()


def build(root: Path, count: int) -> None:
    for start in range(0, count, FRAGMENT_ROWS):
        lance.write_dataset(rows(start, min(FRAGMENT_ROWS, count - start)),
                            str(root / "scans.lance"), mode="append" if start else "create")
    lance.write_dataset(rows(10_000_000, 1_000), str(root / "ingest.lance"))
    # Deleted from, and nothing else: the same table for every peer (the inserts and merges
    # RestAdapter refuses leave `ingest` smaller there).
    lance.write_dataset(rows(DELETED_FROM, FRAGMENT_ROWS), str(root / "deletes.lance"))


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM"))
    return int(line.split()[1]) / 1024


def reset_peak(pid: int) -> None:
    """Start the peak RSS count again (Linux: writing 5 to clear_refs)."""
    with open(f"/proc/{pid}/clear_refs", "w") as refs:
        refs.write("5")


@contextmanager
def serving(command: list[str], port: int, env: dict[str, str] | None) -> Iterator[tuple[str, int]]:
    import subprocess

    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


class Http:
    """The workloads over HTTP, against one server."""

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=600)

    def insert(self, data: bytes) -> None:
        if len(data) > 16 * 2**20:  # httpx sends large bodies slowly: measure the server
            request = urllib.request.Request(f"{self.client.base_url}/v1/table/ingest/insert",
                                             data=data, headers=ARROW)
            try:
                urllib.request.urlopen(request, timeout=600).read()
            except urllib.error.URLError as error:  # refused, or the connection closed
                code = error.code if isinstance(error, urllib.error.HTTPError) else 0
                raise httpx.HTTPStatusError(
                    str(error), request=httpx.Request("POST", request.full_url),
                    response=httpx.Response(code)) from None
            return
        answer = self.client.post("/v1/table/ingest/insert", content=data, headers=ARROW)
        answer.raise_for_status()

    def query(self, body: dict) -> pa.Table:
        # httpx reads a large answer 64 KiB at a time in Python (a 138 MiB scan: about 100 ms
        # more than the server takes to send it): read it as a native client would.
        status, content = lean_post(self.client.base_url, "/v1/table/scans/query",
                                    {"vector": {}, **body})
        assert status == 200, content[:500]
        return pa.ipc.open_file(pa.py_buffer(content)).read_all()

    def last_byte(self, body: dict) -> None:
        with posted(self.client.base_url, "/v1/table/scans/query",
                    {"vector": {}, **body}) as connection:
            buffer = bytearray(4 << 20)
            while connection.recv_into(buffer):
                pass

    def count(self, predicate: str | None) -> int:
        body = {"predicate": predicate} if predicate else {}
        answer = self.client.post("/v1/table/scans/count_rows", json=body)
        answer.raise_for_status()
        return int(answer.json())

    def merge(self, data: bytes) -> None:
        answer = self.client.post("/v1/table/ingest/merge_insert", content=data, headers=ARROW,
                                  params={"on": "id", "when_matched_update_all": "true",
                                          "when_not_matched_insert_all": "true"})
        answer.raise_for_status()

    def delete(self, predicate: str) -> None:
        answer = self.client.post("/v1/table/deletes/delete", json={"predicate": predicate})
        answer.raise_for_status()


class InProcess:
    """The same workloads on datasets opened in-process."""

    def __init__(self, root: Path) -> None:
        self.scans = lance.dataset(str(root / "scans.lance"))
        self.ingest = str(root / "ingest.lance")
        self.deletes = str(root / "deletes.lance")

    def insert(self, data: bytes) -> None:
        lance.write_dataset(pa.ipc.open_stream(data), self.ingest, mode="append")

    def query(self, body: dict) -> pa.Table:
        return self.scans.to_table(filter=body.get("filter"), limit=body.get("k"))

    def last_byte(self, body: dict) -> None:
        self.query(body)

    def count(self, predicate: str | None) -> int:
        return self.scans.count_rows(predicate)

    def merge(self, data: bytes) -> None:
        (lance.dataset(self.ingest).merge_insert("id").when_matched_update_all()
         .when_not_matched_insert_all().execute(pa.ipc.open_stream(data).read_all()))

    def delete(self, predicate: str) -> None:
        lance.dataset(self.deletes).delete(predicate)


@contextmanager
def posted(base: httpx.URL, path: str, body: dict) -> Iterator[socket.socket]:
    """A new connection that has sent `body` as JSON to `path`, closed after the block."""
    payload = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nhost: {base.host}:{base.port}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(payload)}\r\n"
            "connection: close\r\n\r\n").encode()
    with socket.create_connection((base.host, base.port), timeout=600) as connection:
        connection.sendall(head + payload)
        yield connection


def lean_post(base: httpx.URL, path: str, body: dict) -> tuple[int, bytearray]:
    """POST `body` as JSON on a new connection; the answer's status and body, received into
    one reused buffer and de-chunked as they arrive: each byte of the body copied once, as a
    native client's reader does (joining received parts, then chunks, copied a 138 MiB
    answer twice more: about 100 ms of the client's, more than the server took to send it)."""
    with posted(base, path, body) as connection:
        received = _Received(connection)
        head = received.until(b"\r\n\r\n")
        lines = head.decode("latin-1").lower().split("\r\n")
        status, answer = int(lines[0].split()[1]), bytearray()
        if "transfer-encoding: chunked" not in lines:
            received.rest_into(answer)
            return status, answer
        while size := int(received.until(b"\r\n").split(b";")[0], 16):
            received.take_into(answer, size)
            received.until(b"\r\n")
        return status, answer


class _Received:
    """A connection's bytes, received into one reused 4 MiB buffer."""

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self.buffer = bytearray(4 << 20)
        self.view = memoryview(self.buffer)
        self.start = self.end = 0  # the received bytes not yet taken

    def _receive(self) -> None:
        """Receive more, after moving what is not yet taken to the buffer's front."""
        held = self.end - self.start
        self.view[:held] = self.view[self.start:self.end]
        self.start, self.end = 0, held
        count = self.connection.recv_into(self.view[held:])
        if not count:
            raise ConnectionError("the answer was cut off")
        self.end += count

    def until(self, separator: bytes) -> bytes:
        """The bytes before the next `separator` (taken with it)."""
        while (found := self.buffer.find(separator, self.start, self.end)) < 0:
            self._receive()
        taken = bytes(self.view[self.start:found])
        self.start = found + len(separator)
        return taken

    def take_into(self, answer: bytearray, size: int) -> None:
        while size:
            if self.start == self.end:
                self._receive()
            count = min(size, self.end - self.start)
            answer += self.view[self.start:self.start + count]
            self.start, size = self.start + count, size - count

    def rest_into(self, answer: bytearray) -> None:
        answer += self.view[self.start:self.end]
        while count := self.connection.recv_into(self.view):
            answer += self.view[:count]


Peer = Http | InProcess


class Peers:
    """The peers measured side by side: each workload's rounds are taken in turns (the order
    reversed every round), so that what this machine does meanwhile (another process, the
    kernel writing back) falls on every peer alike rather than on whichever ran then."""

    def __init__(self, peers: dict[str, Peer], pids: dict[str, int]) -> None:
        self.peers = peers
        self.pids = pids  # the servers' processes, for their peak RSS
        self.figures: dict[str, dict[str, float]] = {name: {} for name in peers}

    def rounds(self, workload: str, call: Callable[[Peer, int], object], count: int,
               only: str | None = None) -> dict[str, list[float]]:
        """Seconds each peer (or the one named `only`) took for `call(peer, round)`, round
        by round, peers in turns; a peer refusing the workload (an HTTP error) is left out."""
        taken: dict[str, list[float]] = {
            name: [] for name in self.peers if only in (None, name)}
        for index in range(count):
            for name in list(taken) if index % 2 == 0 else list(reversed(taken)):
                started = time.perf_counter()
                try:
                    call(self.peers[name], index)
                except httpx.HTTPStatusError as error:
                    print(f"    {name}: {workload} refused ({error.response.status_code})",
                          flush=True)
                    del taken[name]
                    continue
                taken[name].append(time.perf_counter() - started)
        return taken

    def record(self, name: str, taken: dict[str, list[float]],
               figure: Callable[[list[float]], float]) -> None:
        for peer, times in taken.items():
            self.figures[peer][name] = figure(times)

    def check(self, name: str, answer: Callable[[Peer], object],
              expected: dict[str, object]) -> None:
        """Every peer's answer is the in-process one."""
        for peer_name, peer in self.peers.items():
            found = answer(peer)
            assert found == expected.setdefault(name, found), f"{name}: {peer_name} differs"


def fresh_peak(pid: int) -> float:
    """The process's RSS, its peak count started again from it."""
    reset_peak(pid)
    return peak_rss_mib(pid)


def p50_ms(times: list[float]) -> float:
    return 1000 * statistics.median(times)


def measure(peers: Peers, args: argparse.Namespace) -> None:
    expected: dict[str, object] = {}
    for size, count in ((1_000, args.small_rounds), (10_000, args.rounds)):
        batches = [stream(rows(20_000_000 + i * size, size)) for i in range(count)]
        peers.record(f"insert {size} rows/s", peers.rounds(
            f"insert {size}", lambda peer, i, b=batches: peer.insert(b[i]), count),
            lambda times, size=size, count=count: size * count / sum(times))
    large = stream(rows(30_000_000, args.large_mb * 2**20 // 744), FRAGMENT_ROWS)
    body_mib = len(large) / 2**20
    for name in peers.peers:  # one each, the server's peak RSS growth with it
        pid = peers.pids.get(name)
        before = None if pid is None else fresh_peak(pid)
        taken = peers.rounds("large insert", lambda peer, _: peer.insert(large), 1, only=name)
        os.sync()  # its 250 MB written out now, not while the workloads after it are timed
        peers.record("large insert MB/s", taken, lambda times: body_mib / times[0])
        if taken and pid is not None and before is not None:
            growth = peak_rss_mib(pid) - before
            peers.figures[name]["large insert RSS growth / body"] = growth / body_mib
    before_scans = {name: fresh_peak(pid) for name, pid in peers.pids.items()}
    for name, body in (("filter 10k p50 ms", {"filter": "id % 20 = 0", "k": 10_000}),
                       ("scan 200k p50 ms", {"k": 200_000})):
        peers.check(name, lambda peer, body=body: peer.query(body).sort_by("id"), expected)
        peers.record(name, peers.rounds(name, lambda peer, _, b=body: peer.query(b),
                                        args.rounds), p50_ms)
    # The server's own part: the answer read to its last byte and dropped, no client
    # decoding (in-process: the same scan).
    peers.record("scan 200k to last byte p50 ms", peers.rounds(
        "last byte", lambda peer, _: peer.last_byte({"k": 200_000}), args.rounds), p50_ms)
    for name, pid in peers.pids.items():
        peers.figures[name]["scans RSS growth MiB"] = peak_rss_mib(pid) - before_scans[name]
    for name, predicate in (("count p50 ms", None), ("count filtered p50 ms", "id < 5000")):
        peers.check(name, lambda peer, p=predicate: peer.count(p), expected)
        peers.record(name, peers.rounds(name, lambda peer, _, p=predicate: peer.count(p),
                                        args.small_rounds), p50_ms)
    data = stream(rows(20_000_000, 10_000))
    peers.record("merge rows/s", peers.rounds("merge", lambda peer, _: peer.merge(data), 3),
                 lambda times: 10_000 / statistics.median(times))
    peers.record("delete p50 ms", peers.rounds("delete", lambda peer, i: peer.delete(
        f"id >= {DELETED_FROM + i * 100} AND id < {DELETED_FROM + (i + 1) * 100}"),
        args.small_rounds), p50_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--large-mb", type=int, default=250)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--small-rounds", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / "source"
        build(source, args.rows)
        roots = {name: Path(directory) / name for name in ("in-process", "ours", "RestAdapter")}
        for root in roots.values():
            shutil.copytree(source, root)
        os.sync()  # the copies written out now, not while a peer is measured
        ours_port, peer_port = free_port(), free_port()
        with serving([*ours(roots["ours"], ours_port, 1)], ours_port, CHECKOUT) as (url, pid), \
                serving(rest_adapter(roots["RestAdapter"], peer_port), peer_port, None) as (
                    peer_url, peer_pid):
            peers = Peers({"in-process": InProcess(roots["in-process"]), "ours": Http(url),
                           "RestAdapter": Http(peer_url)}, {"ours": pid, "RestAdapter": peer_pid})
            measure(peers, args)
    print_ratios(peers.figures)


def print_ratios(results: dict[str, dict[str, float]]) -> None:
    names = list(dict.fromkeys(name for figures in results.values() for name in figures))
    print(f"{'workload':>32} {'ours':>10} {'RestAdapter':>12} {'in-process':>11}  "
          "ours/RestAdapter  ours/in-process")
    for name in names:
        ours_, peer = results["ours"].get(name, 0.0), results["RestAdapter"].get(name)
        inner = results["in-process"].get(name)

        def ratio(other: float | None, name: str = name, ours_: float = ours_) -> str:
            if not other:
                return "-"
            better = ours_ / other if ("/s" in name) else other / ours_
            return f"{better:.2f}x"

        print(f"{name:>32} {ours_:>10.1f} {peer if peer is None else round(peer, 1)!s:>12} "
              f"{inner if inner is None else round(inner, 1)!s:>11}  "
              f"{ratio(peer):>16}  {ratio(inner):>15}")
    print("(ratios: how many times better ours is; above 1.00x is better)")


if __name__ == "__main__":
    main()
