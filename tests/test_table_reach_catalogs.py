"""A table reaches only its own bytes (issue 68) on every backend, loaded as the server loads
it: `dir`, `hive2` and `hive3` (the real metastores), `glue` (moto), `unity` (the stand-in)
and `iceberg` (the REST reference server). A version naming another table's folder as a base
is refused at every open; a shallow clone made by hand is not registered; a clone the server
made reads its source."""

from __future__ import annotations

import lance
import pytest
from lance_namespace import (
    CountTableRowsRequest,
    DescribeTableRequest,
    DropTableRequest,
    InsertIntoTableRequest,
    InvalidInputError,
    QueryTableRequest,
    RegisterTableRequest,
    TableNotFoundError,
)

from backends.core.extensions import CloneTableRequest
from tests.support.containment_catalogs import Catalog, create_table
from tests.support.foreign_bytes import append_foreign_rows
from tests.support.lance_data import arrow_stream, sample_table

OUTSIDE = "names data outside this table"


def test_every_open_of_a_table_naming_another_tables_folder_is_refused(
    catalog: Catalog,
) -> None:
    namespace = catalog.namespace
    secret, own = create_table(catalog, "secret"), create_table(catalog, "t")
    secret_version = lance.dataset(secret).version
    append_foreign_rows(own, secret)
    table = catalog.table("t")
    opens = {
        "count": lambda: namespace.count_table_rows(CountTableRowsRequest(id=table)),
        "query": lambda: namespace.query_table(QueryTableRequest(id=table, k=10, vector={})),
        "describe": lambda: namespace.describe_table(
            DescribeTableRequest(id=table, load_detailed_metadata=True)),
        "insert": lambda: namespace.insert_into_table(
            InsertIntoTableRequest(id=table), arrow_stream(sample_table(1))),
        "clone": lambda: namespace.clone_table(CloneTableRequest(
            id=catalog.table("copy"), source_location=own, source_id=table)),
    }
    refused = {}
    for name, call in opens.items():
        with pytest.raises(InvalidInputError) as raised:
            call()
        refused[name] = OUTSIDE in str(raised.value)
    assert refused == dict.fromkeys(opens, True)
    assert lance.dataset(own).version == 3  # nothing committed
    assert lance.dataset(secret).version == secret_version
    with pytest.raises(TableNotFoundError):
        namespace.describe_table(DescribeTableRequest(id=catalog.table("copy")))


def test_a_hand_made_clone_is_not_registered_and_a_server_made_one_reads(
    catalog: Catalog,
) -> None:
    namespace = catalog.namespace
    secret = create_table(catalog, "secret")
    source = lance.dataset(secret)
    by_hand = create_table(catalog, "stolen")  # a table's own path, emptied
    namespace.drop_table(DropTableRequest(id=catalog.table("stolen")))
    source.shallow_clone(by_hand, source.version)
    with pytest.raises(InvalidInputError, match=OUTSIDE):
        namespace.register_table(RegisterTableRequest(id=catalog.table("stolen"),
                                                      location=by_hand))

    namespace.clone_table(CloneTableRequest(id=catalog.table("copy"), source_location=secret,
                                            source_id=catalog.table("secret")))
    counted = namespace.count_table_rows(CountTableRowsRequest(id=catalog.table("copy")))
    assert counted.count == 3
