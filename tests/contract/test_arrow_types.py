"""Every Arrow type Lance stores round-trips on every backend: CreateTable and InsertIntoTable
take it, the data reads back unchanged, and DescribeTable's schema is what pylance's own
DirectoryNamespace answers for the same data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
from lance.namespace import DirectoryNamespace
from lance_namespace import (
    CreateTableRequest,
    DescribeTableRequest,
    InsertIntoTableRequest,
    LanceNamespace,
)

from tests.support.arrow_types import every_type_table
from tests.support.contract_backends import ContractBackend
from tests.support.lance_data import arrow_stream


def write_and_describe(namespace: LanceNamespace, table: list[str]) -> dict[str, Any]:
    """The every-type rows created then inserted again; DescribeTable's schema and the data."""
    data = arrow_stream(every_type_table())
    namespace.create_table(CreateTableRequest(id=table), data)
    namespace.insert_into_table(InsertIntoTableRequest(id=table), data)
    described = namespace.describe_table(
        DescribeTableRequest(id=table, load_detailed_metadata=True)
    )
    return {
        "schema": described.var_schema.to_dict(),
        "data": lance.dataset(described.location).to_table(),
    }


def test_every_arrow_type_round_trips(backend: ContractBackend, tmp_path: Path) -> None:
    reference = write_and_describe(DirectoryNamespace(root=str(tmp_path)), ["every"])
    served = write_and_describe(backend.client(), [*backend.new_layout().namespace, "every"])

    assert served["schema"] == reference["schema"]
    assert served["data"].equals(reference["data"])
    assert reference["data"].equals(pa.concat_tables([every_type_table()] * 2))
