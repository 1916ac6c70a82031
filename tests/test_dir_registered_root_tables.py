"""Root tables of the `dir` backend registered at a location other than `<name>.lance`: the
native lookup and listing only know `<name>.lance` directories; the manifest finds them, on a
local root and on object storage (moto's S3)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lance
import pytest
from lance_namespace import (
    CountTableRowsRequest,
    DescribeTableRequest,
    DropTableRequest,
    InsertIntoTableRequest,
    LanceNamespace,
    ListTablesRequest,
    RegisterTableRequest,
    TableNotFoundError,
)

from backends import load_namespace
from tests.support.common import unique
from tests.support.glue import MotoEndpoint
from tests.support.lance_data import arrow_stream, sample_table


@pytest.fixture(params=["local", "s3"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A `dir` root and the storage options that reach it."""
    if request.param == "local":
        yield str(tmp_path), {}
        return
    moto: MotoEndpoint = request.getfixturevalue("clean_moto")
    bucket = unique("bucket").replace("_", "-")
    moto.client("s3").create_bucket(Bucket=bucket)
    yield f"s3://{bucket}/root", {
        "aws_endpoint": moto.url, "allow_http": "true", "aws_region": "us-east-1",
        "aws_access_key_id": "testing", "aws_secret_access_key": "testing",
    }


def backend(root: tuple[str, dict[str, str]]) -> LanceNamespace:
    location, options = root
    return load_namespace(
        "dir", {"root": location, **{f"storage.{k}": v for k, v in options.items()}}
    )


def test_a_root_table_registered_elsewhere_is_found_listed_written_and_dropped(
    root: tuple[str, dict[str, str]],
) -> None:
    location, options = root
    namespace = backend(root)
    lance.write_dataset(sample_table(3), f"{location}/data/t1", storage_options=options or None)
    registered = RegisterTableRequest(id=["registered"], location="data/t1")
    namespace.register_table(registered)
    described = namespace.describe_table(DescribeTableRequest(id=["registered"]))
    assert described.location.rstrip("/").endswith("/data/t1")
    assert "registered" in namespace.list_tables(ListTablesRequest(id=[])).tables
    namespace.insert_into_table(InsertIntoTableRequest(id=["registered"]),
                                arrow_stream(sample_table(2, 10)))
    assert namespace.count_table_rows(CountTableRowsRequest(id=["registered"])).count == 5
    namespace.drop_table(DropTableRequest(id=["registered"]))
    with pytest.raises(TableNotFoundError, match="table id 'registered'"):
        namespace.describe_table(DescribeTableRequest(id=["registered"]))
    assert "registered" not in namespace.list_tables(ListTablesRequest(id=[])).tables


def test_the_root_listing_pages_over_both_kinds_of_root_table(
    root: tuple[str, dict[str, str]],
) -> None:
    location, options = root
    namespace = backend(root)
    for index in range(3):
        table = f"{location}/elsewhere/t{index}"
        lance.write_dataset(sample_table(1), table, storage_options=options or None)
        namespace.register_table(RegisterTableRequest(id=[f"r{index}"], location=table))
        lance.write_dataset(sample_table(1), f"{location}/c{index}.lance",
                            storage_options=options or None)
    pages, token = [], None
    while True:
        answer = namespace.list_tables(ListTablesRequest(id=[], limit=2, page_token=token))
        pages.append(answer.tables)
        token = answer.page_token
        if not token:
            break
    assert [name for page in pages for name in page] == ["c0", "c1", "c2", "r0", "r1", "r2"]
    assert all(len(page) <= 2 for page in pages)
