"""Files of task attempts that die or lose are deleted when the job commits or aborts.

An attempt runs here in a process of its own, the way Spark runs a task in a Python
worker, and dies abruptly (os._exit) in mid-stream, after Lance finished some files:
nothing in that process can clean up, so only the job's commit or abort can.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from lance.namespace import RestNamespace
from pyspark.sql.types import LongType, StructField, StructType

from lance_adapter_spark.api import source_options
from lance_adapter_spark.options import parse_options
from lance_adapter_spark.tables import WRITTEN_MARKERS
from lance_adapter_spark.write import LanceWriter, WritePlan, plan_write

SCHEMA = StructType([StructField("id", LongType(), False)])
BATCH_ROWS = 1000
ROWS_PER_FILE = 1500  # so a dying attempt has finished files behind it


def id_batches(first: int, rows: int) -> Iterator[pa.RecordBatch]:
    for start in range(first, first + rows, BATCH_ROWS):
        yield pa.record_batch({"id": pa.array(range(start, start + BATCH_ROWS), pa.int64())})


def attempt_that_dies(plan: WritePlan, first: int, rows: int) -> None:
    """A task attempt whose process is killed in mid-stream, waiting for more input."""

    def batches() -> Iterator[pa.RecordBatch]:
        yield from id_batches(first, rows)
        os._exit(3)

    LanceWriter(plan).write(batches())


def run_dying_attempt(plan: WritePlan, first: int, rows: int) -> None:
    process = multiprocessing.get_context("spawn").Process(
        target=attempt_that_dies, args=(plan, first, rows)
    )
    process.start()
    process.join(timeout=120)
    assert process.exitcode == 3, f"the attempt ended with {process.exitcode}, not its death"


def files_on_storage(plan: WritePlan) -> set[str]:
    """The data files and the write markers under the table's location, relative to it.

    Not counted: Lance's metadata, and the temporary file (data/.tmp*) of the file a
    killed attempt was still writing, which no writer can tell from another job's file
    in progress (docs/spark.md: Known limits).
    """
    root = Path(plan.table.location.removeprefix("file://"))
    paths = [path.relative_to(root) for path in root.rglob("*") if path.is_file()]
    return {
        str(path)
        for path in paths
        if path.parts[0] == WRITTEN_MARKERS or (path.parts[0] == "data" and path.suffix == ".lance")
    }


def leftover_temporary_files(plan: WritePlan) -> list[Path]:
    return list(Path(plan.table.location.removeprefix("file://")).glob("data/.tmp*"))


def committed_files(url: str, table: str) -> set[str]:
    dataset = lance.dataset(namespace_client=RestNamespace(uri=url), table_id=[table])
    return {f"data/{f.path}" for fragment in dataset.get_fragments() for f in fragment.data_files()}


def new_plan(url: str, table: str) -> WritePlan:
    options = parse_options(source_options(table, uri=url, max_rows_per_file=ROWS_PER_FILE))
    return plan_write(options, SCHEMA, False)


def test_commit_deletes_the_files_of_a_killed_attempt(adapter_url: str, table_name: str) -> None:
    plan = new_plan(adapter_url, table_name)
    run_dying_attempt(plan, 0, 5 * BATCH_ROWS)
    assert any(path.startswith("data/") for path in files_on_storage(plan)), "nothing written"

    # The retry of that task and another task succeed; the job commits their messages.
    writer = LanceWriter(plan)
    messages = [writer.write(id_batches(0, 5 * BATCH_ROWS)), writer.write(id_batches(5000, 3000))]
    writer.commit(messages)

    assert files_on_storage(plan) == committed_files(adapter_url, table_name)
    assert len(leftover_temporary_files(plan)) <= 1  # the dying attempt's unfinished file
    stored = lance.dataset(namespace_client=RestNamespace(uri=adapter_url), table_id=[table_name])
    assert sorted(stored.to_table().column("id").to_pylist()) == list(range(8000))


def test_abort_deletes_the_files_of_every_attempt(adapter_url: str, table_name: str) -> None:
    first_job = LanceWriter(new_plan(adapter_url, table_name))
    first_job.commit([first_job.write(id_batches(0, BATCH_ROWS))])
    plan = new_plan(adapter_url, table_name)
    finished = LanceWriter(plan).write(id_batches(1000, 4 * BATCH_ROWS))
    run_dying_attempt(plan, 5000, 4 * BATCH_ROWS)
    assert len(files_on_storage(plan)) > 6  # markers and files of both attempts

    # Only the finished task reported; the job fails and aborts.
    LanceWriter(plan).abort([finished, None])

    assert files_on_storage(plan) == committed_files(adapter_url, table_name)
    stored = lance.dataset(namespace_client=RestNamespace(uri=adapter_url), table_id=[table_name])
    assert sorted(stored.to_table().column("id").to_pylist()) == list(range(BATCH_ROWS))


@pytest.fixture(autouse=True)
def _spawned_workers_import_this_checkout() -> Iterator[None]:
    """Spawned processes import `tests` and `lance_adapter_spark` from this checkout, like
    Spark's."""
    previous = os.environ.get("PYTHONPATH")
    root = str(Path(__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, previous]))
    yield
    if previous is None:
        os.environ.pop("PYTHONPATH")
    else:
        os.environ["PYTHONPATH"] = previous
