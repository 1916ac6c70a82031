"""The real Hive Metastore for the Hive backend tests.

- `HiveMetastoreProcess`: a real Hive Metastore 2.3.10 (the jars shipped in the pyspark wheel,
  embedded Derby) run as a Java process on a free 127.0.0.1 port; the `hive_metastore` session
  fixture starts one for the whole run.
- `metastore_client`: a raw Thrift client to check what the backends registered.

HMS 2.3 has no catalogs: the hive3 catalog level runs against the real HMS 3.1.3 and 4.0.1 of
`tests/support/hive_metastore_real.py` (which reuses `HiveMetastoreProcess` with their jars).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hive_metastore import ThriftHiveMetastore
from hive_metastore.ttypes import GetTableRequest, SerDeInfo, StorageDescriptor, Table
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from tests.support.common import free_port, stop_process
from tests.support.vending import BUCKET as VENDING_BUCKET

JAVA_FLAGS = [
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
    *(
        flag
        for package in ("java.lang", "java.net", "java.util", "java.nio", "sun.nio.ch")
        for flag in ("--add-opens", f"java.base/{package}=ALL-UNNAMED")
    ),
]
METASTORE_MAIN = "org.apache.hadoop.hive.metastore.HiveMetaStore"
START_TIMEOUT_SECONDS = 180


def pyspark_jars() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    if not any(jars.glob("hive-metastore-2.3*.jar")):
        raise RuntimeError(f"no Hive Metastore 2.3 jars in {jars}")
    return jars


def java_executable() -> str:
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("java not found: install openjdk-17-jre-headless (./run test does)")
    return java


@contextmanager
def metastore_client(port: int, timeout_seconds: float = 30.0) -> Iterator:
    """A raw HMS Thrift client, to inspect registrations independently of the backend."""
    sock = TSocket.TSocket("127.0.0.1", port)
    sock.setTimeout(timeout_seconds * 1000)
    transport = TTransport.TBufferedTransport(sock)
    client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))
    transport.open()
    try:
        yield client
    finally:
        transport.close()


def stored_table(client: Any, database: str, name: str, catalog: str | None = None) -> Table:
    """The metastore's table object, asked as every HMS from 2.3 to 4 answers (HMS 4 has no
    `get_table`)."""
    request = GetTableRequest(dbName=database, tblName=name, catName=catalog)
    return client.get_table_req(request).table


def create_raw_table(port: int, database: str, name: str, table_type: str,
                     parameters: dict[str, str], location: Path) -> None:
    """A table registered by some other Hive client, not by the backend. The metastore
    creates the `location` directory."""
    table = Table(
        tableName=name,
        dbName=database,
        owner="someone",
        sd=StorageDescriptor(cols=[], location=str(location), serdeInfo=SerDeInfo(),
                             parameters={}),
        partitionKeys=[],
        parameters=parameters,
        tableType=table_type,
    )
    with metastore_client(port) as client:
        client.create_table(table)


@contextmanager
def _quiet_thrift_socket_log() -> Iterator[None]:
    """Thrift logs every refused connection; while polling a starting server those are noise."""
    socket_log = logging.getLogger("thrift.transport.TSocket")
    level = socket_log.level
    socket_log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        socket_log.setLevel(level)


def _s3_as_local(buckets: tuple[str, ...], directory: Path) -> dict[str, str]:
    """Let HMS take `s3://<bucket>/...` locations of `buckets`: pyspark ships no S3A jars
    (`No FileSystem for scheme "s3"`; with `s3a://`, `S3AFileSystem not found`). Hadoop's own
    ViewFileSystemOverloadScheme maps each bucket onto a local directory, a stand-in for S3A
    where HMS only makes and checks the locations' directories; the data goes to S3 (Lance)."""
    if not buckets:
        return {}
    for bucket in buckets:
        (directory / bucket).mkdir(parents=True, exist_ok=True)
    mounts = {f"fs.viewfs.mounttable.{bucket}.linkFallback": f"file://{directory / bucket}"
              for bucket in buckets}
    return {"fs.s3.impl": "org.apache.hadoop.fs.viewfs.ViewFileSystemOverloadScheme",
            "fs.viewfs.overload.scheme.target.file.impl": "org.apache.hadoop.fs.LocalFileSystem",
            **mounts}


def _hive_site(derby_dir: Path, warehouse: Path, extra: dict[str, str]) -> str:
    return configuration_xml({
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={derby_dir};create=true",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": str(warehouse),
        # BoneCP (the default pool) is not among the pyspark jars; DBCP is.
        "datanucleus.connectionPoolingType": "DBCP",
        "hive.metastore.event.db.notification.api.auth": "false",
        **extra,
    })


def configuration_xml(properties: dict[str, str]) -> str:
    """A Hadoop configuration file (hive-site.xml, core-site.xml) of `properties`."""
    body = "".join(
        f"  <property><name>{key}</name><value>{value}</value></property>\n"
        for key, value in properties.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


class HiveMetastoreProcess:
    """A Hive Metastore Java process (2.3.10 unless given other `jars`) with an embedded Derby
    database under `workdir`.

    `stop()` then `start()` restarts it on the same port with the same Derby database.
    `s3_buckets`: buckets whose `s3://` locations it takes (see `_s3_as_local`).
    """

    def __init__(self, workdir: Path, port: int | None = None,
                 s3_buckets: tuple[str, ...] = (), jars: str | None = None,
                 site: dict[str, str] | None = None, java_flags: tuple[str, ...] = (),
                 core_site: dict[str, str] | None = None):
        """`jars`: the metastore's class path (default: the pyspark wheel's HMS 2.3.10);
        `site`: further hive-site.xml properties; `core_site`: Hadoop's core-site.xml (e.g.
        Kerberos, `tests/test_hive_kerberos.py`), whose metastore no plain client can probe:
        its start is awaited by its port."""
        self.workdir = workdir
        self.port = port or free_port()
        self._process: subprocess.Popen | None = None
        self._java_flags = java_flags
        self._secured = core_site is not None
        conf_dir = workdir / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        if core_site is not None:
            (conf_dir / "core-site.xml").write_text(configuration_xml(core_site))
        extra = {**_s3_as_local(s3_buckets, workdir / "s3"), **(site or {})}
        (conf_dir / "hive-site.xml").write_text(
            _hive_site(workdir / "derby", workdir / "warehouse", extra)
        )
        self._classpath = f"{conf_dir}{os.pathsep}{jars or f'{pyspark_jars()}/*'}"

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def start(self, timeout_seconds: float = START_TIMEOUT_SECONDS) -> None:
        log = open(self.workdir / "metastore.log", "ab")  # noqa: SIM115 - owned by the process
        self._process = subprocess.Popen(
            [java_executable(), *JAVA_FLAGS, *self._java_flags, "-cp", self._classpath,
             METASTORE_MAIN,
             "-p", str(self.port)],
            cwd=self.workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        self._wait_until_serving(timeout_seconds)

    def _wait_until_serving(self, timeout_seconds: float) -> None:
        with _quiet_thrift_socket_log():
            self._poll_until_serving(timeout_seconds)

    def _poll_until_serving(self, timeout_seconds: float) -> None:
        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"metastore exited early; see {self.workdir}/metastore.log")
            try:
                if self._secured:  # it listens once started
                    socket.create_connection(("127.0.0.1", self.port), timeout=5).close()
                    return
                with metastore_client(self.port, timeout_seconds=10) as client:
                    client.get_all_databases()
                return
            except Exception:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"metastore did not serve within {timeout_seconds}s")

    def stop(self) -> None:
        stop_process(self._process)
        self._process = None


@pytest.fixture(scope="session")
def hive_metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HiveMetastoreProcess]:
    """The real Hive Metastore 2.3.10 shared by the Hive tests."""
    metastore = HiveMetastoreProcess(tmp_path_factory.mktemp("hive-metastore"),
                                     s3_buckets=(VENDING_BUCKET,))
    metastore.start()
    yield metastore
    metastore.stop()
