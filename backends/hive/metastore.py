"""The metastore as the namespaces use it: catalogs (when it has them), databases and Lance
tables, over the pooled client. Knows Hive and nothing about HTTP or Lance requests."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from copy import deepcopy
from typing import TypeVar

from hive_metastore import ThriftHiveMetastore
from hive_metastore.ttypes import (
    AlterCatalogRequest,
    Catalog,
    CreateCatalogRequest,
    Database,
    DropCatalogRequest,
    GetCatalogRequest,
    GetTableRequest,
    GetTablesRequest,
    Table,
)
from lance_namespace import (
    InternalError,
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from backends.core.lance_tables import (
    EXTERNAL_TABLE,
    LANCE_TABLE_TYPE,
    TABLE_TYPE_KEY,
    settled_parameters,
)
from backends.core.locations import join_location
from backends.core.modes import CreateMode
from backends.core.paging import paginate
from backends.hive.client import MetastoreClientPool
from backends.hive.names import DEFAULT_CATALOG, DEFAULT_DATABASE, DatabaseRef, HiveLevels
from backends.hive.objects import (
    CATALOG_DESCRIPTION_KEY,
    CATALOG_LOCATION_KEY,
    MANAGED_TABLE,
    catalog_properties,
    database_object,
    is_external,
    is_lance_table,
    lance_table,
    made_external,
)

T = TypeVar("T")

TABLE_BATCH_SIZE = 100
# Where a catalog is pointed before it is dropped (`_empty_location`): a place of the root no
# table id's own path can be (a name the identifiers refuse is not needed: it is never listed).
DROPPED_CATALOGS = "_lance_adapter_dropped_catalogs"
# Names of tables by parameter value, answered by the metastore without loading table objects.
# `like` takes a Java regular expression, matched whole; (?i) ignores case (HMS 2.3 on Derby).
LANCE_PARAMETER_FILTER = f'hive_filter_field_params__table_type like "(?i){LANCE_TABLE_TYPE}"'


class Metastore:
    """Catalog-aware metastore calls; `root` and `owner` fill in what a request leaves out."""

    def __init__(self, pool: MetastoreClientPool, levels: HiveLevels, root: str, owner: str):
        self._pool = pool
        self._levels = levels
        self.root = root
        self.owner = owner
        self._catalogs_supported: bool | None = None

    def call(self, operation: Callable[[ThriftHiveMetastore.Client], T], subject: str) -> T:
        return self._pool.run(operation, subject)

    def close(self) -> None:
        self._pool.close()

    def readiness_probe(self) -> None:
        """The metastore answers a call every HMS version has."""
        self.call(lambda client: client.get_all_databases(), "namespace")

    # -- catalogs ----------------------------------------------------------------------------

    def has_catalogs(self) -> bool:
        """Whether the metastore has catalog calls (HMS 3+); HMS 2.x answers "unknown method"."""
        if self._catalogs_supported is None:
            try:
                self.call(lambda client: client.get_catalogs(), "namespace")
                self._catalogs_supported = True
            except UnsupportedOperationError:
                self._catalogs_supported = False
        return self._catalogs_supported

    def catalog_names(self) -> list[str]:
        if not self.has_catalogs():
            return [DEFAULT_CATALOG]
        response = self.call(lambda client: client.get_catalogs(), "namespace")
        return list(response.names or [])

    def get_catalog(self, name: str) -> Catalog:
        if not self.has_catalogs():
            if name != DEFAULT_CATALOG:
                raise NamespaceNotFoundError(
                    f"catalog {name!r} not found: this metastore has only the catalog"
                    f" {DEFAULT_CATALOG!r}"
                )
            return Catalog(name=DEFAULT_CATALOG, locationUri=self.root)
        request = GetCatalogRequest(name=name)
        return self.call(lambda client: client.get_catalog(request), "namespace").catalog

    def catalog_or_none(self, name: str) -> Catalog | None:
        try:
            return self.get_catalog(name)
        except NamespaceNotFoundError:
            return None

    def catalog_properties(self, name: str) -> dict[str, str]:
        return catalog_properties(self.get_catalog(name))

    def child_namespaces(self, parent: Sequence[str]) -> list[str]:
        if not parent and self._levels.catalog_level:
            return self.catalog_names()
        if not parent:
            return self.call(lambda client: client.get_all_databases(), "namespace")
        if self._levels.is_catalog_path(parent):
            self.get_catalog(parent[0])
            if not self.has_catalogs():
                return self.call(lambda client: client.get_all_databases(), "namespace")
            pattern = f"@{parent[0]}#"
            return self.call(lambda client: client.get_databases(pattern), "namespace")
        self.get_database(self.database_ref(parent))
        return []  # databases hold tables, not namespaces

    # -- databases ---------------------------------------------------------------------------

    def database_ref(self, path: Sequence[str]) -> DatabaseRef:
        if not self._levels.catalog_level:
            return DatabaseRef(None, path[0])
        catalog, database = path
        if self.has_catalogs():
            return DatabaseRef(catalog, database)
        self.get_catalog(catalog)
        return DatabaseRef(None, database)

    def get_database(self, ref: DatabaseRef) -> Database:
        return self.call(lambda client: client.get_database(ref.thrift_name), "namespace")

    def database_or_none(self, ref: DatabaseRef) -> Database | None:
        try:
            return self.get_database(ref)
        except NamespaceNotFoundError:
            return None

    def alter_database(self, ref: DatabaseRef, database: Database) -> None:
        self.call(lambda client: client.alter_database(ref.thrift_name, database), "namespace")

    def database_object(self, ref: DatabaseRef, properties: dict[str, str]) -> Database:
        return database_object(ref, properties, self.database_home(ref), self.owner)

    def database_home(self, ref: DatabaseRef) -> str:
        """The database's own path, `<catalog's root>/<name>.db`, below which its tables go."""
        return join_location(self._catalog_root(ref.catalog), f"{ref.name}.db")

    def all_database_paths(self) -> list[list[str]]:
        if not self._levels.catalog_level:
            return [[name] for name in self.child_namespaces([])]
        return [
            [catalog, database]
            for catalog in self.catalog_names()
            for database in self.child_namespaces([catalog])
        ]

    # -- tables ------------------------------------------------------------------------------

    def table_names(self, ref: DatabaseRef) -> list[str]:
        return self.call(lambda client: client.get_all_tables(ref.thrift_name), "namespace")

    def lance_table_names(self, ref: DatabaseRef, after: str | None) -> list[str]:
        """The Lance tables of the database that sort after `after`.

        The metastore takes ~5 ms per table object, so only names are asked for where possible:
        the tables whose parameter `table_type` matches `lance` in any case (a parameter filter,
        any table type) are Lance tables; only the other external tables are fetched, to catch
        other spellings of the key such as `TABLE_TYPE`. A metastore without parameter filters
        has every other table fetched.
        """
        marked = self._marked_lance_table_names(ref)
        others = self._external_table_names(ref) if marked is not None else self.table_names(ref)
        unsure, _ = paginate(set(others) - (marked or set()), after, None)
        lance_among_unsure = [t.tableName for t in self.table_objects(ref, unsure)
                              if is_lance_table(t)]
        return sorted((marked or set()) | set(lance_among_unsure))

    def _external_table_names(self, ref: DatabaseRef) -> list[str]:
        try:
            return self.call(
                lambda client: client.get_tables_by_type(ref.thrift_name, "*", EXTERNAL_TABLE),
                "namespace",
            )
        except (UnsupportedOperationError, InternalError):  # a metastore without table types
            return self.table_names(ref)

    def _marked_lance_table_names(self, ref: DatabaseRef) -> set[str] | None:
        """The names the parameter filter answers; None when the metastore has no such filter."""
        try:
            return set(self.call(
                lambda client: client.get_table_names_by_filter(
                    ref.thrift_name, LANCE_PARAMETER_FILTER, -1
                ),
                "namespace",
            ))
        except (UnsupportedOperationError, InternalError):
            return None

    def table_objects(self, ref: DatabaseRef, names: list[str]) -> Iterator[Table]:
        """The metastore's table objects of `names`, fetched a batch at a time.

        The request forms (`*_req`) are used: HMS 2.3 and 3 have them, HMS 4 has only them
        (it dropped `get_table` and `get_table_objects_by_name`).
        """
        for start in range(0, len(names), TABLE_BATCH_SIZE):
            batch = names[start : start + TABLE_BATCH_SIZE]
            request = GetTablesRequest(dbName=ref.name, tblNames=batch, catName=ref.catalog)
            result = self.call(
                lambda client, request=request: client.get_table_objects_by_name_req(request),
                "namespace",
            )
            yield from result.tables or []

    def table_or_none(self, ref: DatabaseRef, name: str) -> Table | None:
        request = GetTableRequest(dbName=ref.name, tblName=name, catName=ref.catalog)
        try:
            return self.call(lambda client: client.get_table_req(request), "table").table
        except TableNotFoundError:
            return None

    def get_lance_table(self, ref: DatabaseRef, name: str) -> Table:
        table = self.table_or_none(ref, name)
        if table is None:
            self.get_database(ref)  # a missing database is reported as such
            raise TableNotFoundError(f"table {ref.name}.{name} not found")
        if not is_lance_table(table):
            raise InvalidInputError(
                f"{ref.name}.{name} is a Hive table but not a Lance table"
                f" (no parameter {TABLE_TYPE_KEY}={LANCE_TABLE_TYPE})"
            )
        return table

    def lance_table(
        self, ref: DatabaseRef, name: str, location: str, properties: Mapping[str, str] | None
    ) -> Table:
        return lance_table(ref, name, location, properties, self.owner)

    def create_table(self, table: Table) -> None:
        self.call(lambda client: client.create_table(table), "table")

    def alter_table(self, ref: DatabaseRef, name: str, table: Table) -> None:
        self.call(lambda client: client.alter_table(ref.thrift_name, name, table), "table")

    def rename_table(self, ref: DatabaseRef, name: str, target: DatabaseRef, new_name: str) -> None:
        """Rename the Lance table, its data staying where it is. HMS moves the directory of a
        managed table it renames, so such a table is marked external for the rename and is
        managed again afterwards."""
        table = self.get_lance_table(ref, name)
        renamed = deepcopy(table)
        renamed.dbName, renamed.tableName = target.name, new_name
        if is_external(table):
            self.alter_table(ref, name, renamed)
            return
        self.alter_table(ref, name, made_external(table))
        try:
            self.alter_table(ref, name, renamed)
        except Exception:
            self.alter_table(ref, name, self._managed_again(table))
            raise

    def mark_written(self, ref: DatabaseRef, name: str) -> None:
        """After the server wrote Lance data to the table, `empty_table=true` (impls' marker of
        a declared table) becomes false; other tables are left as they are."""
        table = self.table_or_none(ref, name)
        settled = None if table is None else settled_parameters(table.parameters)
        if settled is not None:
            table.parameters = settled
            self.alter_table(ref, name, table)

    @staticmethod
    def _managed_again(table: Table) -> Table:
        table.tableType = MANAGED_TABLE
        table.parameters = {k: v for k, v in table.parameters.items() if k != "EXTERNAL"}
        return table

    def drop_table(self, ref: DatabaseRef, name: str) -> None:
        """Drop the registration only: deleteData=False keeps the table's data."""
        self.call(lambda client: client.drop_table(ref.thrift_name, name, False), "table")

    def default_table_location(self, ref: DatabaseRef, table: str) -> str:
        return join_location(self.database_home(ref), table)

    def _catalog_root(self, catalog: str | None) -> str:
        if catalog is None or catalog == DEFAULT_CATALOG:
            return self.root
        return join_location(self.root, catalog)

    # -- create / drop -----------------------------------------------------------------------

    def create_database(self, ref: DatabaseRef, mode: str, properties: dict[str, str]) -> None:
        database = self.database_object(ref, properties)
        if ref.catalog is not None:
            self.get_catalog(ref.catalog)
        self._create(
            mode,
            self.database_or_none(ref),
            f"namespace {ref.name!r}",
            lambda: self.drop_database(ref, cascade=False),
            lambda client: client.create_database(database),
        )

    def drop_database(self, ref: DatabaseRef, cascade: bool) -> None:
        self.get_database(ref)
        if ref.name == DEFAULT_DATABASE and ref.catalog in (None, DEFAULT_CATALOG):
            raise InvalidInputError(f"Hive never drops the {DEFAULT_DATABASE!r} database")
        if not cascade and self.table_names(ref):
            raise NamespaceNotEmptyError(
                f"namespace {ref.name!r} still has tables; drop them or use CASCADE"
            )
        # deleteData=False: CASCADE removes registrations only, never table data.
        self.call(
            lambda client: client.drop_database(ref.thrift_name, False, cascade), "namespace"
        )

    def _is_own_default(self, catalog: str, database: str) -> bool:
        """HMS 3+ makes a `default` database in every new catalog and drops it with the
        catalog; while it holds no table it does not make the catalog non-empty."""
        return database == DEFAULT_DATABASE and not self.table_names(DatabaseRef(catalog, database))

    def create_catalog(self, name: str, mode: str, properties: dict[str, str]) -> None:
        if not self.has_catalogs():
            self._create_catalog_without_catalogs(name, mode)
            return
        catalog = Catalog(
            name=name,
            description=properties.get(CATALOG_DESCRIPTION_KEY),
            locationUri=properties.get(CATALOG_LOCATION_KEY) or join_location(self.root, name),
        )
        request = CreateCatalogRequest(catalog=catalog)
        self._create(
            mode,
            self.catalog_or_none(name),
            f"catalog {name!r}",
            lambda: self.drop_catalog(name, cascade=False),
            lambda client: client.create_catalog(request),
        )

    def _create(
        self,
        mode: str,
        existing: object | None,
        what: str,
        drop: Callable[[], None],
        create: Callable[[ThriftHiveMetastore.Client], object],
    ) -> None:
        """Create a database or catalog as `mode` says: `exist_ok` keeps an existing one,
        `create` refuses it and `overwrite` drops it first."""
        if existing is not None:
            if mode == CreateMode.EXIST_OK:
                return
            if mode == "create":
                raise NamespaceAlreadyExistsError(f"{what} already exists")
            drop()
        try:
            self.call(create, "namespace")
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

    def drop_catalog(self, name: str, cascade: bool) -> None:
        self.get_catalog(name)
        if self.has_catalogs() and name == DEFAULT_CATALOG:
            raise InvalidInputError(f"the default catalog {DEFAULT_CATALOG!r} is never dropped")
        if not self.has_catalogs():
            raise UnsupportedOperationError(
                f"the catalog {DEFAULT_CATALOG!r} of a metastore without catalogs cannot be dropped"
            )
        databases = self.child_namespaces([name])
        holding = [database for database in databases if not self._is_own_default(name, database)]
        if holding and not cascade:
            raise NamespaceNotEmptyError(f"catalog {name!r} still has databases: {holding}")
        for database in databases:
            self.drop_database(DatabaseRef(name, database), cascade=True)
        self._empty_location(name)
        request = DropCatalogRequest(name=name)
        self.call(lambda client: client.drop_catalog(request), "namespace")

    def _empty_location(self, name: str) -> None:
        """Point the catalog at a new empty place before it is dropped: the metastore deletes
        a dropped catalog's location with all it holds, which would take the data of the
        tables that were deregistered, or dropped with their data kept, from below it."""
        catalog = self.get_catalog(name)
        empty = join_location(self.root, DROPPED_CATALOGS, f"{name}-{uuid.uuid4().hex}")
        request = AlterCatalogRequest(name=name, newCat=Catalog(
            name=name, description=catalog.description, locationUri=empty))
        self.call(lambda client: client.alter_catalog(request), "namespace")
