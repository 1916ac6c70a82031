"""A fault injector for the hive3 tests: an in-process Thrift server speaking the HMS protocol
(the generated `ThriftHiveMetastore.Processor`) over in-memory catalogs, databases and tables.

The hive3 catalog level itself is tested against the real Hive Metastore 3.1.3
(`tests/support/hive_metastore_real.py`). This stand-in is kept only for what the real server
cannot be made to do: answer without parameter filters (`parameter_filters=False`, as some
metastores behind other databases do), which `tests/test_hive_catalogs.py` uses. It is a
simplification, not a model of HMS 3: for example it gives a new catalog no `default` database.
The `catalog_metastore` fixture serves it for the whole session.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from copy import deepcopy

import pytest
from hive_metastore import ThriftHiveMetastore
from hive_metastore.ttypes import (
    AlreadyExistsException,
    Catalog,
    Database,
    GetCatalogResponse,
    GetCatalogsResponse,
    GetTableRequest,
    GetTableResult,
    GetTablesRequest,
    GetTablesResult,
    InvalidObjectException,
    InvalidOperationException,
    MetaException,
    NoSuchObjectException,
    Table,
)
from thrift.protocol import TBinaryProtocol
from thrift.server import TServer
from thrift.transport import TSocket, TTransport

_PARAMETER_CLAUSE = re.compile(r'hive_filter_field_params__(\w+) = "([^"]*)"')


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

    def get_table_req(self, req: GetTableRequest) -> GetTableResult:
        """The request form HMS 2.3 to 4 all answer (HMS 4 has no `get_table`)."""
        key = ((req.catName or self.DEFAULT_CATALOG).lower(), req.dbName.lower(),
               req.tblName.lower())
        with self._lock:
            table = self._tables.get(key)
            if table is None:
                raise NoSuchObjectException(message=f"{req.dbName}.{req.tblName} table not found")
            return GetTableResult(table=deepcopy(table))

    def get_all_tables(self, db_name: str) -> list[str]:
        key = _split_database_name(db_name, self.DEFAULT_CATALOG)
        with self._lock:
            return sorted(table[2] for table in self._tables if table[:2] == key)

    def get_table_objects_by_name_req(self, req: GetTablesRequest) -> GetTablesResult:
        catalog = (req.catName or self.DEFAULT_CATALOG).lower()
        with self._lock:
            keys = [(catalog, req.dbName.lower(), name.lower()) for name in req.tblNames]
            return GetTablesResult(
                tables=[deepcopy(self._tables[key]) for key in keys if key in self._tables]
            )

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


@pytest.fixture(scope="session")
def catalog_metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CatalogMetastoreServer]:
    """The in-process Thrift catalog protocol fixture (HMS 3 catalog calls)."""
    server = CatalogMetastoreServer(str(tmp_path_factory.mktemp("catalog-warehouse")))
    server.start()
    yield server
    server.stop()
