"""LanceDB's remote client through the adapter answers as embedded LanceDB does on identical
tables (`tests.support.lancedb_parity`): every full-text query shape, hybrid search, vector
search options, every select form, offsets, order, takes, index options and table changes; on
the directory backend (pylance's native operations), Glue (on moto), the real Hive 2
metastore (the generic ones) and the directory catalog of a server of several (`db://dir$…`),
each in a database (`db://<namespace>`) of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import lancedb
import pyarrow as pa
import pytest
from lance_namespace import CreateNamespaceRequest

from backends.core.names import ID_DELIMITER
from tests.support.contract_backends import ContractBackend
from tests.support.lancedb_parity import (
    CASES,
    MUTATIONS,
    assert_same_answer,
    assert_same_change,
    build_tables,
)

pytestmark = pytest.mark.parametrize(
    "backend", ["dir", "glue", "hive2", "federated-dir"], indirect=True)


@pytest.fixture(scope="module")
def databases(
    backend: ContractBackend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, Any]]:
    """(the remote client on a fresh namespace of the backend, embedded LanceDB), each with
    the tables built."""
    namespace = backend.fresh_namespace("lancedb")  # in a server of several: [catalog, name]
    backend.client().create_namespace(CreateNamespaceRequest(id=namespace))
    remote = lancedb.connect(f"db://{ID_DELIMITER.join(namespace)}", api_key="any",
                             host_override=backend.url, region="local")
    embedded = lancedb.connect(str(tmp_path_factory.mktemp("embedded")))
    build_tables(remote)
    build_tables(embedded)
    yield remote, embedded


@pytest.mark.parametrize("case", list(CASES))
def test_the_remote_client_answers_as_embedded_lancedb(
    databases: tuple[Any, Any], case: str
) -> None:
    assert_same_answer(databases, case)


@pytest.mark.parametrize("case", list(MUTATIONS))
def test_the_remote_client_changes_tables_as_embedded_lancedb(
    databases: tuple[Any, Any], case: str
) -> None:
    assert_same_change(databases, case)


def test_the_remote_client_creates_a_table_from_a_schema_alone(databases: tuple[Any, Any]) -> None:
    schema = pa.schema([("a", pa.int32()), ("v", pa.list_(pa.float32(), 4))])
    for db in databases:
        table = db.create_table("from_schema", schema=schema)
        assert (table.schema, table.count_rows()) == (schema, 0)
        table.add(pa.table({"a": pa.array([1], pa.int32()),
                            "v": pa.array([[1.0, 2.0, 3.0, 4.0]], schema.field("v").type)}))
        assert table.search().to_arrow().column("a").to_pylist() == [1]
