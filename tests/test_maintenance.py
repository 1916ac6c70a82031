"""Tables that maintain themselves (`backends.maintenance`): a table fed by single-row writes
through LanceDB's remote client is compacted and indexed by one pass of `lance-adapter
maintain` while another writer keeps writing, and the server runs passes on its own, in one of
its worker processes."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import lance
import lancedb
import pyarrow as pa
import pytest
from lancedb.index import IvfFlat

from app.config import load_settings
from app.maintenance import MaintenanceWorker
from app.observability import Metrics
from app.server import create_app
from app.settings import Settings
from backends import load_namespace
from backends.core.settings import ConfigurationError
from backends.maintenance import MaintenancePolicy, maintain_table
from tests.support.adapter import metric, running_server
from tests.support.cli import CLI, cli_environment, start_adapter
from tests.support.common import free_port
from tests.support.lance_data import arrow_stream, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
DIMENSION = 8
FED_ROWS = 1000


def _row(index: int) -> pa.Table:
    vector = [((index * 31 + d * 7) % 97) / 97 for d in range(DIMENSION)]
    return pa.table({"id": pa.array([index], pa.int64()),
                     "vector": pa.array([vector], pa.list_(pa.float32(), DIMENSION))})


def _remote(url: str) -> Any:
    return lancedb.connect("db://lance", api_key="any", host_override=url, region="local")


def _maintain(root: Path) -> list[dict[str, Any]]:
    """One pass of the real `lance-adapter maintain` over the directory root."""
    done = subprocess.run([CLI, "maintain", "--prop", f"root={root}"], env=cli_environment(),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


class Writer(threading.Thread):
    """Adds one row at a time through the remote client until stopped, one every 20 ms at
    most (a writer committing back to back, faster than a compaction of a thousand
    fragments can commit, starves it: Lance rebases the compaction on each new commit and
    gives up; the pass reports it and the next one tries again); counts its outcomes."""

    def __init__(self, table: Any) -> None:
        super().__init__(daemon=True)
        self.table = table
        self.stopped = threading.Event()
        self.written = 0
        self.failures: list[str] = []

    def run(self) -> None:
        index = 1_000_000
        while not self.stopped.is_set():
            try:
                self.table.add(_row(index))
                self.written += 1
            except Exception as error:  # counted: the test asserts there are none
                self.failures.append(repr(error))
            index += 1
            self.stopped.wait(0.02)  # the writer's pace, not a wait for anything


@pytest.mark.timeout(900)
def test_a_table_fed_row_by_row_is_compacted_and_indexed_beside_a_writer(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with running_server("dir", {"root": str(root)}) as url:
        table = _remote(url).create_table("fed", pa.concat_tables(_row(i) for i in range(100)))
        table.create_index("vector", config=IvfFlat(num_partitions=2))
        for index in range(100, 100 + FED_ROWS):
            table.add(_row(index))
        before = table.stats()["fragment_stats"]["num_fragments"]
        assert before == FED_ROWS + 1
        assert table.index_stats("vector_idx").num_unindexed_rows == FED_ROWS

        writer = Writer(_remote(url).open_table("fed"))
        writer.start()
        try:
            passed = {line["table"]: line for line in _maintain(root)}["fed"]
            while writer.written < 3 and not writer.failures:
                time.sleep(0.05)  # the writer is also seen to succeed after the pass
        finally:
            writer.stopped.set()
            writer.join(timeout=60)
        assert writer.failures == [] and writer.written >= 3
        assert passed["compacted"] and "indexed" in passed["actions"]
        assert passed["fragments_before"] >= before
        # The fed rows are in one fragment; the writer's rows came after, one a fragment.
        assert table.stats()["fragment_stats"]["num_fragments"] <= 1 + writer.written
        assert table.index_stats("vector_idx").num_indexed_rows >= 100 + FED_ROWS
        assert table.count_rows() == 100 + FED_ROWS + writer.written

        # A second pass with no writer leaves a compact, fully indexed table.
        _maintain(root)
        assert table.stats()["fragment_stats"]["num_fragments"] <= 2
        assert table.index_stats("vector_idx").num_unindexed_rows == 0
        ids = table.search().select(["id"]).to_arrow()["id"].to_pylist()
        assert sorted(ids)[: 100 + FED_ROWS] == list(range(100 + FED_ROWS))


def test_the_server_maintains_its_tables_in_one_worker(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    dataset = lance.write_dataset(_row(0), str(root / "small.lance"))
    for index in range(1, 12):
        dataset = lance.write_dataset(_row(index), str(root / "small.lance"), mode="append")
    assert len(dataset.get_fragments()) == 12
    adapter = start_adapter(tmp_path, "--impl", "dir", "--prop", f"root={root}",
                            "--workers", "2", LANCE_ADAPTER_MAINTENANCE_INTERVAL="0.2")
    try:
        deadline = time.monotonic() + 60
        while len(lance.dataset(str(root / "small.lance")).get_fragments()) > 1:
            assert time.monotonic() < deadline, "no maintenance pass compacted the table"
            time.sleep(0.1)
        exposition = httpx.get(f"{adapter.url}/metrics", timeout=10).text
        assert metric(exposition, "lance_adapter_maintained_tables_total", action="compacted") == 1
        assert metric(exposition, "lance_adapter_maintenance_passes_total") >= 1
    finally:
        assert adapter.stopped_cleanly()
    assert lance.dataset(str(root / "small.lance")).count_rows() == 12


def test_maintenance_is_switched_off_and_bounded_by_its_settings(tmp_path: Path) -> None:
    namespace = load_namespace("dir", {"root": str(tmp_path)})
    on = create_app(namespace, Settings(properties={"root": str(tmp_path)}))
    off = create_app(namespace, Settings(properties={"root": str(tmp_path)}, maintenance=False))
    assert hasattr(on.state, "maintenance") and not hasattr(off.state, "maintenance")
    for wrong in ({"maintenance_interval": "0"}, {"maintenance_min_small_fragments": "0"},
                  {"maintenance_version_retention": "-1"}):
        with pytest.raises(ConfigurationError, match=next(iter(wrong))):
            load_settings(environ={}, overrides=wrong)


def _plant_interrupted_create(root: Path) -> Path:
    """What a CreateTable killed before its commit leaves (or one in flight in another
    replica looks like): data, no version, no manifest entry."""
    orphan = root / "00000001_ns$killed"
    (orphan / "data").mkdir(parents=True)
    (orphan / "data" / "part.lance").write_bytes(b"\0" * 64)
    return orphan


def _age(directory: Path, seconds: float) -> None:
    """Set back the times of `directory` and everything in it by `seconds`."""
    then = time.time() - seconds
    for path in [directory, *directory.rglob("*")]:
        os.utime(path, (then, then))


def test_a_start_sweeps_nothing_and_a_pass_only_what_is_abandoned(tmp_path: Path) -> None:
    """Another replica's CreateTable in flight looks like an orphan but for its age: a start
    (of two workers) leaves it, a pass leaves it while it is younger than
    maintenance_abandoned_after, and removes it once nothing in it changed for longer."""
    root = tmp_path / "data"
    adapter = start_adapter(tmp_path, "--impl", "dir", "--workers", "2", "--prop", f"root={root}")
    try:
        answer = httpx.post(f"{adapter.url}/v1/table/kept/create", headers=ARROW,
                            content=arrow_stream(sample_table(2)), timeout=30)
        assert answer.status_code == 200, answer.text
        orphan = _plant_interrupted_create(root)
        adapter.stop()
        adapter = start_adapter(tmp_path, "--impl", "dir", "--workers", "2", "--prop",
                                f"root={root}")
        answer = httpx.post(f"{adapter.url}/v1/table/kept/describe", json={}, timeout=10)
        assert answer.status_code == 200, answer.text
    finally:
        adapter.stop()
    assert orphan.exists()

    _maintain(root)
    assert orphan.exists()
    _age(orphan, 2 * 3600)
    _maintain(root)
    assert not orphan.exists()
    assert lance.dataset(str(root / "kept.lance")).count_rows() == 2


def _fragments(url: str, table: str) -> int:
    described = httpx.post(f"{url}/v1/table/{table}/describe", json={}, timeout=30).json()
    return len(lance.dataset(described["location"]).get_fragments())


def test_a_table_written_often_is_compacted_between_the_passes(tmp_path: Path) -> None:
    """With passes an hour apart, the worker that wrote rows into a table
    `maintenance_after_writes` times compacts it at once: writes of any kind count (inserts,
    upserts, deletes), refused ones do not, and another table's writes are its own count."""
    with running_server("dir", {"root": str(tmp_path)}, lifespan="on",
                        maintenance_interval=3600, maintenance_after_writes=4,
                        maintenance_min_small_fragments=2) as url:
        for table in ("busy", "quiet"):
            httpx.post(f"{url}/v1/table/{table}/create", headers=ARROW, timeout=60,
                       content=arrow_stream(sample_table(5))).raise_for_status()
        refused = httpx.post(f"{url}/v1/table/busy/delete", json={"predicate": ""}, timeout=30)
        assert refused.status_code == 400
        httpx.post(f"{url}/v1/table/quiet/insert", headers=ARROW, timeout=60,
                   content=arrow_stream(sample_table(1, 100))).raise_for_status()
        for first in (200, 300):
            httpx.post(f"{url}/v1/table/busy/insert", headers=ARROW, timeout=60,
                       content=arrow_stream(sample_table(1, first))).raise_for_status()
        httpx.post(f"{url}/v1/table/busy/merge_insert?on=id&when_matched_update_all=true"
                   "&when_not_matched_insert_all=true", headers=ARROW, timeout=60,
                   content=arrow_stream(sample_table(2, 4))).raise_for_status()
        assert _fragments(url, "busy") == 4  # three writes: not due yet
        httpx.post(f"{url}/v1/table/busy/delete", json={"predicate": "id = 0"},
                   timeout=30).raise_for_status()
        deadline = time.monotonic() + 60
        while _fragments(url, "busy") > 1:
            assert time.monotonic() < deadline, "the busy table was not compacted"
            time.sleep(0.05)
        exposition = httpx.get(f"{url}/metrics", timeout=10).text
        assert metric(exposition, "lance_adapter_maintained_tables_total", action="compacted") == 1
        assert metric(exposition, "lance_adapter_maintenance_passes_total") == 0
        assert _fragments(url, "quiet") == 2
        counted = httpx.post(f"{url}/v1/table/busy/count_rows", json={}, timeout=30).json()
        assert counted == 5 + 2 + 1 - 1


def test_a_catalog_that_does_not_list_its_tables_stops_a_pass_with_a_sentence(
    tmp_path: Path,
) -> None:
    """`lance-adapter maintain` on a metastore that does not answer: one sentence and exit 1,
    no traceback; the server's worker logs it and goes on to its next pass."""
    unreachable = f"uri=thrift://127.0.0.1:{free_port()}"
    done = subprocess.run(
        [CLI, "maintain", "--impl", "hive2", "--prop", unreachable, "--prop",
         f"root={tmp_path}", "--prop", "client.connect-timeout-ms=2000"],
        env=cli_environment(), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    assert "maintenance could not list the tables" in done.stderr
    assert "Traceback" not in done.stderr
    namespace = load_namespace("hive2", {"uri": unreachable.split("=", 1)[1],
                                         "client.connect-timeout-ms": "2000"})
    worker = MaintenanceWorker(namespace, Settings(), Metrics())
    assert worker.run_pass() == []


def _upsert(root: Path, ids: list[int], value: float) -> None:
    rows = pa.table({"id": pa.array(ids, pa.int64()), "v": [value] * len(ids)})
    (lance.dataset(str(root)).merge_insert("id").when_matched_update_all()
     .when_not_matched_insert_all().execute(rows))


def test_between_the_passes_a_table_is_compacted_by_tiers(tmp_path: Path) -> None:
    """Between the passes (`tiered`), the small fragments of the latest writes are merged and
    a large fragment is left alone, so that a compaction does not rewrite (and preempt the
    writes in flight on) the whole table each time; tiers full in turn are merged upwards,
    and a full pass still compacts everything into one fragment."""
    root = tmp_path / "t"
    lance.write_dataset(pa.table({"id": pa.array(range(4096), pa.int64()),
                                  "v": [0.0] * 4096}), str(root))
    between = MaintenancePolicy(min_small_fragments=4, version_retention=0, tiered=True)
    for write in range(3):
        _upsert(root, [5000 + write], 1.0)
    assert not maintain_table(lance.dataset(str(root)), between).compacted  # 3 of 4
    _upsert(root, [0], 2.0)  # an update: a deletion in the large fragment
    done = maintain_table(lance.dataset(str(root)), between)
    fragments = lance.dataset(str(root)).get_fragments()
    assert done.compacted and (done.fragments_before, done.fragments_after) == (5, 2)
    assert fragments[0].fragment_id == 0  # the large one, not rewritten
    assert sorted(fragment.count_rows() for fragment in fragments) == [4, 4095]

    # Three more groups of four one-row writes: the 4-row tier fills and is merged upwards.
    for group in range(3):
        for write in range(4):
            _upsert(root, [6000 + group * 4 + write], 3.0)
        assert maintain_table(lance.dataset(str(root)), between).compacted
    rows = sorted(fragment.count_rows() for fragment in lance.dataset(str(root)).get_fragments())
    assert rows == [16, 4095]

    full_pass = MaintenancePolicy(min_small_fragments=2, version_retention=0)
    done = maintain_table(lance.dataset(str(root)), full_pass)
    assert done.compacted and done.fragments_after == 1
    table = lance.dataset(str(root)).to_table()
    assert table.num_rows == 4096 + 3 + 12
    assert table.filter(pa.compute.equal(table["id"], 0))["v"].to_pylist() == [2.0]
