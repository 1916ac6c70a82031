"""LanceDB end to end through the adapter on catalog backends: the namespace connection with
and without pushdown, and the remote client, each through a table's whole life."""

from __future__ import annotations

from typing import Any

import lancedb
import pytest

from tests.support.contract_backends import ContractBackend
from tests.support.lancedb_lifecycle import run_lifecycle

CATALOG_BACKENDS = ["hive2", "hive3", "glue", "unity", "iceberg"]
PUSHDOWN = ["QueryTable", "CreateTable"]


def connect(kind: str, url: str) -> Any:
    if kind == "remote":
        return lancedb.connect("db://lance", api_key="any", host_override=url, region="local")
    options = {"namespace_client_pushdown_operations": PUSHDOWN} if kind == "pushdown" else {}
    return lancedb.connect_namespace("rest", {"uri": url}, **options)


@pytest.mark.parametrize("backend", CATALOG_BACKENDS, indirect=True)
@pytest.mark.parametrize("kind", ["namespace", "pushdown", "remote"])
def test_lancedb_runs_a_tables_whole_life(backend: ContractBackend, kind: str) -> None:
    layout = backend.new_layout()
    run_lifecycle(connect(kind, backend.url), layout.namespace)
