"""Catalog entries over HTTP on every backend: DeclareTable, DescribeTable and DeregisterTable of
a declared table, and RegisterTable with mode overwrite, which replaces the registration or, when
it fails, leaves the previous one as it was (where the catalog can fail on demand, also after
the backend has taken the previous entry out)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import lance
import pytest
from lance_namespace import (
    CountTableRowsRequest,
    CreateTableRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeTableRequest,
    InternalError,
    InvalidInputError,
    ListTablesRequest,
    RegisterTableRequest,
    TableAlreadyExistsError,
    TableExistsRequest,
    TableNotFoundError,
)

from tests.support.contract_backends import ContractBackend
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.official_client import OfficialClient


def test_declare_describe_deregister(backend: ContractBackend) -> None:
    client, layout = backend.client(), backend.new_layout()
    declared = client.declare_table(
        DeclareTableRequest(id=layout.table, properties={"team": "ml"})
    )
    assert declared.location
    described = client.describe_table(DescribeTableRequest(id=layout.table))
    assert described.location == declared.location
    assert (described.properties or {}).get("team") == "ml"
    client.table_exists(TableExistsRequest(id=layout.table))
    assert client.list_tables(ListTablesRequest(id=layout.namespace)).tables == ["items"]
    with pytest.raises(TableAlreadyExistsError, match=re.escape(layout.table[-1])):
        client.declare_table(DeclareTableRequest(id=layout.table))

    lance.write_dataset(sample_table(3), declared.location)
    deregistered = client.deregister_table(DeregisterTableRequest(id=layout.table))
    assert deregistered.location == declared.location
    with pytest.raises(TableNotFoundError, match=re.escape(layout.table[-1])):
        client.table_exists(TableExistsRequest(id=layout.table))
    with pytest.raises(TableNotFoundError, match=re.escape(layout.table[-1])):
        client.deregister_table(DeregisterTableRequest(id=layout.table))
    assert client.list_tables(ListTablesRequest(id=layout.namespace)).tables == []
    assert lance.dataset(declared.location).count_rows() == 3, "deregistering keeps the data"


def data_of_a_gone_table(client: OfficialClient, table_id: list[str], rows: int) -> str:
    """The location of `rows` rows the server wrote for `table_id`, deregistered since: data
    any table of the namespace may adopt."""
    client.create_table(CreateTableRequest(id=table_id), arrow_stream(sample_table(rows)))
    return client.deregister_table(DeregisterTableRequest(id=table_id)).location


def assert_registered(
    backend: ContractBackend, table_id: list[str], location: str, version: str, rows: int
) -> None:
    """`table_id` is registered at `location` (with its property `v`, where the backend keeps
    registered properties: `test_registered_properties_are_kept`), `rows` rows there."""
    client = backend.client()
    described = client.describe_table(DescribeTableRequest(id=table_id))
    assert described.location == location
    if backend.conventions.keeps_registered_properties:
        assert (described.properties or {}).get("v") == version
    assert client.count_table_rows(CountTableRowsRequest(id=table_id)).count == rows


def test_register_overwrite_replaces_and_a_failed_one_keeps_the_previous(
    backend: ContractBackend,
) -> None:
    client, layout = backend.client(), backend.new_layout()
    old = data_of_a_gone_table(client, layout.table, 5)
    new = data_of_a_gone_table(client, layout.other, 3)
    empty = data_of_a_gone_table(client, [*layout.namespace, "emptied"], 1)
    shutil.rmtree(Path(empty.removeprefix("file://")))
    first = RegisterTableRequest(id=layout.table, location=old, properties=_kept(backend, "1"))
    client.register_table(first)

    with pytest.raises(TableAlreadyExistsError, match=re.escape(layout.table[-1])):
        client.register_table(RegisterTableRequest(id=layout.table, location=new))
    to_nothing = RegisterTableRequest(id=layout.table, location=empty, mode="overwrite")
    # Refused: no Lance table there (in Iceberg's seed layout, a place that nothing records
    # as a table's may be a namespace's directory, which is refused first).
    with pytest.raises(InvalidInputError, match=r"no Lance table at|could hold other tables"):
        client.register_table(to_nothing)
    assert_registered(backend, layout.table, old, "1", 5)
    if backend.fail_next_catalog_write is not None:
        backend.fail_next_catalog_write()
        to_new = RegisterTableRequest(id=layout.table, location=new, mode="overwrite")
        with pytest.raises(InternalError, match="catalog returned HTTP 500: InjectedFault"):
            client.register_table(to_new)
        assert_registered(backend, layout.table, old, "1", 5)

    overwrite = RegisterTableRequest(
        id=layout.table, location=new, mode="overwrite", properties=_kept(backend, "2")
    )
    assert client.register_table(overwrite).location == new
    assert_registered(backend, layout.table, new, "2", 3)
    assert lance.dataset(old).count_rows() == 5, "overwriting the registration keeps the data"


def _kept(backend: ContractBackend, version: str) -> dict[str, str] | None:
    """The properties a registration gives, where the backend keeps them (else it refuses)."""
    return {"v": version} if backend.conventions.keeps_registered_properties else None


def test_registered_properties_are_kept_or_refused(backend: ContractBackend) -> None:
    client, layout = backend.client(), backend.new_layout()
    location = data_of_a_gone_table(client, layout.table, 2)
    if not backend.conventions.keeps_registered_properties:
        # dir's native RegisterTable would drop them: refused, nothing registered.
        with pytest.raises(InvalidInputError, match="keeps no properties of a registered"):
            client.register_table(
                RegisterTableRequest(id=layout.table, location=location, properties={"v": "1"})
            )
        with pytest.raises(TableNotFoundError):
            client.table_exists(TableExistsRequest(id=layout.table))
        return
    registered = client.register_table(
        RegisterTableRequest(id=layout.table, location=location, properties={"v": "1"})
    )
    assert (registered.properties or {}).get("v") == "1"
    described = client.describe_table(DescribeTableRequest(id=layout.table))
    assert (described.properties or {}).get("v") == "1"
    again = RegisterTableRequest(
        id=layout.table, location=location, mode="overwrite", properties={"v": "2"}
    )
    client.register_table(again)
    described = client.describe_table(DescribeTableRequest(id=layout.table))
    assert (described.properties or {}).get("v") == "2"
