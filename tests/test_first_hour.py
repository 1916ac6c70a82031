"""The quick start as a new user meets it: `lance-adapter serve --impl dir` with no root, in a
working directory of its own (so the default root is the relative `./lance-data`), and then
LanceDB (namespace connection and remote client), pylance and the Spark source, each run from
another directory, create, read and drop a table at the root and one in a namespace."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import lance
import lancedb
import pyarrow as pa
import pytest
from lance.namespace import RestNamespace
from lance_namespace import DropTableRequest, TableExistsRequest, TableNotFoundError

from tests.support.cli import ROOT, Adapter, start_adapter
from tests.support.lance_data import arrow_stream


@pytest.fixture(scope="module")
def quick_start(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Adapter]:
    """The server started as the README starts it, in a directory no client runs in."""
    working = tmp_path_factory.mktemp("server")
    adapter = start_adapter(working, "--impl", "dir")
    try:
        yield adapter
    finally:
        assert adapter.stopped_cleanly()


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The client's working directory: not the server's, so relative locations would miss."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rows(count: int) -> pa.Table:
    return pa.table({"id": pa.array(range(count), pa.int64()),
                     "vector": pa.array([[float(i)] * 4 for i in range(count)],
                                        pa.list_(pa.float32(), 4))})


def create_namespace(url: str, name: str) -> None:
    httpx.post(f"{url}/v1/namespace/{name}/create", json={}, timeout=30).raise_for_status()


def exists(url: str, table: str) -> bool:
    answer = httpx.post(f"{url}/v1/table/{table}/exists", json={}, timeout=30)
    assert answer.status_code in (200, 404), answer.text
    return answer.status_code == 200


def test_the_default_root_is_absolute_in_the_log_and_in_every_answer(
    quick_start: Adapter, elsewhere: Path
) -> None:
    root = quick_start.log.parent / "lance-data"
    assert f'root: "{root}"' in quick_start.log_lines()[0]["message"]
    create_namespace(quick_start.url, "logged")
    for table in ("logged_root", "logged$inner"):
        created = httpx.post(f"{quick_start.url}/v1/table/{table}/create", timeout=30,
                             content=arrow_stream(rows(2)),
                             headers={"content-type": "application/vnd.apache.arrow.stream"})
        assert created.status_code == 200, created.text
        described = httpx.post(f"{quick_start.url}/v1/table/{table}/describe", json={},
                               timeout=30).json()
        assert described["location"].removeprefix("file://").startswith(f"{root}/")


@pytest.mark.parametrize("kind", ["namespace", "remote"])
def test_lancedb_creates_reads_and_drops_on_the_defaults(
    quick_start: Adapter, elsewhere: Path, kind: str
) -> None:
    if kind == "remote":
        db: Any = lancedb.connect("db://lance", api_key="any", host_override=quick_start.url,
                                  region="local")
    else:
        db = lancedb.connect_namespace("rest", {"uri": quick_start.url})
    create_namespace(quick_start.url, f"team_{kind}")
    for namespace in ([], [f"team_{kind}"]):
        name = f"first_{kind}"
        db.create_table(name, rows(3), namespace_path=namespace)
        opened = db.open_table(name, namespace_path=namespace)
        assert opened.count_rows() == 3
        assert sorted(opened.search().limit(10).to_arrow()["id"].to_pylist()) == [0, 1, 2]
        db.drop_table(name, namespace_path=namespace)
        assert not exists(quick_start.url, "$".join([*namespace, name]))


def test_pylance_creates_reads_and_drops_on_the_defaults(
    quick_start: Adapter, elsewhere: Path
) -> None:
    client = RestNamespace(uri=quick_start.url)
    create_namespace(quick_start.url, "team_pylance")
    for table_id in (["first_pylance"], ["team_pylance", "first_pylance"]):
        lance.write_dataset(rows(4), namespace_client=client, table_id=table_id, mode="create")
        dataset = lance.dataset(namespace_client=client, table_id=table_id)
        assert dataset.count_rows() == 4
        client.drop_table(DropTableRequest(id=table_id))
        dropped = re.escape("$".join(table_id))
        with pytest.raises(TableNotFoundError, match=f"table id '{dropped}'"):
            client.table_exists(TableExistsRequest(id=table_id))


SPARK_JOB = """
import json, sys
from pyspark.sql import SparkSession
import lance_adapter_spark

url = sys.argv[1]
spark = (SparkSession.builder.master("local[2]").config(map=lance_adapter_spark.session_conf())
         .getOrCreate())
lance_adapter_spark.register(spark)
counts = {}
for table in ("trips", "demo.trips"):
    frame = spark.range(5).selectExpr("id", "id * 2 AS doubled")
    lance_adapter_spark.save_table(frame, table, uri=url)
    read = spark.read.format("lance").option("uri", url).option("table", table).load()
    counts[table] = [read.count(), sorted(row.doubled for row in read.collect())]

def failing(rows):
    raise RuntimeError("this task fails on purpose")
    yield

broken = spark.range(3).repartition(1).rdd.mapPartitions(failing).toDF("id bigint")
try:
    lance_adapter_spark.save_table(broken, "broken", uri=url)
except Exception as error:
    counts["broken"] = type(error).__name__
print(json.dumps(counts))
"""


def test_the_spark_source_from_the_venv_python_on_the_defaults(
    quick_start: Adapter, tmp_path: Path
) -> None:
    """Run as the README runs every command, `.venv/bin/python job.py`, with nothing set:
    Spark's workers must find the source, and a failed write leaves no table behind."""
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent(SPARK_JOB))
    create_namespace(quick_start.url, "demo")
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("PYSPARK_", "SPARK_"))}
    environment["PYTHONPATH"] = str(ROOT)
    finished = subprocess.run([sys.executable, str(job), quick_start.url], cwd=tmp_path,
                              env=environment, capture_output=True, text=True, timeout=400)
    assert finished.returncode == 0, finished.stderr[-3000:]
    counts = json.loads(finished.stdout.strip().splitlines()[-1])
    expected = [5, [0, 2, 4, 6, 8]]
    assert counts["trips"] == expected and counts["demo.trips"] == expected
    assert "broken" in counts  # the failed write raised
    assert not exists(quick_start.url, "broken")
    client = RestNamespace(uri=quick_start.url)
    for table_id in (["trips"], ["demo", "trips"]):
        client.drop_table(DropTableRequest(id=table_id))
        assert not exists(quick_start.url, "$".join(table_id))

