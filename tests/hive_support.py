"""Test support for the Hive backends.

- `HiveMetastoreProcess`: a real Hive Metastore 2.3.10 (the jars shipped in the pyspark wheel,
  embedded Derby) run as a Java process on a free 127.0.0.1 port.
- `CatalogMetastoreServer`: an in-process Thrift server that speaks the HMS Thrift protocol
  (the generated `ThriftHiveMetastore.Processor`) and implements the catalog, database and
  table calls in memory. HMS 2.3 has no catalogs, so this protocol fixture is what the hive3
  catalog level is tested against.
- `metastore_client`: a raw Thrift client to check what the backends registered.

Fixtures: tests/conftest.py loads this module with `pytest_plugins` so the
session-scoped metastore is started once for all Hive test modules.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from copy import deepcopy
from pathlib import Path

import pytest
from hive_metastore import ThriftHiveMetastore
from hive_metastore.ttypes import (
    AlreadyExistsException,
    Catalog,
    Database,
    GetCatalogResponse,
    GetCatalogsResponse,
    InvalidObjectException,
    InvalidOperationException,
    MetaException,
    NoSuchObjectException,
    SerDeInfo,
    StorageDescriptor,
    Table,
)
from thrift.protocol import TBinaryProtocol
from thrift.server import TServer
from thrift.transport import TSocket, TTransport

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
_PARAMETER_CLAUSE = re.compile(r'hive_filter_field_params__(\w+) = "([^"]*)"')


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


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


def _hive_site(derby_dir: Path, warehouse: Path) -> str:
    properties = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={derby_dir};create=true",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": str(warehouse),
        # BoneCP (the default pool) is not among the pyspark jars; DBCP is.
        "datanucleus.connectionPoolingType": "DBCP",
        "hive.metastore.event.db.notification.api.auth": "false",
    }
    body = "".join(
        f"  <property><name>{key}</name><value>{value}</value></property>\n"
        for key, value in properties.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


class HiveMetastoreProcess:
    """A Hive Metastore 2.3 Java process with an embedded Derby database under `workdir`.

    `stop()` then `start()` restarts it on the same port with the same Derby database.
    """

    def __init__(self, workdir: Path, port: int | None = None):
        self.workdir = workdir
        self.port = port or free_port()
        self._process: subprocess.Popen | None = None
        conf_dir = workdir / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        (conf_dir / "hive-site.xml").write_text(
            _hive_site(workdir / "derby", workdir / "warehouse")
        )
        self._classpath = f"{conf_dir}{os.pathsep}{pyspark_jars()}/*"

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def start(self, timeout_seconds: float = START_TIMEOUT_SECONDS) -> None:
        log = open(self.workdir / "metastore.log", "ab")  # noqa: SIM115 - owned by the process
        self._process = subprocess.Popen(
            [java_executable(), *JAVA_FLAGS, "-cp", self._classpath, METASTORE_MAIN,
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
                with metastore_client(self.port, timeout_seconds=10) as client:
                    client.get_all_databases()
                return
            except Exception:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"metastore did not serve within {timeout_seconds}s")

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)
        self._process = None


# ---------------------------------------------------------------------------------------------
# The in-process Thrift catalog protocol fixture


def _split_database_name(name: str, default_catalog: str) -> tuple[str, str | None]:
    """HMS 3 spelling: "@catalog#database", "@catalog#" (all databases) or "database"."""
    if name.startswith("@") and "#" in name:
        catalog, _, database = name[1:].partition("#")
        return catalog.lower(), (database.lower() or None)
    return default_catalog, name.lower()


class InMemoryCatalogHandler:
    """HMS 3 catalog, database and table calls over dictionaries, behind the real processor."""

    DEFAULT_CATALOG = "hive"

    def __init__(self, warehouse: str, parameter_filters: bool = True):
        self.parameter_filters = parameter_filters
        self._lock = threading.Lock()
        self._catalogs: dict[str, Catalog] = {
            self.DEFAULT_CATALOG: Catalog(
                name=self.DEFAULT_CATALOG, description="Default catalog", locationUri=warehouse
            )
        }
        self._databases: dict[tuple[str, str], Database] = {
            (self.DEFAULT_CATALOG, "default"): Database(
                name="default", catalogName=self.DEFAULT_CATALOG, locationUri=warehouse,
                parameters={},
            )
        }
        self._tables: dict[tuple[str, str, str], Table] = {}

    # catalogs
    def get_catalogs(self) -> GetCatalogsResponse:
        with self._lock:
            return GetCatalogsResponse(names=sorted(self._catalogs))

    def get_catalog(self, request) -> GetCatalogResponse:
        with self._lock:
            catalog = self._catalogs.get(request.name.lower())
            if catalog is None:
                raise NoSuchObjectException(message=f"No catalog {request.name}")
            return GetCatalogResponse(catalog=deepcopy(catalog))

    def create_catalog(self, request) -> None:
        catalog = deepcopy(request.catalog)
        catalog.name = catalog.name.lower()
        if not catalog.locationUri:
            raise InvalidObjectException(message="catalog location must be set")
        with self._lock:
            if catalog.name in self._catalogs:
                raise AlreadyExistsException(message=f"Catalog {catalog.name} already exists")
            self._catalogs[catalog.name] = catalog

    def drop_catalog(self, request) -> None:
        name = request.name.lower()
        with self._lock:
            if name not in self._catalogs:
                raise NoSuchObjectException(message=f"No catalog {name}")
            if name == self.DEFAULT_CATALOG:
                raise MetaException(message="Cannot drop default catalog")
            if any(catalog == name for catalog, _ in self._databases):
                raise InvalidOperationException(message=f"Cannot drop catalog {name}: not empty")
            del self._catalogs[name]

    # databases
    def create_database(self, database: Database) -> None:
        database = deepcopy(database)
        database.name = database.name.lower()
        database.catalogName = (database.catalogName or self.DEFAULT_CATALOG).lower()
        key = (database.catalogName, database.name)
        with self._lock:
            if database.catalogName not in self._catalogs:
                raise InvalidObjectException(message=f"No such catalog {database.catalogName}")
            if key in self._databases:
                raise AlreadyExistsException(message=f"Database {database.name} already exists")
            self._databases[key] = database

    def get_database(self, name: str) -> Database:
        key = _split_database_name(name, self.DEFAULT_CATALOG)
        with self._lock:
            database = self._databases.get(key)  # type: ignore[arg-type]
            if database is None:
                raise NoSuchObjectException(message=f"database {name} not found")
            return deepcopy(database)

    def get_databases(self, pattern: str) -> list[str]:
        catalog, database = _split_database_name(pattern, self.DEFAULT_CATALOG)
        with self._lock:
            names = [name for cat, name in self._databases if cat == catalog]
        return sorted(names if database in (None, "*") else [n for n in names if n == database])

    def get_all_databases(self) -> list[str]:
        return self.get_databases(f"@{self.DEFAULT_CATALOG}#")

    def drop_database(self, name: str, deleteData: bool, cascade: bool) -> None:
        key = _split_database_name(name, self.DEFAULT_CATALOG)
        with self._lock:
            if key not in self._databases:
                raise NoSuchObjectException(message=f"database {name} not found")
            tables = [table for table in self._tables if table[:2] == key]
            if tables and not cascade:
                raise InvalidOperationException(message=f"Database {key[1]} is not empty.")
            for table in tables:
                del self._tables[table]
            del self._databases[key]  # type: ignore[arg-type]

    def alter_database(self, dbname: str, database: Database) -> None:
        key = _split_database_name(dbname, self.DEFAULT_CATALOG)
        with self._lock:
            if key not in self._databases:
                raise NoSuchObjectException(message=f"database {dbname} not found")
            self._databases[key] = deepcopy(database)  # type: ignore[index]

    # tables
    def create_table(self, table: Table) -> None:
        table = deepcopy(table)
        table.tableName = table.tableName.lower()
        table.dbName = table.dbName.lower()
        table.catName = (table.catName or self.DEFAULT_CATALOG).lower()
        key = (table.catName, table.dbName, table.tableName)
        with self._lock:
            if key[:2] not in self._databases:
                raise InvalidObjectException(message=f"database {table.dbName} not found")
            if key in self._tables:
                raise AlreadyExistsException(message=f"Table {table.tableName} already exists")
            self._tables[key] = table

    def get_table(self, dbname: str, tbl_name: str) -> Table:
        catalog, database = _split_database_name(dbname, self.DEFAULT_CATALOG)
        with self._lock:
            table = self._tables.get((catalog, database or "", tbl_name.lower()))
            if table is None:
                raise NoSuchObjectException(message=f"{dbname}.{tbl_name} table not found")
            return deepcopy(table)

    def get_all_tables(self, db_name: str) -> list[str]:
        key = _split_database_name(db_name, self.DEFAULT_CATALOG)
        with self._lock:
            return sorted(table[2] for table in self._tables if table[:2] == key)

    def get_table_objects_by_name(self, dbname: str, tbl_names: list[str]) -> list[Table]:
        catalog, database = _split_database_name(dbname, self.DEFAULT_CATALOG)
        with self._lock:
            keys = [(catalog, database, name.lower()) for name in tbl_names]
            return [deepcopy(self._tables[key]) for key in keys if key in self._tables]

    def get_tables_by_type(self, db_name: str, pattern: str, tableType: str) -> list[str]:
        """Enough for the table pattern "*"."""
        if pattern != "*":
            raise MetaException(message="only the table pattern '*' is implemented here")
        key = _split_database_name(db_name, self.DEFAULT_CATALOG)
        with self._lock:
            return sorted(
                name for (cat, db, name), table in self._tables.items()
                if (cat, db) == key and table.tableType == tableType
            )

    def get_table_names_by_filter(self, dbname: str, filter: str, max_tables: int) -> list[str]:
        """Only what HMS offers for parameters: `hive_filter_field_params__KEY = "VALUE"`
        clauses joined by `and`."""
        if not self.parameter_filters:
            raise MetaException(message="filtering on table parameters is not supported")
        wanted = dict(_PARAMETER_CLAUSE.fullmatch(clause.strip()).groups()
                      for clause in filter.split(" and "))
        catalog, database = _split_database_name(dbname, self.DEFAULT_CATALOG)
        with self._lock:
            names = sorted(
                key[2] for key, table in self._tables.items()
                if key[:2] == (catalog, database)
                and all((table.parameters or {}).get(k) == v for k, v in wanted.items())
            )
        return names if max_tables < 0 else names[:max_tables]

    def drop_table(self, dbname: str, name: str, deleteData: bool) -> None:
        catalog, database = _split_database_name(dbname, self.DEFAULT_CATALOG)
        with self._lock:
            if self._tables.pop((catalog, database, name.lower()), None) is None:
                raise NoSuchObjectException(message=f"{dbname}.{name} table not found")

    def alter_table(self, dbname: str, tbl_name: str, new_tbl: Table) -> None:
        catalog, database = _split_database_name(dbname, self.DEFAULT_CATALOG)
        key = (catalog, database, tbl_name.lower())
        with self._lock:
            if key not in self._tables:
                raise InvalidOperationException(message=f"{dbname}.{tbl_name} doesn't exist")
            self._tables[key] = deepcopy(new_tbl)


class CatalogMetastoreServer:
    """`InMemoryCatalogHandler` served over Thrift on a free 127.0.0.1 port, in a thread."""

    def __init__(self, warehouse: str, parameter_filters: bool = True):
        self.handler = InMemoryCatalogHandler(warehouse, parameter_filters)
        self._server_socket = TSocket.TServerSocket(host="127.0.0.1", port=0)
        self._server = TServer.TThreadedServer(
            ThriftHiveMetastore.Processor(self.handler),
            self._server_socket,
            TTransport.TBufferedTransportFactory(),
            TBinaryProtocol.TBinaryProtocolFactory(),
        )
        self._stopped = threading.Event()
        self.port = 0

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._server_socket.listen()
        self.port = self._server_socket.handle.getsockname()[1]
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                client = self._server_socket.accept()
            except OSError:
                return
            threading.Thread(target=self._server.handle, args=(client,), daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()
        self._server_socket.close()


# ---------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="session")
def hive_metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HiveMetastoreProcess]:
    """The real Hive Metastore 2.3.10 shared by the Hive tests."""
    metastore = HiveMetastoreProcess(tmp_path_factory.mktemp("hive-metastore"))
    metastore.start()
    yield metastore
    metastore.stop()


@pytest.fixture(scope="session")
def catalog_metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CatalogMetastoreServer]:
    """The in-process Thrift catalog protocol fixture (HMS 3 catalog calls)."""
    server = CatalogMetastoreServer(str(tmp_path_factory.mktemp("catalog-warehouse")))
    server.start()
    yield server
    server.stop()
