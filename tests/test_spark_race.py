"""Concurrent first writers of one new table all succeed, and those that lost the race append.

The race as the dir catalog sometimes reports it — DeclareTable answering
ConcurrentModification (code 14) because another writer's declaration landed at the same
instant — is rare in these repetitions, so a namespace that always loses it checks that
path deterministically.

Each repetition runs the driver and task side of a Spark write (plan: DescribeTable,
DeclareTable, create version 1; a task's fragments; the job's commit) in several
threads at once against the real adapter, without Spark, so the race is repeated often
at little cost; test_spark_write.py races real Spark jobs a few times.
"""

from __future__ import annotations

import functools
import threading

import lance
import pyarrow as pa
from lance.namespace import DirectoryNamespace, RestNamespace
from lance_namespace import DeclareTableRequest, DeclareTableResponse
from lance_namespace.errors import ConcurrentModificationError
from pyspark.sql.types import LongType, StringType, StructField, StructType

from lance_adapter_spark.api import source_options
from lance_adapter_spark.options import parse_options
from lance_adapter_spark.write import LanceWriter, plan_write
from tests.support.pipeline import run_concurrently

REPETITIONS = 20
WRITERS = 4
ROWS_PER_WRITER = 100
SCHEMA = StructType([StructField("id", LongType()), StructField("label", StringType())])


def write_like_a_spark_job(
    url: str, table: str, first_id: int, start: threading.Barrier | None = None, **options: str
) -> None:
    ids = list(range(first_id, first_id + ROWS_PER_WRITER))
    batch = pa.record_batch({"id": ids, "label": [str(i) for i in ids]})
    parsed = parse_options(source_options(table, uri=url, **options))
    if start:
        start.wait(timeout=60)  # line the writers up, so their DeclareTable calls collide
    writer = LanceWriter(plan_write(parsed, SCHEMA, False))
    writer.commit([writer.write(iter([batch]))])


class LosesEveryDeclareRace(DirectoryNamespace):
    """A dir namespace where another writer's declaration of the table always lands
    first, and DeclareTable answers ConcurrentModification, as the dir catalog does
    when two declarations collide."""

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        super().declare_table(request)  # the other writer's declaration
        raise ConcurrentModificationError(f"Object '{request.id[-1]}' was concurrently created")


def test_first_writers_of_a_new_table_all_append(adapter_url: str, table_name: str) -> None:
    for repetition in range(REPETITIONS):
        table = f"{table_name}_{repetition}"
        start = threading.Barrier(WRITERS)
        writers = [
            functools.partial(write_like_a_spark_job, adapter_url, table, n * 1000, start)
            for n in range(WRITERS)
        ]
        run_concurrently(writers, timeout=120)
        dataset = lance.dataset(namespace_client=RestNamespace(uri=adapter_url), table_id=[table])
        expected = [n * 1000 + i for n in range(WRITERS) for i in range(ROWS_PER_WRITER)]
        stored = sorted(dataset.to_table(columns=["id"]).column("id").to_pylist())
        assert stored == expected, f"repetition {repetition}: rows lost or doubled"
        # One empty version 1 (made by exactly one writer), then one append per writer.
        assert len(dataset.versions()) == WRITERS + 1, f"repetition {repetition}"


def test_a_writer_told_concurrent_modification_appends(tmp_path, table_name: str) -> None:
    impl = {"impl": f"{__name__}.LosesEveryDeclareRace", "ns.root": str(tmp_path)}
    write_like_a_spark_job("", table_name, 0, **impl)
    write_like_a_spark_job("", table_name, 1000, **impl)

    dataset = lance.dataset(str(tmp_path / f"{table_name}.lance"))
    stored = sorted(dataset.to_table(columns=["id"]).column("id").to_pylist())
    assert stored == [*range(ROWS_PER_WRITER), *range(1000, 1000 + ROWS_PER_WRITER)]
