"""`lance-adapter serve` on a `dir` root, killed with SIGKILL while writers append and tables
are created, then restarted on the same root, three times: every acknowledged insert's rows
are there, every listed table opens, what a killed create left is never listed, and a
maintenance pass removes it once it is abandoned (`maintenance_abandoned_after`)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import lance

from tests.support.cli import CLI, cli_environment, wait_until_serving
from tests.support.common import free_port
from tests.support.lance_data import arrow_stream, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
WRITERS = 3
ROWS_PER_INSERT = 20
WRITER_ID_SPAN = 10_000_000  # writer w's ids are w * span + ...: its tag
ACKS_BEFORE_THE_KILL = 3  # each cycle: 3 x WRITERS inserts and a table acknowledged
CYCLES = 3


@dataclass
class Acknowledged:
    """What the server answered 200 to: insert id ranges and created tables."""

    inserts: list[int] = field(default_factory=list)  # first id of each batch
    tables: list[str] = field(default_factory=list)
    lock: threading.Condition = field(default_factory=threading.Condition)  # notified


def _start(root: Path, port: int) -> subprocess.Popen:
    with (root.parent / "server.log").open("a") as log:  # a pipe nobody reads could block
        process = subprocess.Popen(
            [CLI, "serve", "--impl", "dir", "--prop", f"root={root}", "--host", "127.0.0.1",
             "--port", str(port), "--log-level", "warning", "--workers", "1"],
            stdout=log, stderr=log, env=cli_environment(),
        )
    wait_until_serving(f"http://127.0.0.1:{port}", process)
    return process


def _until(stop: threading.Event, step: Callable[[int], None]) -> Callable[[], None]:
    def run() -> None:
        attempt = 0
        while not stop.is_set():
            try:
                step(attempt)
            except httpx.TransportError:
                time.sleep(0.05)  # the server is gone: nothing was acknowledged
            attempt += 1
    return run


def _appender(url: str, writer: int, cycle: int, acked: Acknowledged) -> Callable[[int], None]:
    def insert(attempt: int) -> None:
        first = writer * WRITER_ID_SPAN + (cycle * 100_000 + attempt) * ROWS_PER_INSERT
        answer = httpx.post(f"{url}/v1/table/ns$t/insert", headers=ARROW, timeout=30,
                            content=arrow_stream(sample_table(ROWS_PER_INSERT, first)))
        if answer.status_code == 200:
            with acked.lock:
                acked.inserts.append(first)
                acked.lock.notify_all()
    return insert


def _creator(url: str, cycle: int, acked: Acknowledged) -> Callable[[int], None]:
    def create(attempt: int) -> None:
        name = f"c{cycle}_{attempt}"
        answer = httpx.post(f"{url}/v1/table/ns${name}/create", headers=ARROW, timeout=30,
                            content=arrow_stream(sample_table(5)))
        if answer.status_code == 200:
            with acked.lock:
                acked.tables.append(name)
                acked.lock.notify_all()
    return create


def _load_then_kill(process: subprocess.Popen, url: str, cycle: int, acked: Acknowledged) -> None:
    stop = threading.Event()
    steps = [_appender(url, w, cycle, acked) for w in range(1, WRITERS + 1)]
    steps.append(_creator(url, cycle, acked))
    threads = [threading.Thread(target=_until(stop, step)) for step in steps]
    with acked.lock:
        inserts, tables = len(acked.inserts), len(acked.tables)
    for thread in threads:
        thread.start()
    # Killed once the load is under way (acknowledged writes of this cycle), not after a time.
    with acked.lock:
        under_way = acked.lock.wait_for(
            lambda: len(acked.inserts) >= inserts + ACKS_BEFORE_THE_KILL * WRITERS
            and len(acked.tables) >= tables + 1, timeout=120)
    process.kill()  # SIGKILL, mid-write
    process.wait(timeout=30)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert under_way, "the writers got no acknowledgement within 120 s"


def _plant_interrupted_create(root: Path, cycle: int) -> Path:
    """What a CreateTable killed before its commit left two hours ago: data, no version, no
    entry, nothing changed since."""
    orphan = root / f"0000000{cycle}_ns$killed"
    (orphan / "data").mkdir(parents=True)
    (orphan / "data" / "part.lance").write_bytes(b"\0" * 64)
    then = time.time() - 2 * 3600
    for path in (orphan / "data" / "part.lance", orphan / "data", orphan):
        os.utime(path, (then, then))
    return orphan


def _maintain(root: Path) -> str:
    """One pass of the real `lance-adapter maintain` beside the serving server; its log."""
    done = subprocess.run([CLI, "maintain", "--prop", f"root={root}"], env=cli_environment(),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def _check_recovered(url: str, root: Path, acked: Acknowledged, planted: Path) -> None:
    location = httpx.post(f"{url}/v1/table/ns$t/describe", json={}, timeout=30).json()["location"]
    ids = set(lance.dataset(location).to_table(columns=["id"]).column(0).to_pylist())
    lost = [first for first in acked.inserts
            if not set(range(first, first + ROWS_PER_INSERT)) <= ids]
    assert not lost, f"{len(lost)} acknowledged inserts lost"
    listed = httpx.get(f"{url}/v1/namespace/ns/table/list", timeout=30).json()["tables"]
    assert set(acked.tables) <= set(listed)
    for table in listed:
        answer = httpx.post(f"{url}/v1/table/ns${table}/count_rows", json={}, timeout=30)
        assert answer.status_code == 200, (table, answer.text)
    uncommitted = {d.name for d in root.iterdir() if d.is_dir() and d.name != "__manifest"
                   and not any((d / "_versions").glob("*.manifest"))}
    assert not {name.split("$")[-1] for name in uncommitted} & set(listed)
    assert "removing orphan table" in _maintain(root)
    assert not planted.exists()
    # What the kill left just now is not abandoned yet: the pass keeps it, unlisted.
    kept = {d.name for d in root.iterdir() if d.is_dir()}
    assert uncommitted - {planted.name} <= kept


def test_acknowledged_writes_survive_kill_9_and_no_orphans_remain(tmp_path: Path) -> None:
    root, port = tmp_path / "root", free_port()
    url = f"http://127.0.0.1:{port}"
    process = _start(root, port)
    acked = Acknowledged()
    try:
        httpx.post(f"{url}/v1/namespace/ns/create", json={}, timeout=30).raise_for_status()
        httpx.post(f"{url}/v1/table/ns$t/create", headers=ARROW, timeout=30,
                   content=arrow_stream(sample_table(1))).raise_for_status()
        for cycle in range(CYCLES):
            _load_then_kill(process, url, cycle, acked)
            planted = _plant_interrupted_create(root, cycle)
            process = _start(root, port)
            _check_recovered(url, root, acked, planted)
        assert len(acked.inserts) >= WRITERS * CYCLES and acked.tables
    finally:
        process.kill()
        process.wait(timeout=30)
