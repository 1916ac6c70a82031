"""The source's own file handling on S3 (moto): the commit's check that reported files
exist, write markers and deleting files all reach the bucket through the storage options
the namespace gives, as Lance does, not through the environment."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest

from lance_adapter_spark.tables import (
    delete_data_files,
    forget_written,
    mark_written,
    missing_data_files,
    written_files,
)
from tests.support.glue import REGION, TEST_ACCESS_KEY, TEST_SECRET_KEY, start_moto

BUCKET = "pipeline-files"
LOCATION = f"s3://{BUCKET}/tables/t.lance"


@pytest.fixture(scope="module")
def storage(monkeypatch_module: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch_module.delenv(name, raising=False)  # only the options may lead there
    server, url = start_moto()
    options = {
        "aws_endpoint": url,
        "aws_region": REGION,
        "aws_access_key_id": TEST_ACCESS_KEY,
        "aws_secret_access_key": TEST_SECRET_KEY,
        "allow_http": "true",
    }
    try:
        yield options
    finally:
        server.stop()


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def s3(storage: dict[str, str]):
    return boto3.client(
        "s3",
        endpoint_url=storage["aws_endpoint"],
        region_name=REGION,
        aws_access_key_id=TEST_ACCESS_KEY,
        aws_secret_access_key=TEST_SECRET_KEY,
    )


def keys(storage: dict[str, str]) -> list[str]:
    listed = s3(storage).list_objects_v2(Bucket=BUCKET, Prefix="tables/")
    return sorted(item["Key"] for item in listed.get("Contents", []))


def test_files_on_s3_are_checked_marked_and_deleted_through_storage_options(
    storage: dict[str, str],
) -> None:
    client = s3(storage)
    client.create_bucket(Bucket=BUCKET)
    client.put_object(Bucket=BUCKET, Key="tables/t.lance/data/a.lance", Body=b"x")
    client.put_object(Bucket=BUCKET, Key="tables/t.lance/data/b.lance", Body=b"x")

    assert missing_data_files(LOCATION, ["a.lance", "b.lance", "c.lance"], storage) == ["c.lance"]
    mark_written(LOCATION, "job1", "a.lance", storage)
    mark_written(LOCATION, "job1", "b.lance", storage)
    assert written_files(LOCATION, "job1", storage) == {"a.lance", "b.lance"}

    assert delete_data_files(LOCATION, ["b.lance"], storage) == 1
    forget_written(LOCATION, "job1", storage)
    # Only the file kept; pyarrow keeps empty folder objects (`…/data/`) of emptied folders.
    assert [key for key in keys(storage) if not key.endswith("/")] == [
        "tables/t.lance/data/a.lance"
    ]
