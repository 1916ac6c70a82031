"""The other official client, `lance_namespace_urllib3_client`, judges the same adapters: a
table's short life through its TableApi, DataApi, TagApi and IndexApi on every backend, each
effect read back with pylance at the table's location."""

from __future__ import annotations

from collections.abc import Iterator

import lance
import pytest
from lance_namespace_urllib3_client import ApiClient, Configuration
from lance_namespace_urllib3_client.api import DataApi, IndexApi, NamespaceApi, TableApi, TagApi
from lance_namespace_urllib3_client.exceptions import NotFoundException
from lance_namespace_urllib3_client.models import (
    CountTableRowsRequest,
    CreateTableIndexRequest,
    CreateTableTagRequest,
    DescribeTableRequest,
    ListTableIndicesRequest,
    TableExistsRequest,
)

from tests.support.contract_backends import ContractBackend
from tests.support.lance_data import arrow_stream, error_code, sample_table


@pytest.fixture
def api_client(backend: ContractBackend) -> Iterator[ApiClient]:
    with ApiClient(Configuration(host=backend.url)) as client:
        yield client


def test_a_tables_short_life_through_the_urllib3_client(
    backend: ContractBackend, api_client: ApiClient
) -> None:
    layout = backend.new_layout()
    table_id = layout.joined(layout.table)
    data, tables, tags = DataApi(api_client), TableApi(api_client), TagApi(api_client)
    indexes = IndexApi(api_client)

    created = data.create_table(table_id, arrow_stream(sample_table(40)), delimiter="$")
    location = tables.describe_table(table_id, DescribeTableRequest(), delimiter="$").location
    assert created.version == 1 == lance.dataset(location).version
    assert data.count_table_rows(table_id, CountTableRowsRequest(predicate="id < 10")) == 10

    tags.create_table_tag(table_id, CreateTableTagRequest(tag="first", version=1))
    assert lance.dataset(location).tags.list()["first"]["version"] == 1
    assert tags.list_table_tags(table_id).tags["first"].version == 1

    scalar = CreateTableIndexRequest(column="id", index_type="BTREE", name="id_idx")
    indexes.create_table_scalar_index(table_id, scalar)
    assert [index.name for index in lance.dataset(location).describe_indices()] == ["id_idx"]
    listed = indexes.list_table_indices(table_id, ListTableIndicesRequest()).indexes
    assert [(index.index_name, index.columns) for index in listed] == [("id_idx", ["id"])]

    namespace_id = layout.joined(layout.namespace)
    assert NamespaceApi(api_client).list_tables(namespace_id).tables == ["items"]
    tables.drop_table(table_id)
    with pytest.raises(NotFoundException) as missing:
        tables.table_exists(table_id, TableExistsRequest())
    assert (missing.value.status, error_code(missing.value.body)) == (404, 4)
