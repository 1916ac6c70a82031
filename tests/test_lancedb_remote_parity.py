"""LanceDB's remote client through the adapter on the directory backend answers as embedded
LanceDB does on identical tables: every full-text query shape, hybrid search, vector search
options, every select form, offsets, order, takes and index options
(`tests.support.lancedb_parity`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pytest

from tests.support.adapter import running_server
from tests.support.lancedb_parity import (
    CASES,
    MUTATIONS,
    build_tables,
    differences,
    mutated,
    outcome,
)


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """(the remote client on a fresh adapter, embedded LanceDB), each with the tables built."""
    root: Path = tmp_path_factory.mktemp("parity")
    (root / "served").mkdir()
    with running_server("dir", {"root": str(root / "served")}) as url:
        remote = lancedb.connect("db://lance", api_key="any", host_override=url, region="local")
        embedded = lancedb.connect(str(root / "embedded"))
        build_tables(remote)
        build_tables(embedded)
        yield remote, embedded


@pytest.mark.parametrize("case", list(CASES))
def test_the_remote_client_answers_as_embedded_lancedb(
    databases: tuple[Any, Any], case: str
) -> None:
    remote, embedded = databases
    expected = outcome(CASES[case], embedded)
    answered = outcome(CASES[case], remote)
    assert not differences(answered, expected), (case, answered, expected)


@pytest.mark.parametrize("case", list(MUTATIONS))
def test_the_remote_client_changes_tables_as_embedded_lancedb(
    databases: tuple[Any, Any], case: str
) -> None:
    remote, embedded = databases
    result, schema, rows = mutated(remote, case)
    expected_result, expected_schema, expected_rows = mutated(embedded, case)
    assert not differences(result, expected_result), (case, result, expected_result)
    assert schema == expected_schema
    assert not differences(rows, expected_rows)


def test_the_remote_client_creates_a_table_from_a_schema_alone(databases: tuple[Any, Any]) -> None:
    schema = pa.schema([("a", pa.int32()), ("v", pa.list_(pa.float32(), 4))])
    for db in databases:
        table = db.create_table("from_schema", schema=schema)
        assert (table.schema, table.count_rows()) == (schema, 0)
        table.add(pa.table({"a": pa.array([1], pa.int32()),
                            "v": pa.array([[1.0, 2.0, 3.0, 4.0]], schema.field("v").type)}))
        assert table.search().to_arrow().column("a").to_pylist() == [1]
