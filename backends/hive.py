"""Lance namespaces kept in a Hive Metastore (HMS): `hive2` (database.table) and `hive3`
(catalog.database.table).

A Lance table is an HMS `EXTERNAL_TABLE` whose parameters hold `table_type=lance`; its storage
descriptor location is the Lance table root. Namespace properties live in the Database object
(`database.description`, `database.location-uri`, `database.owner`, `database.owner-type` map
to the Database fields, every other key to its parameters) and, for hive3, in the Catalog
object (`description`, `catalog.location.uri`).

Hive names are case-insensitive: every name is lowercased before it reaches the metastore, and
names Hive would reject (anything but letters, digits and `_`; databases and catalogs longer
than 128 characters) are refused with InvalidInputError before any metastore call.
"""

from __future__ import annotations

import getpass
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlparse

from hive_metastore import ThriftHiveMetastore
from hive_metastore.ttypes import (
    AlreadyExistsException,
    Catalog,
    CreateCatalogRequest,
    Database,
    DropCatalogRequest,
    GetCatalogRequest,
    InvalidObjectException,
    InvalidOperationException,
    MetaException,
    NoSuchObjectException,
    PrincipalType,
    SerDeInfo,
    StorageDescriptor,
    Table,
)
from lance_namespace import (
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableRequest,
    DeregisterTableResponse,
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    DescribeTableRequest,
    DescribeTableResponse,
    DropNamespaceRequest,
    DropNamespaceResponse,
    InternalError,
    InvalidInputError,
    LanceNamespaceError,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceAlreadyExistsError,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    TableExistsRequest,
    TableExistsResponse,
    TableNotFoundError,
    UnsupportedOperationError,
)
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException
from thrift.transport import TSocket, TTransport
from thrift.transport.TTransport import TTransportException

from backends.base import MetadataNamespace
from backends.catalog_operations import PropertyChanges, page_of_table_ids
from backends.conventions import (
    EXTERNAL_TABLE,
    LANCE_TABLE_TYPE,
    TABLE_TYPE_KEY,
    has_lance_table_type,
    join_location,
    open_lance_table,
    require_lance_table,
    storage_root,
)
from backends.extensions import (
    AlterNamespaceRequest,
    AlterNamespaceResponse,
    AlterTableRequest,
    AlterTableResponse,
)
from backends.modes import CreateMode, DropBehavior, DropMode, RegisterMode, parse_mode
from backends.names import validate_identifier
from backends.paging import paginate
from backends.properties import (
    ConfigurationError,
    float_property,
    int_property,
    storage_options,
)

T = TypeVar("T")

DEFAULT_URI = "thrift://localhost:9083"
DEFAULT_CATALOG = "hive"
DEFAULT_DATABASE = "default"
IDENTIFIER_DELIMITER = "$"
MAX_DATABASE_NAME_LENGTH = 128  # DBS.NAME / CTLGS.NAME are VARCHAR(128) in the HMS schema
MAX_TABLE_NAME_LENGTH = 256  # TBLS.TBL_NAME is VARCHAR(256)
TABLE_BATCH_SIZE = 100
# Names of tables by parameter value, answered by the metastore without loading table objects.
LANCE_PARAMETER_FILTER = f'hive_filter_field_params__table_type = "{LANCE_TABLE_TYPE}"'

DESCRIPTION_KEY = "database.description"
LOCATION_KEY = "database.location-uri"
OWNER_KEY = "database.owner"
OWNER_TYPE_KEY = "database.owner-type"
# Namespace properties kept in Database fields, which always have a value.
DATABASE_FIELD_KEYS = frozenset({DESCRIPTION_KEY, LOCATION_KEY, OWNER_KEY, OWNER_TYPE_KEY})
CATALOG_DESCRIPTION_KEY = "description"
CATALOG_LOCATION_KEY = "catalog.location.uri"
# Table parameters the backend owns; request properties cannot override them.
RESERVED_TABLE_PARAMETERS = frozenset({TABLE_TYPE_KEY, "EXTERNAL"})

_HIVE_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


# ---------------------------------------------------------------------------------------------
# Error translation: the one place where metastore and transport failures become Lance errors.


def translate_hms_error(error: Exception, subject: str) -> LanceNamespaceError:
    """The Lance error for a failed metastore call about a `subject` ("namespace" or "table")."""
    if isinstance(error, LanceNamespaceError):
        return error
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    if isinstance(error, TTransportException | OSError | EOFError):
        return ServiceUnavailableError(f"Hive Metastore is unavailable: {message}")
    if isinstance(error, NoSuchObjectException):
        if subject == "table":
            return TableNotFoundError(f"table not found: {message}")
        return NamespaceNotFoundError(f"namespace not found: {message}")
    if isinstance(error, AlreadyExistsException):
        if subject == "table":
            return TableAlreadyExistsError(f"table already exists: {message}")
        return NamespaceAlreadyExistsError(f"namespace already exists: {message}")
    if isinstance(error, InvalidOperationException) and "not empty" in message:
        return NamespaceNotEmptyError(message)
    if isinstance(error, InvalidObjectException | InvalidOperationException):
        return InvalidInputError(f"Hive Metastore rejected the request: {message}")
    if isinstance(error, TApplicationException):
        if error.type == TApplicationException.UNKNOWN_METHOD:
            return UnsupportedOperationError(f"the metastore does not support this: {message}")
        return InternalError(f"Hive Metastore protocol error: {message}")
    if isinstance(error, MetaException):
        return InternalError(f"Hive Metastore error: {message}")
    return InternalError(f"unexpected Hive Metastore failure: {message}")


# Exceptions the metastore answers with; after them the connection is still usable.
HMS_ANSWERS = (
    NoSuchObjectException,
    AlreadyExistsException,
    InvalidObjectException,
    InvalidOperationException,
    MetaException,
    TApplicationException,
)


def _is_transport_failure(error: Exception) -> bool:
    return isinstance(error, TTransportException | OSError | EOFError)


def _is_timeout(error: Exception) -> bool:
    if isinstance(error, TimeoutError):
        return True
    if isinstance(error, TTransportException):
        return error.type == TTransportException.TIMED_OUT or isinstance(
            getattr(error, "inner", None), TimeoutError
        )
    return False


# ---------------------------------------------------------------------------------------------
# Connections


@dataclass(frozen=True)
class MetastoreAddress:
    host: str
    port: int

    @classmethod
    def parse(cls, uri: str) -> MetastoreAddress:
        parsed = urlparse(uri.strip())
        if parsed.scheme != "thrift" or not parsed.hostname:
            raise ConfigurationError(f"metastore uri must be thrift://host:port, got {uri!r}")
        try:
            port = parsed.port or 9083
        except ValueError:
            raise ConfigurationError(f"metastore uri has a bad port: {uri!r}") from None
        return cls(parsed.hostname, port)


class MetastoreConnection:
    """One open Thrift connection to a metastore."""

    def __init__(self, address: MetastoreAddress, connect_timeout: float, read_timeout: float):
        self.address = address
        socket = TSocket.TSocket(address.host, address.port)
        socket.setTimeout(connect_timeout * 1000)
        self._transport = TTransport.TBufferedTransport(socket)
        # The accelerated (C) protocol of thrift 0.13 breaks on Python >= 3.10 (PY_SSIZE_T_CLEAN).
        protocol = TBinaryProtocol.TBinaryProtocol(self._transport)
        self.client = ThriftHiveMetastore.Client(protocol)
        self._transport.open()
        socket.setTimeout(read_timeout * 1000)

    def close(self) -> None:
        # Closing a broken socket may fail; the connection is discarded either way.
        with suppress(Exception):
            self._transport.close()


class MetastoreClientPool:
    """At most `size` connections, tried against each address in order (failover).

    A call that fails on a transport error closes its connection and every idle one (they
    were opened against the same, now gone, metastore process) and is retried once on a fresh
    connection, so the pool recovers by itself after a metastore restart.
    """

    def __init__(
        self,
        addresses: Sequence[MetastoreAddress],
        size: int,
        connect_timeout: float,
        read_timeout: float,
    ):
        self._addresses = list(addresses)
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._slots = threading.BoundedSemaphore(size)
        self._idle: queue.LifoQueue[MetastoreConnection] = queue.LifoQueue()
        self._wait_timeout = connect_timeout * len(self._addresses) + read_timeout
        self._preferred = 0  # index of the address that last accepted a connection

    def run(self, operation: Callable[[ThriftHiveMetastore.Client], T], subject: str) -> T:
        with self._slot():
            try:
                return self._run_with_retry(operation)
            except Exception as error:
                raise translate_hms_error(error, subject) from error

    def close(self) -> None:
        self._discard_idle()

    def _run_with_retry(self, operation: Callable[[ThriftHiveMetastore.Client], T]) -> T:
        connection, reused = self._checkout()
        try:
            return self._run_once(connection, operation)
        except Exception as error:
            if not _is_transport_failure(error):
                raise
            self._discard_idle()  # opened against the same, now gone, metastore process
            # A timed-out metastore is not retried: that would double the caller's wait.
            if not reused or _is_timeout(error):
                raise
        return self._run_once(self._open(), operation)

    def _run_once(
        self, connection: MetastoreConnection, operation: Callable[[ThriftHiveMetastore.Client], T]
    ) -> T:
        """Run `operation`; the connection goes back to the pool only if it is still in step
        (a result or an answer from the metastore), otherwise it is closed."""
        try:
            result = operation(connection.client)
        except HMS_ANSWERS:
            self._idle.put(connection)
            raise
        except BaseException:
            connection.close()
            raise
        self._idle.put(connection)
        return result

    @contextmanager
    def _slot(self) -> Iterator[None]:
        if not self._slots.acquire(timeout=self._wait_timeout):
            raise ServiceUnavailableError("every Hive Metastore client is busy; try again later")
        try:
            yield
        finally:
            self._slots.release()

    def _checkout(self) -> tuple[MetastoreConnection, bool]:
        try:
            return self._idle.get_nowait(), True
        except queue.Empty:
            return self._open(), False

    def _open(self) -> MetastoreConnection:
        """A new connection, to the address that last worked first, then the others in order."""
        failures = []
        start = self._preferred
        for offset in range(len(self._addresses)):
            index = (start + offset) % len(self._addresses)
            address = self._addresses[index]
            try:
                connection = MetastoreConnection(
                    address, self._connect_timeout, self._read_timeout
                )
            except Exception as error:
                failures.append(f"{address.host}:{address.port} ({error})")
                continue
            self._preferred = index
            return connection
        raise ServiceUnavailableError("cannot reach the Hive Metastore at " + ", ".join(failures))

    def _discard_idle(self) -> None:
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


# ---------------------------------------------------------------------------------------------
# Names, modes and locations


def hive_name(name: str, kind: str, max_length: int) -> str:
    """`name` lowercased, or InvalidInputError when Hive would reject it."""
    lowered = name.lower()
    if not set(lowered) <= _HIVE_NAME_CHARACTERS:
        raise InvalidInputError(
            f"{kind} name {name!r} is not a valid Hive name (use letters, digits and '_')"
        )
    if len(lowered) > max_length:
        raise InvalidInputError(f"{kind} name is longer than {max_length} characters")
    return lowered


def split_identifier(parts: Sequence[str] | None, kind: str) -> list[str]:
    """Validate a list identifier, splitting `$`-joined string identifiers into their names."""
    names: list[str] = []
    for part in validate_identifier(parts, kind):
        names.extend(validate_identifier(part.split(IDENTIFIER_DELIMITER), kind))
    return names


def absolute_location(location: str | None) -> str | None:
    """`location` if it is a URI or an absolute path: the metastore would resolve a relative
    path against its own working directory, not the adapter's."""
    if location and "://" not in location and not location.startswith(("/", "file:")):
        raise InvalidInputError(f"table location must be absolute or a URI, got {location!r}")
    return location


def plain_location(location: str | None) -> str | None:
    """HMS qualifies local paths as `file:/path`; hand Lance a plain path instead."""
    if location and location.startswith("file:"):
        path = location[len("file:"):]
        if path.startswith("//"):
            path = path[2:] if path.startswith("///") else path[path.find("/", 2):]
        return "/" + path.lstrip("/")
    return location


def is_lance_table(table: Table) -> bool:
    return (table.tableType or "").upper() == EXTERNAL_TABLE and has_lance_table_type(
        table.parameters
    )


def owner_type(value: str) -> int:
    principal = PrincipalType._NAMES_TO_VALUES.get(value.strip().upper())
    if principal is None:
        raise InvalidInputError(f"{OWNER_TYPE_KEY} must be USER, ROLE or GROUP, got {value!r}")
    return principal


def database_properties(database: Database) -> dict[str, str]:
    properties = dict(database.parameters or {})
    if database.description is not None:
        properties[DESCRIPTION_KEY] = database.description
    if database.locationUri is not None:
        properties[LOCATION_KEY] = plain_location(database.locationUri) or ""
    if database.ownerName is not None:
        properties[OWNER_KEY] = database.ownerName
    if database.ownerType is not None:
        properties[OWNER_TYPE_KEY] = PrincipalType._VALUES_TO_NAMES[database.ownerType]
    return properties


@dataclass(frozen=True)
class DatabaseRef:
    """A database, with its catalog when the metastore has catalogs."""

    catalog: str | None
    name: str

    @property
    def thrift_name(self) -> str:
        # HMS 3 addresses a database of a given catalog as "@catalog#database".
        return f"@{self.catalog}#{self.name}" if self.catalog else self.name


# ---------------------------------------------------------------------------------------------
# The namespaces


class _HiveNamespace(MetadataNamespace):
    """Shared behaviour; subclasses say whether a catalog level sits above the databases."""

    catalog_level: bool = False

    def __init__(self, **properties: str):
        uris = [uri for uri in str(properties.get("uri") or DEFAULT_URI).split(",") if uri.strip()]
        if not uris:
            raise ConfigurationError("property 'uri' must name at least one metastore")
        self._uri = ",".join(uri.strip() for uri in uris)
        addresses = [MetastoreAddress.parse(uri) for uri in uris]
        pool_size = int_property(properties, "client.pool-size", 3)
        connect_timeout = float_property(properties, "client.connect-timeout", 10.0)
        read_timeout = float_property(properties, "client.read-timeout", 60.0)
        if pool_size < 1:
            raise ConfigurationError("property 'client.pool-size' must be at least 1")
        if connect_timeout <= 0 or read_timeout <= 0:
            raise ConfigurationError("client timeouts must be positive numbers of seconds")
        self._root = storage_root(properties.get("root"))
        self._storage_options = storage_options(properties)
        self._owner = str(properties.get("owner") or _current_user())
        self._pool = MetastoreClientPool(addresses, pool_size, connect_timeout, read_timeout)
        self._catalogs_supported: bool | None = None

    def storage_root(self) -> str:
        return self._root

    def namespace_id(self) -> str:
        return f"{type(self).__name__} {{ uri: '{self._uri}', root: '{self._root}' }}"

    def close(self) -> None:
        self._pool.close()

    # -- namespaces --------------------------------------------------------------------------

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        parent = self._namespace_path(request.id, allow_root=True)
        names = self._child_namespaces(parent)
        page, token = paginate(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        path = self._namespace_path(request.id, allow_root=True)
        if not path:  # the root namespace (the metastore) always exists and has no properties
            return DescribeNamespaceResponse(properties={})
        if self._is_catalog_path(path):
            return DescribeNamespaceResponse(properties=self._catalog_properties(path[0]))
        database = self._get_database(self._database_ref(path))
        return DescribeNamespaceResponse(properties=database_properties(database))

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        path = self._namespace_path(request.id, allow_root=True)
        if not path:
            return NamespaceExistsResponse()
        if self._is_catalog_path(path):
            self._require_catalog(path[0])
        else:
            self._get_database(self._database_ref(path))
        return NamespaceExistsResponse()

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        path = self._namespace_path(request.id)
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        properties = dict(request.properties or {})
        if self._is_catalog_path(path):
            self._create_catalog(path[0], mode, properties)
            return CreateNamespaceResponse(properties=self._catalog_properties(path[0]))
        ref = self._database_ref(path)
        self._create_database(ref, mode, properties)
        return CreateNamespaceResponse(properties=database_properties(self._get_database(ref)))

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        path = self._namespace_path(request.id)
        mode = parse_mode(request.mode, DropMode, DropMode.FAIL)
        behavior = parse_mode(request.behavior, DropBehavior, DropBehavior.RESTRICT, "behavior")
        try:
            if self._is_catalog_path(path):
                self._drop_catalog(path[0], cascade=behavior == "cascade")
            else:
                self._drop_database(self._database_ref(path), cascade=behavior == "cascade")
        except NamespaceNotFoundError:
            if mode == "skip":
                return DropNamespaceResponse()
            raise
        return DropNamespaceResponse()

    # -- tables ------------------------------------------------------------------------------

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        path = self._namespace_path(request.id)
        if self._is_catalog_path(path):
            raise InvalidInputError("tables live in databases: name a catalog and a database")
        ref = self._database_ref(path)
        self._get_database(ref)
        names = self._lance_table_names(ref, request.page_token)
        page, token = paginate(names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        ref, name = self._table_path(request.id)
        self._get_lance_table(ref, name)
        return TableExistsResponse()

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        ref, name = self._table_path(request.id)
        table = self._get_lance_table(ref, name)
        location = plain_location(table.sd.location if table.sd else None)
        return DescribeTableResponse(
            location=location,
            table_uri=location if request.with_table_uri else None,
            storage_options=dict(self._storage_options),
            properties=dict(table.parameters or {}),
        )

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        ref, name = self._table_path(request.id)
        location = absolute_location(request.location) or self._default_table_location(ref, name)
        table = self._lance_table(ref, name, location, request.properties)
        self._get_database(ref)
        self._call(lambda client: client.create_table(table), "table")
        return DeclareTableResponse(
            location=location,
            storage_options=dict(self._storage_options),
            properties=dict(table.parameters),
        )

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        ref, name = self._table_path(request.id)
        mode = parse_mode(request.mode, RegisterMode, RegisterMode.CREATE)
        if not request.location:
            raise InvalidInputError("RegisterTable needs the location of an existing Lance table")
        absolute_location(request.location)
        require_lance_table(request.location, self._storage_options)
        table = self._lance_table(ref, name, request.location, request.properties)
        self._get_database(ref)
        if mode == "overwrite" and self._table_or_none(ref, name) is not None:
            self._get_lance_table(ref, name)  # never replace another kind of Hive table
            self._call(lambda client: client.alter_table(ref.thrift_name, name, table), "table")
        else:
            self._call(lambda client: client.create_table(table), "table")
        return RegisterTableResponse(location=request.location, properties=dict(table.parameters))

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        ref, name = self._table_path(request.id)
        table = self._get_lance_table(ref, name)
        self._call(lambda client: client.drop_table(ref.thrift_name, name, False), "table")
        return DeregisterTableResponse(
            id=list(request.id or []),
            location=plain_location(table.sd.location if table.sd else None),
            properties=dict(table.parameters or {}),
        )

    # -- catalog-level operations ------------------------------------------------------------

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        ref, name = self._table_path(request.id)
        target_ref = ref
        if request.new_namespace_id is not None:
            target_ref = self._database_ref(self._database_path(request.new_namespace_id))
        if not request.new_table_name:
            raise InvalidInputError("RenameTable needs new_table_name")
        target_name = hive_name(request.new_table_name, "table", MAX_TABLE_NAME_LENGTH)
        if target_ref.catalog != ref.catalog:
            raise InvalidInputError("Hive cannot move a table to another catalog")
        table = self._get_lance_table(ref, name)
        self._get_database(target_ref)
        if self._table_or_none(target_ref, target_name) is not None:
            raise TableAlreadyExistsError(f"table {target_ref.name}.{target_name} already exists")
        table.dbName, table.tableName = target_ref.name, target_name
        # The table is EXTERNAL (EXTERNAL=TRUE), so the metastore keeps its location as it is.
        self._call(lambda client: client.alter_table(ref.thrift_name, name, table), "table")
        return RenameTableResponse()

    def alter_namespace(self, request: AlterNamespaceRequest) -> AlterNamespaceResponse:
        path = self._namespace_path(request.id, allow_root=True)
        if not path or self._is_catalog_path(path):
            raise InvalidInputError("only a database's properties can be altered here")
        changes = PropertyChanges.of(request.set_properties, request.unset_properties)
        fixed = sorted(changes.removals & DATABASE_FIELD_KEYS)
        if fixed:
            raise InvalidInputError(
                f"{', '.join(fixed)} are fields of the Hive database and cannot be unset"
            )
        ref = self._database_ref(path)
        before = self._get_database(ref)
        wanted = changes.applied_to(database_properties(before))
        altered = self._database_object(ref, dict(wanted))
        altered.createTime = before.createTime
        self._call(lambda client: client.alter_database(ref.thrift_name, altered), "namespace")
        after = database_properties(self._get_database(ref))
        ignored = self._ignored_changes(changes, database_properties(altered), after)
        if ignored:
            self._call(lambda client: client.alter_database(ref.thrift_name, before), "namespace")
            raise InvalidInputError(
                f"this metastore cannot change {', '.join(ignored)}; nothing was changed"
            )
        return AlterNamespaceResponse(properties=after)

    def alter_table(self, request: AlterTableRequest) -> AlterTableResponse:
        ref, name = self._table_path(request.id)
        changes = PropertyChanges.of(
            request.set_properties, request.unset_properties, RESERVED_TABLE_PARAMETERS
        )
        table = self._get_lance_table(ref, name)
        table.parameters = changes.applied_to(table.parameters)
        self._call(lambda client: client.alter_table(ref.thrift_name, name, table), "table")
        return AlterTableResponse(properties=dict(self._get_lance_table(ref, name).parameters))

    def list_all_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        page, token = page_of_table_ids(
            self._all_database_paths(),
            lambda path: self._listed_tables(path, request.include_declared),
            request.page_token,
            request.limit,
        )
        return ListTablesResponse(tables=page, page_token=token)

    def _database_path(self, parts: Sequence[str] | None) -> list[str]:
        path = self._namespace_path(parts)
        if len(path) != self._namespace_depth:
            raise InvalidInputError(f"{IDENTIFIER_DELIMITER.join(path)!r} does not name a database")
        return path

    @staticmethod
    def _ignored_changes(
        changes: PropertyChanges, sent: Mapping[str, str], after: Mapping[str, str]
    ) -> list[str]:
        """The requested changes the metastore did not make (HMS 2.3 ignores a new database
        description or location)."""
        ignored = [key for key in changes.updates if after.get(key) != sent.get(key)]
        return sorted(ignored + [key for key in changes.removals if key in after])

    def _all_database_paths(self) -> list[list[str]]:
        if not self.catalog_level:
            return [[name] for name in self._child_namespaces([])]
        return [
            [catalog, database]
            for catalog in self._catalog_names()
            for database in self._child_namespaces([catalog])
        ]

    def _listed_tables(self, path: Sequence[str], include_declared: bool | None) -> list[str]:
        """The Lance tables of a database; with include_declared False, only those with data.
        A database dropped since it was listed has none."""
        try:
            ref = self._database_ref(path)
            names = self._lance_table_names(ref, None)
            if include_declared is False:
                names = self._tables_with_data(ref, names)
        except NamespaceNotFoundError:
            return []
        return names

    def _tables_with_data(self, ref: DatabaseRef, names: list[str]) -> list[str]:
        return [
            table.tableName
            for table in self._table_objects(ref, names)
            if table.sd
            and open_lance_table(plain_location(table.sd.location) or "", self._storage_options)
        ]

    # -- identifiers -------------------------------------------------------------------------

    @property
    def _namespace_depth(self) -> int:
        return 2 if self.catalog_level else 1

    def _namespace_path(self, parts: Sequence[str] | None, allow_root: bool = False) -> list[str]:
        names = split_identifier(parts, "namespace identifier")
        if not names and not allow_root:
            raise InvalidInputError("this operation needs a namespace, not the root namespace")
        if len(names) > self._namespace_depth:
            raise InvalidInputError(
                f"{type(self).__name__} namespaces have at most {self._namespace_depth} levels,"
                f" got {IDENTIFIER_DELIMITER.join(names)!r}"
            )
        kind = ["catalog", "database"] if self.catalog_level else ["database"]
        return [
            hive_name(name, kind[index], MAX_DATABASE_NAME_LENGTH)
            for index, name in enumerate(names)
        ]

    def _table_path(self, parts: Sequence[str] | None) -> tuple[DatabaseRef, str]:
        names = split_identifier(parts, "table identifier")
        if len(names) != self._namespace_depth + 1:
            expected = "catalog, database and table" if self.catalog_level else "database and table"
            raise InvalidInputError(f"a table identifier names the {expected}, got {names!r}")
        namespace = self._namespace_path(names[:-1])
        table = hive_name(names[-1], "table", MAX_TABLE_NAME_LENGTH)
        return self._database_ref(namespace), table

    def _is_catalog_path(self, path: Sequence[str]) -> bool:
        return self.catalog_level and len(path) == 1

    def _database_ref(self, path: Sequence[str]) -> DatabaseRef:
        if not self.catalog_level:
            return DatabaseRef(None, path[0])
        catalog, database = path
        if self._has_catalogs():
            return DatabaseRef(catalog, database)
        self._require_catalog(catalog)
        return DatabaseRef(None, database)

    # -- metastore access --------------------------------------------------------------------

    def _call(self, operation: Callable[[ThriftHiveMetastore.Client], T], subject: str) -> T:
        return self._pool.run(operation, subject)

    def readiness_probe(self) -> None:
        """/readyz: the metastore answers a call every HMS version has."""
        self._call(lambda client: client.get_all_databases(), "namespace")

    def _has_catalogs(self) -> bool:
        """Whether the metastore has catalog calls (HMS 3+); HMS 2.x answers "unknown method"."""
        if self._catalogs_supported is None:
            try:
                self._call(lambda client: client.get_catalogs(), "namespace")
                self._catalogs_supported = True
            except UnsupportedOperationError:
                self._catalogs_supported = False
        return self._catalogs_supported

    def _catalog_names(self) -> list[str]:
        if not self._has_catalogs():
            return [DEFAULT_CATALOG]
        response = self._call(lambda client: client.get_catalogs(), "namespace")
        return list(response.names or [])

    def _get_catalog(self, name: str) -> Catalog:
        if not self._has_catalogs():
            if name != DEFAULT_CATALOG:
                raise NamespaceNotFoundError(
                    f"catalog {name!r} not found: this metastore has only the catalog"
                    f" {DEFAULT_CATALOG!r}"
                )
            return Catalog(name=DEFAULT_CATALOG, locationUri=self._root)
        request = GetCatalogRequest(name=name)
        return self._call(lambda client: client.get_catalog(request), "namespace").catalog

    def _require_catalog(self, name: str) -> None:
        self._get_catalog(name)

    def _catalog_properties(self, name: str) -> dict[str, str]:
        catalog = self._get_catalog(name)
        properties: dict[str, str] = {}
        if catalog.description is not None:
            properties[CATALOG_DESCRIPTION_KEY] = catalog.description
        if catalog.locationUri is not None:
            properties[CATALOG_LOCATION_KEY] = plain_location(catalog.locationUri) or ""
        return properties

    def _child_namespaces(self, parent: Sequence[str]) -> list[str]:
        if not parent and self.catalog_level:
            return self._catalog_names()
        if not parent:
            return self._call(lambda client: client.get_all_databases(), "namespace")
        if self._is_catalog_path(parent):
            self._require_catalog(parent[0])
            if not self._has_catalogs():
                return self._call(lambda client: client.get_all_databases(), "namespace")
            pattern = f"@{parent[0]}#"
            return self._call(lambda client: client.get_databases(pattern), "namespace")
        self._get_database(self._database_ref(parent))
        return []  # databases hold tables, not namespaces

    def _get_database(self, ref: DatabaseRef) -> Database:
        return self._call(lambda client: client.get_database(ref.thrift_name), "namespace")

    def _database_or_none(self, ref: DatabaseRef) -> Database | None:
        try:
            return self._get_database(ref)
        except NamespaceNotFoundError:
            return None

    def _table_names(self, ref: DatabaseRef) -> list[str]:
        return self._call(lambda client: client.get_all_tables(ref.thrift_name), "namespace")

    def _lance_table_names(self, ref: DatabaseRef, after: str | None) -> list[str]:
        """The Lance tables of the database that sort after `after`.

        The metastore takes ~5 ms per table object, so only names are asked for where possible:
        the external tables (by table type) and the tables whose parameters say exactly
        `table_type=lance`. Both together are Lance tables; only the other external tables are
        fetched, to catch other spellings such as `table_type=LANCE`.
        """
        external = self._external_table_names(ref)
        marked = self._marked_lance_table_names(ref) & external
        unsure, _ = paginate(external - marked, after, None)
        return sorted(marked | set(self._lance_tables_among(ref, unsure)))

    def _external_table_names(self, ref: DatabaseRef) -> set[str]:
        try:
            return set(self._call(
                lambda client: client.get_tables_by_type(ref.thrift_name, "*", EXTERNAL_TABLE),
                "namespace",
            ))
        except (UnsupportedOperationError, InternalError):  # a metastore without table types
            return set(self._table_names(ref))

    def _marked_lance_table_names(self, ref: DatabaseRef) -> set[str]:
        try:
            return set(self._names_by_filter(ref, LANCE_PARAMETER_FILTER))
        except (UnsupportedOperationError, InternalError):  # no filtering on parameters
            return set()

    def _names_by_filter(self, ref: DatabaseRef, filter_text: str) -> list[str]:
        return self._call(
            lambda client: client.get_table_names_by_filter(ref.thrift_name, filter_text, -1),
            "namespace",
        )

    def _lance_tables_among(self, ref: DatabaseRef, names: list[str]) -> list[str]:
        return [t.tableName for t in self._table_objects(ref, names) if is_lance_table(t)]

    def _table_objects(self, ref: DatabaseRef, names: list[str]) -> Iterator[Table]:
        """The metastore's table objects of `names`, fetched a batch at a time."""
        for start in range(0, len(names), TABLE_BATCH_SIZE):
            batch = names[start : start + TABLE_BATCH_SIZE]
            yield from self._call(
                lambda client, batch=batch: client.get_table_objects_by_name(
                    ref.thrift_name, batch
                ),
                "namespace",
            )

    def _table_or_none(self, ref: DatabaseRef, name: str) -> Table | None:
        try:
            return self._call(lambda client: client.get_table(ref.thrift_name, name), "table")
        except TableNotFoundError:
            return None

    def _get_lance_table(self, ref: DatabaseRef, name: str) -> Table:
        table = self._table_or_none(ref, name)
        if table is None:
            self._get_database(ref)  # a missing database is reported as such
            raise TableNotFoundError(f"table {ref.name}.{name} not found")
        if not is_lance_table(table):
            raise InvalidInputError(
                f"{ref.name}.{name} is a Hive table but not a Lance table"
                f" ({EXTERNAL_TABLE} with {TABLE_TYPE_KEY}={LANCE_TABLE_TYPE})"
            )
        return table

    def _lance_table(
        self,
        ref: DatabaseRef,
        name: str,
        location: str,
        properties: Mapping[str, str] | None,
    ) -> Table:
        parameters = {
            key: value
            for key, value in (properties or {}).items()
            if key not in RESERVED_TABLE_PARAMETERS and key.lower() != TABLE_TYPE_KEY
        }
        # HMS 2.x turns an EXTERNAL_TABLE without EXTERNAL=TRUE into a managed table.
        parameters.update({TABLE_TYPE_KEY: LANCE_TABLE_TYPE, "EXTERNAL": "TRUE"})
        storage = StorageDescriptor(
            cols=[],
            location=location,
            serdeInfo=SerDeInfo(parameters={}),
            parameters={},
            bucketCols=[],
            sortCols=[],
        )
        return Table(
            tableName=name,
            dbName=ref.name,
            catName=ref.catalog,
            owner=self._owner,
            createTime=int(time.time()),
            sd=storage,
            partitionKeys=[],
            parameters=parameters,
            tableType=EXTERNAL_TABLE,
        )

    # -- locations ---------------------------------------------------------------------------

    def _catalog_root(self, catalog: str | None) -> str:
        if catalog is None or catalog == DEFAULT_CATALOG:
            return self._root
        return join_location(self._root, catalog)

    def _default_table_location(self, ref: DatabaseRef, table: str) -> str:
        return join_location(self._catalog_root(ref.catalog), f"{ref.name}.db", table)

    # -- create / drop -----------------------------------------------------------------------

    def _create_database(self, ref: DatabaseRef, mode: str, properties: dict[str, str]) -> None:
        database = self._database_object(ref, properties)
        if ref.catalog is not None:
            self._require_catalog(ref.catalog)
        existing = self._database_or_none(ref)
        if existing is not None:
            if mode == CreateMode.EXIST_OK:
                return
            if mode == "create":
                raise NamespaceAlreadyExistsError(f"namespace {ref.name!r} already exists")
            self._drop_database(ref, cascade=False)
        try:
            self._call(lambda client: client.create_database(database), "namespace")
        except NamespaceAlreadyExistsError:
            if mode != CreateMode.EXIST_OK:  # created by a concurrent request since the check
                raise

    def _database_object(self, ref: DatabaseRef, properties: dict[str, str]) -> Database:
        location = properties.pop(LOCATION_KEY, None) or join_location(
            self._catalog_root(ref.catalog), f"{ref.name}.db"
        )
        owner_type_name = properties.pop(OWNER_TYPE_KEY, None)
        return Database(
            name=ref.name,
            catalogName=ref.catalog,
            description=properties.pop(DESCRIPTION_KEY, None),
            locationUri=location,
            ownerName=properties.pop(OWNER_KEY, None) or self._owner,
            ownerType=owner_type(owner_type_name) if owner_type_name else PrincipalType.USER,
            parameters=properties,
        )

    def _drop_database(self, ref: DatabaseRef, cascade: bool) -> None:
        self._get_database(ref)
        if ref.name == DEFAULT_DATABASE and ref.catalog in (None, DEFAULT_CATALOG):
            raise InvalidInputError(f"Hive never drops the {DEFAULT_DATABASE!r} database")
        if not cascade and self._table_names(ref):
            raise NamespaceNotEmptyError(
                f"namespace {ref.name!r} still has tables; drop them or use CASCADE"
            )
        # deleteData=False: CASCADE removes registrations only, never table data.
        self._call(
            lambda client: client.drop_database(ref.thrift_name, False, cascade), "namespace"
        )

    def _create_catalog(self, name: str, mode: str, properties: dict[str, str]) -> None:
        if not self._has_catalogs():
            self._create_catalog_without_catalogs(name, mode)
            return
        catalog = Catalog(
            name=name,
            description=properties.get(CATALOG_DESCRIPTION_KEY),
            locationUri=properties.get(CATALOG_LOCATION_KEY) or join_location(self._root, name),
        )
        if self._catalog_or_none(name) is not None:
            if mode == CreateMode.EXIST_OK:
                return
            if mode == "create":
                raise NamespaceAlreadyExistsError(f"catalog {name!r} already exists")
            self._drop_catalog(name, cascade=False)
        request = CreateCatalogRequest(catalog=catalog)
        try:
            self._call(lambda client: client.create_catalog(request), "namespace")
        except NamespaceAlreadyExistsError:
            if mode != CreateMode.EXIST_OK:  # created by a concurrent request since the check
                raise

    def _create_catalog_without_catalogs(self, name: str, mode: str) -> None:
        if name != DEFAULT_CATALOG:
            raise UnsupportedOperationError(
                f"this metastore has no catalogs besides {DEFAULT_CATALOG!r} (HMS 2.x)"
            )
        if mode == "create":
            raise NamespaceAlreadyExistsError(f"catalog {name!r} already exists")
        if mode == "overwrite":
            raise UnsupportedOperationError("the default catalog cannot be replaced")

    def _catalog_or_none(self, name: str) -> Catalog | None:
        try:
            return self._get_catalog(name)
        except NamespaceNotFoundError:
            return None

    def _drop_catalog(self, name: str, cascade: bool) -> None:
        self._require_catalog(name)
        if self._has_catalogs() and name == DEFAULT_CATALOG:
            raise InvalidInputError(f"the default catalog {DEFAULT_CATALOG!r} is never dropped")
        if not self._has_catalogs():
            raise UnsupportedOperationError(
                f"the catalog {DEFAULT_CATALOG!r} of a metastore without catalogs cannot be dropped"
            )
        databases = self._child_namespaces([name])
        if databases and not cascade:
            raise NamespaceNotEmptyError(f"catalog {name!r} still has databases: {databases}")
        for database in databases:
            self._drop_database(DatabaseRef(name, database), cascade=True)
        request = DropCatalogRequest(name=name)
        self._call(lambda client: client.drop_catalog(request), "namespace")


def _current_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment (e.g. a bare container uid)
        return "lance"


class Hive2Namespace(_HiveNamespace):
    """Lance namespace on a Hive 2.x metastore: databases hold Lance tables."""

    catalog_level = False


class Hive3Namespace(_HiveNamespace):
    """Lance namespace on a Hive 3.x metastore: catalogs hold databases holding Lance tables.

    Against a metastore without catalog calls (HMS 2.x) it shows the single catalog `hive`.
    """

    catalog_level = True


__all__ = ["Hive2Namespace", "Hive3Namespace", "MetastoreClientPool", "translate_hms_error"]
