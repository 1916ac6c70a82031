"""The real Hive Metastores 3.1.3 (with catalogs and S3A) and 4.0.1 for the `hive3` tests.

- `hive3_s3` (session): moto's S3 in its own process on a free 127.0.0.1 port (its own process,
  so that other tests resetting the in-process moto do not wipe it), with the bucket `S3_BUCKET`.
- `hive3_metastore` (session): `org.apache.hive:hive-standalone-metastore:3.1.3` on Hadoop 3.1.0
  and embedded Derby, its jars fetched from Maven Central once by `tests/support/maven.py`
  (`tests/java/hive-metastore/pom.xml`). `s3://` and `s3a://` locations go through the real S3A
  file system (`hadoop-aws` 3.1.0 with AWS SDK bundle 1.11.271) to `hive3_s3`, as on a user's
  metastore: HMS makes and checks the directories of catalogs, databases and tables there.
  `LANCE_ADAPTER_HIVE3_METASTORE=4.0.1` runs every hive3 test on HMS 4.0.1 instead (the S3A
  tests are then skipped).
- `hive4_metastore` (session): `org.apache.hive:hive-standalone-metastore-server:4.0.1` on
  Hadoop 3.3.6 (`tests/java/hive-metastore-4/pom.xml`), without S3A (that Hadoop's AWS SDK
  bundle alone is 310 MB); the catalog-level tests run on it as well.

HMS 2.3.10 from the pyspark wheel (`tests/support/hive.py`) stays what `hive2` runs against.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.support.common import free_port, skip_unless_ci, stop_process
from tests.support.hive import HiveMetastoreProcess
from tests.support.locked import locked_version
from tests.support.maven import maven_classpath

HIVE3_VERSION = locked_version("hive-metastore-3")
HIVE4_VERSION = locked_version("hive-metastore-4")
S3_BUCKET = "hive3-lake"
S3_REGION = "us-east-1"
S3_KEY = "hive3-key"  # moto takes any keys
S3_SECRET = "hive3-secret"
MOTO_START_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class S3Endpoint:
    """moto's S3 at `url`, reached with static keys."""

    url: str

    def client(self) -> Any:
        return boto3.client("s3", endpoint_url=self.url, region_name=S3_REGION,
                            aws_access_key_id=S3_KEY, aws_secret_access_key=S3_SECRET)

    def lance_options(self) -> dict[str, str]:
        """Lance storage options for this S3."""
        return {
            "aws_endpoint": self.url,
            "allow_http": "true",
            "aws_region": S3_REGION,
            "aws_access_key_id": S3_KEY,
            "aws_secret_access_key": S3_SECRET,
        }

    def storage_properties(self) -> dict[str, str]:
        """The adapter's `storage.*` properties for Lance data in this S3."""
        return {f"storage.{key}": value for key, value in self.lance_options().items()}

    def location(self, path: str) -> str:
        """The `s3://` URI of `path` in `S3_BUCKET`."""
        return f"s3://{S3_BUCKET}/{path}"

    def keys(self, prefix: str) -> list[str]:
        """Every object key under `prefix` in `S3_BUCKET`."""
        pages = self.client().get_paginator("list_objects_v2").paginate(
            Bucket=S3_BUCKET, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


def s3a_site(endpoint: S3Endpoint) -> dict[str, str]:
    """hive-site.xml properties sending `s3://` and `s3a://` to S3A on `endpoint`."""
    return {
        "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.s3a.endpoint": endpoint.url,
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "fs.s3a.access.key": S3_KEY,
        "fs.s3a.secret.key": S3_SECRET,
        "fs.s3a.attempts.maximum": "3",
        "fs.s3a.retry.limit": "2",
        "fs.s3a.connection.establish.timeout": "5000",
        "fs.s3a.connection.timeout": "20000",
    }


class MotoProcess:
    """`moto_server` of this venv as a separate process on a free 127.0.0.1 port."""

    def __init__(self, log: Path):
        self.port = free_port()
        self._log = log
        self._process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> S3Endpoint:
        return S3Endpoint(f"http://127.0.0.1:{self.port}")

    def start(self) -> None:
        moto_server = Path(sys.executable).with_name("moto_server")
        with open(self._log, "ab") as log:
            self._process = subprocess.Popen(
                [str(moto_server), "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        self._wait_until_serving()

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + MOTO_START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"moto_server exited early; see {self._log}")
            try:
                self.endpoint.client().list_buckets()
                return
            except Exception:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"moto_server did not serve within {MOTO_START_TIMEOUT_SECONDS}s")

    def stop(self) -> None:
        stop_process(self._process, grace_seconds=15)
        self._process = None


# HMS 3.1.3's defaults name two classes of hive-exec, which the standalone metastore does not
# ship: Hive's partition expression proxy and the replication dump cleaner task.
STANDALONE_SITE = {
    "metastore.expression.proxy":
        "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
    "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask,"
                                     "org.apache.hadoop.hive.metastore.RuntimeStatsCleanerTask",
}


@dataclass(frozen=True)
class MetastoreRelease:
    """A Hive Metastore release the hive3 tests can run against."""

    pom: str  # its folder under tests/java/
    s3a: bool  # whether its jars include S3A


# LANCE_ADAPTER_HIVE3_METASTORE picks one; 3.1.3 (with S3A) is what the suite runs.
HIVE3_RELEASES = {
    HIVE3_VERSION: MetastoreRelease("hive-metastore", s3a=True),
    HIVE4_VERSION: MetastoreRelease("hive-metastore-4", s3a=False),
}
RELEASE_VARIABLE = "LANCE_ADAPTER_HIVE3_METASTORE"


def hive3_release() -> tuple[str, MetastoreRelease]:
    version = os.environ.get(RELEASE_VARIABLE, HIVE3_VERSION)
    if version not in HIVE3_RELEASES:
        raise RuntimeError(f"{RELEASE_VARIABLE}={version}: known are {sorted(HIVE3_RELEASES)}")
    return version, HIVE3_RELEASES[version]


def metastore_process(
    version: str, workdir: Path, endpoint: S3Endpoint | None = None
) -> HiveMetastoreProcess:
    """An HMS `version` process (not started); with S3A, its S3 is `endpoint`."""
    release = HIVE3_RELEASES[version]
    s3a = s3a_site(endpoint) if release.s3a and endpoint is not None else {}
    return HiveMetastoreProcess(workdir, jars=maven_classpath(release.pom),
                                site={**STANDALONE_SITE, **s3a})


def require_s3a() -> None:
    """Skip a test of S3A when the chosen metastore has none (HMS 4.0.1 on demand)."""
    version, release = hive3_release()
    if not release.s3a:
        skip_unless_ci(f"the Hive Metastore {version} of these tests has no S3A")


@pytest.fixture(scope="session")
def hive3_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Endpoint]:
    """moto's S3 in its own process, with the bucket `S3_BUCKET`, for the whole run."""
    moto = MotoProcess(tmp_path_factory.mktemp("hive3-moto") / "moto.log")
    moto.start()
    try:
        moto.endpoint.client().create_bucket(Bucket=S3_BUCKET)
        yield moto.endpoint
    finally:
        moto.stop()


@pytest.fixture(scope="session")
def hive3_metastore(
    hive3_s3: S3Endpoint, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HiveMetastoreProcess]:
    """The real Hive Metastore 3.1.3 (catalogs, S3A) shared by the hive3 tests; 4.0.1 (no S3A)
    with LANCE_ADAPTER_HIVE3_METASTORE=4.0.1."""
    version, _ = hive3_release()
    metastore = metastore_process(version, tmp_path_factory.mktemp("hive3-metastore"), hive3_s3)
    metastore.start()
    yield metastore
    metastore.stop()


@pytest.fixture(scope="session")
def hive4_metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HiveMetastoreProcess]:
    """The real Hive Metastore 4.0.1 (catalogs, no S3A): the catalog-level tests run on it too."""
    metastore = metastore_process(HIVE4_VERSION, tmp_path_factory.mktemp("hive4-metastore"))
    metastore.start()
    yield metastore
    metastore.stop()
