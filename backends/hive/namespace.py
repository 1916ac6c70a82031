"""Lance namespaces kept in a Hive Metastore (HMS): `hive2` (database.table) and `hive3`
(catalog.database.table).

A Lance table is an HMS table (external, or managed as lance-namespace-impls' are on HMS 2.x)
whose parameters hold `table_type=lance`; its storage descriptor location is the Lance table
root. Every write of rows keeps impls' `empty_table` marker true to the table (`rows_written`).
How namespace properties map to the Database and Catalog objects is in `objects.py`, the name
rules in `names.py`, the metastore calls in `metastore.py` and the pooled Thrift client in
`client.py`.
"""

from __future__ import annotations

import getpass
from collections.abc import Mapping, Sequence
from typing import ClassVar

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
    InvalidInputError,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    NamespaceNotFoundError,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    TableAlreadyExistsError,
    TableExistsRequest,
    TableExistsResponse,
)

from backends.base import MetadataNamespace
from backends.core.extensions import (
    AlterNamespaceRequest,
    AlterNamespaceResponse,
    AlterTableRequest,
    AlterTableResponse,
)
from backends.core.lance_tables import open_lance_table, require_lance_table
from backends.core.locations import check_own_path, resolve_stored, storage_root
from backends.core.modes import CreateMode, DropBehavior, DropMode, RegisterMode, parse_mode
from backends.core.paging import page_of_table_ids, paginate, within_scope
from backends.core.properties import PropertyChanges
from backends.core.settings import BackendSettings
from backends.hive.catalog_objects import check_catalog_location, check_catalog_properties
from backends.hive.client import MetastoreClientPool
from backends.hive.metastore import Metastore
from backends.hive.names import (
    DEFAULT_CATALOG,
    MAX_TABLE_NAME_LENGTH,
    DatabaseRef,
    HiveLevels,
    absolute_location,
    hive_name,
    plain_location,
)
from backends.hive.objects import (
    CATALOG_LOCATION_KEY,
    DATABASE_FIELD_KEYS,
    LOCATION_KEY,
    RESERVED_TABLE_PARAMETERS,
    database_fields,
    database_properties,
    spec_keyed,
    spec_keys,
    with_impls_keys,
)
from backends.hive.settings import HiveSettings
from backends.layouts import HiveLayout, TableLayout


class _HiveNamespace(MetadataNamespace):
    """Shared behaviour; subclasses say whether a catalog level sits above the databases."""

    catalog_level: ClassVar[bool] = False
    settings_class: ClassVar[type[BackendSettings]] = HiveSettings

    def __init__(self, **properties: str):
        settings = HiveSettings.from_properties(properties)
        self.settings = settings
        self._uri = ",".join(settings.uri)
        self._root = storage_root(settings.root)
        self._storage_options = dict(settings.storage)
        self._levels = HiveLevels(self.catalog_level, type(self).__name__)
        kerberos = settings.kerberos_auth()
        if kerberos is not None:
            kerberos.check_installed()
        pool = MetastoreClientPool(settings.addresses(), settings.pool_size, settings.timeouts,
                                   kerberos)
        owner = settings.owner or _current_user()
        self._hms = Metastore(pool, self._levels, self._root, owner)

    def storage_root(self) -> str:
        return self._root

    def table_layout(self) -> TableLayout:
        return HiveLayout(self.catalog_level, DEFAULT_CATALOG)

    def root_storage_options(self) -> dict[str, str]:
        return dict(self._storage_options)

    def namespace_id(self) -> str:
        return f"{type(self).__name__} {{ uri: '{self._uri}', root: '{self._root}' }}"

    def close(self) -> None:
        self._hms.close()

    def readiness_probe(self) -> None:
        """/readyz: the metastore answers a call every HMS version has."""
        self._hms.readiness_probe()

    def _table_ref(self, parts: Sequence[str] | None) -> tuple[DatabaseRef, str]:
        path, table = self._levels.table_path(parts)
        return self._hms.database_ref(path), table

    # -- writes (the rows themselves are written by MetadataNamespace) -----------------------

    def rows_written(self, table_id: list[str]) -> None:
        """A table that says it is empty (impls' `empty_table=true`) no longer is."""
        self._hms.mark_written(*self._table_ref(table_id))

    # -- namespaces --------------------------------------------------------------------------

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        parent = self._levels.namespace_path(request.id, allow_root=True)
        names = self._hms.child_namespaces(parent)
        page, token = paginate(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        path = self._levels.namespace_path(request.id, allow_root=True)
        if not path:  # the root namespace (the metastore) always exists and has no properties
            return DescribeNamespaceResponse(properties={})
        if self._levels.is_catalog_path(path):
            return DescribeNamespaceResponse(properties=self._hms.catalog_properties(path[0]))
        database = self._hms.get_database(self._hms.database_ref(path))
        return DescribeNamespaceResponse(properties=database_properties(database))

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        path = self._levels.namespace_path(request.id, allow_root=True)
        if not path:
            return NamespaceExistsResponse()
        if self._levels.is_catalog_path(path):
            self._hms.get_catalog(path[0])
        else:
            self._hms.get_database(self._hms.database_ref(path))
        return NamespaceExistsResponse()

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        path = self._levels.namespace_path(request.id)
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        properties = spec_keyed(request.properties or {})
        if self._levels.is_catalog_path(path):
            self._check_catalog(path[0], properties)
            self._hms.create_catalog(path[0], mode, properties)
            return CreateNamespaceResponse(properties=self._hms.catalog_properties(path[0]))
        ref = self._hms.database_ref(path)
        self._check_database_location(ref, properties.get(LOCATION_KEY))
        self._hms.create_database(ref, mode, properties)
        return CreateNamespaceResponse(properties=database_properties(self._hms.get_database(ref)))

    def _check_catalog(self, name: str, properties: dict[str, str]) -> None:
        """A new catalog's properties as its Catalog object can hold them, and a location
        the client names as a table's would be (`backends.hive.catalog_objects`)."""
        if not self._hms.has_catalogs():
            return
        check_catalog_properties(properties)
        location = properties.get(CATALOG_LOCATION_KEY)
        if location:
            others = [self._hms.get_catalog(other).locationUri or ""
                      for other in self._hms.catalog_names() if other != name]
            check_catalog_location(location, self._hms.root, others, self._storage_options)

    def _check_database_location(self, ref: DatabaseRef, location: str | None) -> None:
        """A database location the client names must be the database's own path, as on
        Glue (`backends.core.locations.check_own_path`): a database elsewhere would have
        other engines put its tables in other tables' or databases' data."""
        if location:
            check_own_path(location, resolve_stored(self._hms.database_home(ref)))

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        path = self._levels.namespace_path(request.id)
        mode = parse_mode(request.mode, DropMode, DropMode.FAIL)
        behavior = parse_mode(request.behavior, DropBehavior, DropBehavior.RESTRICT, "behavior")
        try:
            if self._levels.is_catalog_path(path):
                self._hms.drop_catalog(path[0], cascade=behavior == "cascade")
            else:
                self._hms.drop_database(self._hms.database_ref(path), cascade=behavior == "cascade")
        except NamespaceNotFoundError:
            if mode == "skip":
                return DropNamespaceResponse()
            raise
        return DropNamespaceResponse()

    # -- tables ------------------------------------------------------------------------------

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        path = self._levels.namespace_path(request.id)
        if self._levels.is_catalog_path(path):
            raise InvalidInputError("tables live in databases: name a catalog and a database")
        ref = self._hms.database_ref(path)
        self._hms.get_database(ref)
        names = self._hms.lance_table_names(ref, request.page_token)
        page, token = paginate(names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def table_entry_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        ref, name = self._table_ref(request.id)
        self._hms.get_lance_table(ref, name)
        return TableExistsResponse()

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        ref, name = self._table_ref(request.id)
        table = self._hms.get_lance_table(ref, name)
        location = plain_location(table.sd.location if table.sd else None)
        return DescribeTableResponse(
            location=location,
            table_uri=location if request.with_table_uri else None,
            storage_options=dict(self._storage_options),
            properties=dict(table.parameters or {}),
        )

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        ref, name = self._table_ref(request.id)
        location = absolute_location(request.location)
        location = location or self._hms.default_table_location(ref, name)
        table = self._hms.lance_table(ref, name, location, request.properties)
        self._hms.get_database(ref)
        self._hms.create_table(table)
        return DeclareTableResponse(
            location=location,
            storage_options=dict(self._storage_options),
            properties=dict(table.parameters),
        )

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        ref, name = self._table_ref(request.id)
        mode = parse_mode(request.mode, RegisterMode, RegisterMode.CREATE)
        if not request.location:
            raise InvalidInputError("RegisterTable needs the location of an existing Lance table")
        absolute_location(request.location)
        require_lance_table(request.location, self._storage_options)
        table = self._hms.lance_table(ref, name, request.location, request.properties)
        self._hms.get_database(ref)
        if mode == "overwrite" and self._hms.table_or_none(ref, name) is not None:
            self._hms.get_lance_table(ref, name)  # never replace another kind of Hive table
            self._hms.alter_table(ref, name, table)
        else:
            self._hms.create_table(table)
        return RegisterTableResponse(location=request.location, properties=dict(table.parameters))

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        ref, name = self._table_ref(request.id)
        table = self._hms.get_lance_table(ref, name)
        self._hms.drop_table(ref, name)
        return DeregisterTableResponse(
            id=list(request.id or []),
            location=plain_location(table.sd.location if table.sd else None),
            properties=dict(table.parameters or {}),
        )

    # -- catalog-level operations ------------------------------------------------------------

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        ref, name = self._table_ref(request.id)
        target_ref = ref
        if request.new_namespace_id is not None:
            target_path = self._levels.database_path(request.new_namespace_id)
            target_ref = self._hms.database_ref(target_path)
        if not request.new_table_name:
            raise InvalidInputError("RenameTable needs new_table_name")
        target_name = hive_name(request.new_table_name, "table", MAX_TABLE_NAME_LENGTH)
        if target_ref.catalog != ref.catalog:
            raise InvalidInputError("Hive cannot move a table to another catalog")
        self._hms.get_lance_table(ref, name)
        self._hms.get_database(target_ref)
        if self._hms.table_or_none(target_ref, target_name) is not None:
            raise TableAlreadyExistsError(f"table {target_ref.name}.{target_name} already exists")
        self._hms.rename_table(ref, name, target_ref, target_name)
        return RenameTableResponse()

    def alter_namespace(self, request: AlterNamespaceRequest) -> AlterNamespaceResponse:
        path = self._levels.namespace_path(request.id, allow_root=True)
        if not path or self._levels.is_catalog_path(path):
            raise InvalidInputError("only a database's properties can be altered here")
        changes = PropertyChanges.of(request.set_properties, request.unset_properties)
        changes = PropertyChanges(spec_keyed(changes.updates), spec_keys(changes.removals))
        fixed = sorted(changes.removals & DATABASE_FIELD_KEYS)
        if fixed:
            raise InvalidInputError(
                f"{', '.join(fixed)} are fields of the Hive database and cannot be unset"
            )
        ref = self._hms.database_ref(path)
        before = self._hms.get_database(ref)
        wanted = changes.applied_to(database_fields(before))
        if wanted.get(LOCATION_KEY) != database_fields(before).get(LOCATION_KEY):
            self._check_database_location(ref, wanted.get(LOCATION_KEY))
        altered = self._hms.database_object(ref, dict(wanted))
        altered.createTime = before.createTime
        self._hms.alter_database(ref, altered)
        after = database_fields(self._hms.get_database(ref))
        ignored = self._ignored_changes(changes, database_fields(altered), after)
        if ignored:
            self._hms.alter_database(ref, before)
            raise InvalidInputError(
                f"this metastore cannot change {', '.join(ignored)}; nothing was changed"
            )
        return AlterNamespaceResponse(properties=with_impls_keys(after))

    def alter_table(self, request: AlterTableRequest) -> AlterTableResponse:
        ref, name = self._table_ref(request.id)
        changes = PropertyChanges.of(
            request.set_properties, request.unset_properties, RESERVED_TABLE_PARAMETERS
        )
        table = self._hms.get_lance_table(ref, name)
        table.parameters = changes.applied_to(table.parameters)
        self._hms.alter_table(ref, name, table)
        return AlterTableResponse(properties=dict(self._hms.get_lance_table(ref, name).parameters))

    def list_all_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        page, token = page_of_table_ids(
            within_scope(self, request, self._hms.all_database_paths()),
            lambda path: self._listed_tables(path, request.include_declared),
            request.page_token,
            request.limit,
        )
        return ListTablesResponse(tables=page, page_token=token)

    @staticmethod
    def _ignored_changes(
        changes: PropertyChanges, sent: Mapping[str, str], after: Mapping[str, str]
    ) -> list[str]:
        """The requested changes the metastore did not make (HMS 2.3 ignores a new database
        description or location)."""
        ignored = [key for key in changes.updates if after.get(key) != sent.get(key)]
        return sorted(ignored + [key for key in changes.removals if key in after])

    def _listed_tables(self, path: Sequence[str], include_declared: bool | None) -> list[str]:
        """The Lance tables of a database; with include_declared False, only those with data.
        A database dropped since it was listed has none."""
        try:
            ref = self._hms.database_ref(path)
            names = self._hms.lance_table_names(ref, None)
            if include_declared is False:
                names = self._tables_with_data(ref, names)
        except NamespaceNotFoundError:
            return []
        return names

    def _tables_with_data(self, ref: DatabaseRef, names: list[str]) -> list[str]:
        return [
            table.tableName
            for table in self._hms.table_objects(ref, names)
            if table.sd
            and open_lance_table(plain_location(table.sd.location) or "", self._storage_options)
        ]


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
