"""The Iceberg namespace: Lance's namespace and table operations on an Apache Iceberg REST
Catalog. Identifiers are [warehouse, namespace..., table] (`names.py`); a Lance table is an
Iceberg table marked `table_type=lance` (`catalog.py`).
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

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
    LanceNamespaceError,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceAlreadyExistsError,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from backends.core.extensions import (
    AlterNamespaceRequest,
    AlterNamespaceResponse,
    AlterTableRequest,
    AlterTableResponse,
)
from backends.core.lance_tables import TABLE_TYPE_KEY, has_lance_table_type, require_lance_table
from backends.core.locations import storage_root
from backends.core.modes import CreateMode, DropBehavior, DropMode, RegisterMode, parse_mode
from backends.core.names import joined_id
from backends.core.paging import paginate
from backends.core.properties import PropertyChanges
from backends.core.settings import BackendSettings
from backends.iceberg.catalog import (
    IcebergCatalog,
    s3_credentials,
    table_location,
    table_properties,
)
from backends.iceberg.names import namespace_identifier, table_identifier
from backends.iceberg.settings import IcebergSettings
from backends.layouts import PathLayout, TableLayout
from backends.rest_catalog import (
    OAuth2ClientCredentials,
    RestCatalogClient,
    RestCatalogNamespace,
    validate_location,
)
from backends.vending import S3Credentials

LOAD_CONCURRENCY = 8


class IcebergNamespace(RestCatalogNamespace):
    """Lance tables registered in an Iceberg REST Catalog."""

    settings_class: ClassVar[type[BackendSettings]] = IcebergSettings

    def __init__(self, **properties: str) -> None:
        settings = IcebergSettings.from_properties(properties)
        self.endpoint = settings.endpoint.rstrip("/")
        oauth = None
        if settings.credential:
            oauth = OAuth2ClientCredentials(
                f"{self.endpoint}/v1/oauth/tokens", settings.credential, scope="catalog"
            )
        self.root = storage_root(settings.root)
        # The protocol cannot list warehouses; ListAllTables covers the ones named here.
        self.warehouses = list(settings.warehouses)
        self.storage_options = dict(settings.storage)
        self.client = RestCatalogClient(self.endpoint, settings, oauth=oauth)
        self.catalog = IcebergCatalog(self.client)

    def table_layout(self) -> TableLayout:
        return PathLayout(min_depth=3)

    def namespace_id(self) -> str:
        return f"IcebergNamespace {{ endpoint: '{self.endpoint}' }}"

    def readiness_probe(self) -> None:
        """/readyz: the catalog's config endpoint answers, for the first warehouse named."""
        self.catalog.probe(next(iter(self.warehouses), None))

    # Namespaces

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        parts = list(request.id or [])
        if not parts:
            raise UnsupportedOperationError(
                "the Iceberg REST protocol cannot list warehouses; list a warehouse instead"
            )
        names = self.catalog.child_names(parts[0], parts[1:])
        page, token = paginate(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        if not request.id:
            return DescribeNamespaceResponse(properties={})  # the root always exists
        warehouse, path = namespace_identifier(request.id)
        if not path:
            self.catalog.base(warehouse)  # an unknown warehouse fails its config lookup
            return DescribeNamespaceResponse(properties={})
        return DescribeNamespaceResponse(
            properties=self.catalog.namespace_properties(warehouse, path)
        )

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        warehouse, path = namespace_identifier(request.id)
        if not path:
            raise UnsupportedOperationError("warehouses are created in the catalog, not here")
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        if mode == "overwrite":
            self.catalog.drop_namespace(warehouse, path, missing_ok=True)
        try:
            properties = self.catalog.create_namespace(
                warehouse, path, dict(request.properties or {})
            )
        except NamespaceAlreadyExistsError:
            if mode != CreateMode.EXIST_OK:
                raise
            properties = self.catalog.namespace_properties(warehouse, path)
        return CreateNamespaceResponse(properties=properties)

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        warehouse, path = namespace_identifier(request.id)
        if not path:
            raise UnsupportedOperationError("warehouses are dropped in the catalog, not here")
        skip_missing = parse_mode(request.mode, DropMode, DropMode.FAIL) is DropMode.SKIP
        behavior = parse_mode(request.behavior, DropBehavior, DropBehavior.RESTRICT, "behavior")
        if behavior is DropBehavior.CASCADE:
            raise UnsupportedOperationError("the iceberg backend only drops namespaces RESTRICT")
        # Fail, the spec's default: a missing namespace is NamespaceNotFound (code 1)
        self.catalog.drop_namespace(warehouse, path, missing_ok=skip_missing)
        return DropNamespaceResponse()

    def alter_namespace(self, request: AlterNamespaceRequest) -> AlterNamespaceResponse:
        warehouse, path = namespace_identifier(request.id)
        changes = PropertyChanges.of(request.set_properties, request.unset_properties)
        updates, removals = changes.updates, sorted(changes.removals)
        if not path:
            raise UnsupportedOperationError(
                "alter_namespace on the iceberg backend: a warehouse has no namespace properties"
            )
        if updates or removals:
            self.catalog.update_namespace_properties(warehouse, path, updates, removals)
        return AlterNamespaceResponse(
            properties=self.catalog.namespace_properties(warehouse, path)
        )

    # Tables

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        warehouse, path = namespace_identifier(request.id)
        if not path:
            raise InvalidInputError("tables live in a namespace under the warehouse")
        with_declared = request.include_declared is not False
        lance_names = self._lance_tables(warehouse, path, with_declared)
        page, token = paginate(lance_names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def list_all_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        """Every Lance table under `request.id`, `$`-joined; an empty id means every namespace
        of the configured `warehouses`."""
        scope = list(request.id or [])
        if not scope and not self.warehouses:
            raise UnsupportedOperationError(
                "list_all_tables on the iceberg backend needs the warehouses property: the "
                "Iceberg REST protocol cannot list warehouses"
            )
        starts = [(scope[0], scope[1:])] if scope else [(name, []) for name in self.warehouses]
        with_declared = request.include_declared is not False
        identifiers = [
            joined_id([warehouse, *path, name])
            for warehouse, start in starts
            for path in self._namespace_tree(warehouse, start)
            for name in self._lance_tables(warehouse, path, with_declared)
        ]
        page, token = paginate(identifiers, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def _namespace_tree(self, warehouse: str, start: list[str]) -> list[list[str]]:
        """`start` and every namespace nested below it (a warehouse holds no tables itself)."""
        found = [start] if start else []
        pending = [start]
        while pending:
            parent = pending.pop()
            children = [[*parent, name] for name in self.catalog.child_names(warehouse, parent)]
            found.extend(children)
            pending.extend(children)
        return found

    def _lance_tables(self, warehouse: str, path: list[str], with_declared: bool) -> list[str]:
        """List a namespace's tables, load them concurrently (bounded) and keep the Lance ones;
        without declared tables, only those with Lance data at their location."""
        names = self.catalog.table_names(warehouse, path)

        def lance_or_none(name: str) -> str | None:
            try:
                table = self.catalog.load_table(warehouse, path, name)
            except TableNotFoundError:
                return None  # dropped between the listing and the load
            if not has_lance_table_type(table_properties(table)):
                return None
            return name if with_declared or self.has_data_at(table_location(table)) else None

        if not names:
            return []
        with ThreadPoolExecutor(max_workers=min(LOAD_CONCURRENCY, len(names))) as pool:
            return [name for name in pool.map(lance_or_none, names) if name is not None]

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        warehouse, path, name = table_identifier(request.id)
        location = (
            validate_location(request.location)
            if request.location is not None
            else self.own_location([warehouse, *path, name])
        )
        table = self.catalog.create_table(warehouse, path, name, location, request.properties)
        return DeclareTableResponse(
            location=table_location(table) or location,
            storage_options=dict(self.storage_options),
            properties=table_properties(table),
        )

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        warehouse, path, name = table_identifier(request.id)
        mode = parse_mode(request.mode, RegisterMode, RegisterMode.CREATE)
        location = validate_location(request.location)
        require_lance_table(location, self.storage_options)
        replaced = (
            self._unregister_for_overwrite(warehouse, path, name) if mode == "overwrite" else None
        )
        try:
            table = self.catalog.create_table(warehouse, path, name, location, request.properties)
        except LanceNamespaceError:
            if replaced is not None:  # put the previous registration back: nothing half-done
                with contextlib.suppress(LanceNamespaceError):
                    self.catalog.create_table(
                        warehouse,
                        path,
                        name,
                        str(table_location(replaced)),
                        table_properties(replaced),
                    )
            raise
        return RegisterTableResponse(
            location=table_location(table) or location, properties=table_properties(table)
        )

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        table = self.catalog.require_lance_table(*table_identifier(request.id))
        return DescribeTableResponse(
            location=table_location(table),
            storage_options=dict(self.storage_options),
            properties=table_properties(table),
        )

    def catalog_credentials(self, table_id: list[str], access: str) -> S3Credentials | None:
        """The catalog decides the access of what it vends: the delegation header cannot ask
        for read only."""
        table = self.catalog.require_lance_table(*table_identifier(table_id), delegated=True)
        return s3_credentials(table)

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        warehouse, path, name = table_identifier(request.id)
        table = self.catalog.require_lance_table(warehouse, path, name)
        self.catalog.delete_table(warehouse, path, name)
        return DeregisterTableResponse(
            id=[warehouse, *path, name],
            location=table_location(table),
            properties=table_properties(table),
        )

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        warehouse, path, name = table_identifier(request.id)
        target_namespace = request.new_namespace_id
        if target_namespace is None:
            target_namespace = [warehouse, *path]
        target_warehouse, target_path, new_name = table_identifier(
            [*target_namespace, request.new_table_name]
        )
        if target_warehouse != warehouse:
            raise UnsupportedOperationError(
                "rename_table on the iceberg backend cannot move a table to another warehouse"
            )
        self.catalog.require_lance_table(warehouse, path, name)
        if (target_path, new_name) == (path, name):
            raise TableAlreadyExistsError(f"table {'.'.join([*target_path, new_name])} exists")
        self.catalog.rename_table(
            warehouse,
            {"namespace": path, "name": name},
            {"namespace": target_path, "name": new_name},
        )
        return RenameTableResponse()

    def alter_table(self, request: AlterTableRequest) -> AlterTableResponse:
        """One CommitTable of set-properties / remove-properties, asserting it is still the
        table that was checked to be a Lance table."""
        warehouse, path, name = table_identifier(request.id)
        changes = PropertyChanges.of(
            request.set_properties, request.unset_properties, protected=(TABLE_TYPE_KEY,)
        )
        updates, removals = changes.updates, sorted(changes.removals)
        table = self.catalog.require_lance_table(warehouse, path, name)
        if not (updates or removals):
            return AlterTableResponse(properties=table_properties(table))
        changes: list[dict[str, Any]] = []
        if updates:
            changes.append({"action": "set-properties", "updates": updates})
        if removals:
            changes.append({"action": "remove-properties", "removals": removals})
        table_uuid = (table.get("metadata") or {}).get("table-uuid")
        requirements = (
            [{"type": "assert-table-uuid", "uuid": str(table_uuid)}] if table_uuid else []
        )
        body = {
            "identifier": {"namespace": path, "name": name},
            "requirements": requirements,
            "updates": changes,
        }
        committed = self.catalog.commit_table(warehouse, path, name, body)
        return AlterTableResponse(properties=table_properties(committed))

    def _unregister_for_overwrite(
        self, warehouse: str, path: list[str], name: str
    ) -> dict[str, Any] | None:
        """Remove the Lance table a RegisterTable Overwrite replaces; None when there is none."""
        try:
            table = self.catalog.require_lance_table(warehouse, path, name)
        except TableNotFoundError:
            return None
        self.catalog.delete_table(warehouse, path, name)
        return table
