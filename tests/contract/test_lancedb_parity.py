"""LanceDB's remote client through the adapter on catalog backends answers as embedded LanceDB
does on identical tables (`tests.support.lancedb_parity`): Glue (on moto) and the real Hive 2
metastore, each database a catalog namespace reached as `db://<namespace>`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import lancedb
import pytest

from tests.support.contract_backends import ContractBackend
from tests.support.lancedb_parity import (
    CASES,
    MUTATIONS,
    build_tables,
    differences,
    mutated,
    outcome,
)

pytestmark = pytest.mark.parametrize("backend", ["glue", "hive2"], indirect=True)


@pytest.fixture(scope="module")
def databases(
    backend: ContractBackend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, Any]]:
    """(the remote client on the backend's fresh namespace, embedded LanceDB), each with the
    tables built."""
    (database,) = backend.new_layout().namespace
    remote = lancedb.connect(f"db://{database}", api_key="any", host_override=backend.url,
                             region="local")
    embedded = lancedb.connect(str(tmp_path_factory.mktemp("embedded")))
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
