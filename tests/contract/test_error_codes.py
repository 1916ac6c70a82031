"""The error-code contract over HTTP on every backend, judged by pylance's official client:
each failure carries the code the spec gives it and changes nothing; listings page exactly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    CreateTableTagRequest,
    DeclareTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    GetTableTagVersionRequest,
    InsertIntoTableRequest,
    LanceNamespaceError,
    ListNamespacesRequest,
    ListTablesRequest,
    NamespaceExistsRequest,
    RegisterTableRequest,
    TableExistsRequest,
)

from tests.support.contract_backends import ContractBackend
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.official_client import OfficialClient

TOO_LONG = "x" * 300
UNPRINTABLE = "bad\tname"


def code_of(operation: Callable[..., Any], *arguments: Any) -> int:
    """The error code `operation(*arguments)` answers with (it must fail). Any error of the
    protocol: the code, which every caller asserts, is what is tested."""
    with pytest.raises(LanceNamespaceError) as raised:
        operation(*arguments)
    return raised.value.code


def namespace_exists(client: OfficialClient, namespace: list[str]) -> bool:
    try:
        client.namespace_exists(NamespaceExistsRequest(id=namespace))
    except LanceNamespaceError as error:
        assert error.code == 1, error
        return False
    return True


def test_namespace_errors(backend: ContractBackend) -> None:
    client, layout = backend.client(), backend.new_layout()
    client.declare_table(DeclareTableRequest(id=layout.table))
    missing = backend.fresh_namespace("missing")
    assert code_of(client.describe_namespace, DescribeNamespaceRequest(id=missing)) == 1
    assert code_of(client.list_tables, ListTablesRequest(id=missing)) == 1
    assert code_of(client.drop_namespace, DropNamespaceRequest(id=missing)) == 1
    existing = CreateNamespaceRequest(id=layout.namespace)
    assert code_of(client.create_namespace, existing) == 2
    assert code_of(client.drop_namespace, DropNamespaceRequest(id=layout.namespace)) == 3
    assert namespace_exists(client, layout.namespace)
    for bad in (TOO_LONG, UNPRINTABLE):
        bad_id = [*layout.namespace[:-1], bad]
        assert code_of(client.create_namespace, CreateNamespaceRequest(id=bad_id)) == 13
    assert client.list_namespaces(ListNamespacesRequest(id=layout.namespace[:-1])).namespaces


def test_table_errors(backend: ContractBackend) -> None:
    client, layout = backend.client(), backend.new_layout()
    client.create_table(CreateTableRequest(id=layout.table), arrow_stream(sample_table(5)))
    missing = [*layout.namespace, "missing"]
    assert code_of(client.describe_table, DescribeTableRequest(id=missing)) == 4
    assert code_of(client.count_table_rows, CountTableRowsRequest(id=missing)) == 4
    in_missing_namespace = [*backend.fresh_namespace("missing"), "t"]
    assert code_of(client.declare_table, DeclareTableRequest(id=in_missing_namespace)) in (
        1,
        4,
    )
    again = CreateTableRequest(id=layout.table)
    assert code_of(client.create_table, again, arrow_stream(sample_table(1))) == 5
    assert code_of(client.declare_table, DeclareTableRequest(id=layout.table)) == 5
    for bad in (TOO_LONG, UNPRINTABLE):
        bad_id = [*layout.namespace, bad]
        assert code_of(client.declare_table, DeclareTableRequest(id=bad_id)) == 13
    assert client.list_tables(ListTablesRequest(id=layout.namespace)).tables == ["items"]

    missing_tag = GetTableTagVersionRequest(id=layout.table, tag="nope")
    assert code_of(client.get_table_tag_version, missing_tag) == 8
    client.create_table_tag(CreateTableTagRequest(id=layout.table, tag="v1", version=1))
    duplicate = CreateTableTagRequest(id=layout.table, tag="v1", version=1)
    assert code_of(client.create_table_tag, duplicate) == 9


def test_unknown_modes_are_13_and_change_nothing(backend: ContractBackend) -> None:
    client, layout = backend.client(), backend.new_layout()
    client.create_table(CreateTableRequest(id=layout.table), arrow_stream(sample_table(5)))
    fresh = backend.fresh_namespace()
    sideways = CreateNamespaceRequest(id=fresh, mode="sideways")
    assert code_of(client.create_namespace, sideways) == 13
    assert not namespace_exists(client, fresh)
    for request in (
        DropNamespaceRequest(id=layout.rename_target, behavior="sideways"),
        DropNamespaceRequest(id=layout.rename_target, mode="sideways"),
    ):
        assert code_of(client.drop_namespace, request) == 13
        assert namespace_exists(client, layout.rename_target)
    rows = arrow_stream(sample_table(1, start=100))
    overwrite = CreateTableRequest(id=layout.table, mode="sideways")
    assert code_of(client.create_table, overwrite, rows) == 13
    insert = InsertIntoTableRequest(id=layout.table, mode="sideways")
    assert code_of(client.insert_into_table, insert, rows) == 13
    assert client.count_table_rows(CountTableRowsRequest(id=layout.table)).count == 5
    location = client.describe_table(DescribeTableRequest(id=layout.table)).location
    again = RegisterTableRequest(id=layout.other, location=location, mode="sideways")
    assert code_of(client.register_table, again) == 13
    assert code_of(client.table_exists, TableExistsRequest(id=layout.other)) == 4


def pages(list_page: Callable[[str | None], Any], field: str) -> list[str]:
    """Every item of a listing, page by page with limit 2; each page at most 2 items."""
    items: list[str] = []
    token = None
    while True:
        page = list_page(token)
        assert len(getattr(page, field)) <= 2
        items.extend(getattr(page, field))
        token = page.page_token
        if not token:
            return items


def test_paging_lists_every_item_once_in_order(backend: ContractBackend) -> None:
    client, layout = backend.client(), backend.new_layout()
    names = ["t3", "t1", "t5", "t2", "t4"]
    for name in names:
        client.declare_table(DeclareTableRequest(id=[*layout.namespace, name]))
    paged_tables = pages(
        lambda token: client.list_tables(
            ListTablesRequest(id=layout.namespace, limit=2, page_token=token)
        ),
        "tables",
    )
    assert paged_tables == sorted(names)

    parent = layout.namespace[:-1]
    paged_namespaces = pages(
        lambda token: client.list_namespaces(
            ListNamespacesRequest(id=parent, limit=2, page_token=token)
        ),
        "namespaces",
    )
    whole = client.list_namespaces(ListNamespacesRequest(id=parent)).namespaces
    assert paged_namespaces == whole == sorted(set(whole))
    assert layout.namespace[-1] in whole

    paged_all = pages(
        lambda token: client.list_all_tables(ListTablesRequest(limit=2, page_token=token)),
        "tables",
    )
    all_tables = client.list_all_tables(ListTablesRequest()).tables
    assert paged_all == all_tables and len(set(paged_all)) == len(paged_all)
    mine = [layout.joined([*layout.namespace, name]) for name in sorted(names)]
    assert layout.own_entries(paged_all) == mine


def test_a_declared_table_without_data_counts_as_an_invalid_state(
    backend: ContractBackend,
) -> None:
    client, layout = backend.client(), backend.new_layout()
    client.declare_table(DeclareTableRequest(id=layout.table))
    assert code_of(client.count_table_rows, CountTableRowsRequest(id=layout.table)) == 19
    client.describe_table(DescribeTableRequest(id=layout.table))


@pytest.mark.parametrize("location", ["", "   ", "/tmp/a\nb", "/tmp/\x00"])
def test_bad_locations_are_invalid_input_and_change_nothing(
    backend: ContractBackend, location: str
) -> None:
    """DeclareTable and RegisterTable of an empty, blank or control-character location: 13,
    and no table appears (the per-backend copies of this test, now one, on dir too)."""
    client, layout = backend.client(), backend.new_layout()
    assert code_of(client.declare_table,
                   DeclareTableRequest(id=layout.table, location=location)) == 13
    assert code_of(client.register_table,
                   RegisterTableRequest(id=layout.table, location=location)) == 13
    assert code_of(client.table_exists, TableExistsRequest(id=layout.table)) == 4
