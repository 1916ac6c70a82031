"""The Glue namespace: Lance's namespace and table operations on the Glue Data Catalog.

Only metadata lives here; the table operations `MetadataNamespace` inherits (`backends.base`)
write the Lance data at the location that `declare_table` / `describe_table` return.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import boto3
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
    NamespaceAlreadyExistsError,
    NamespaceExistsRequest,
    NamespaceExistsResponse,
    NamespaceNotFoundError,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    TableExistsRequest,
    TableExistsResponse,
    TableNotFoundError,
    UnsupportedOperationError,
)

from backends.base import MetadataNamespace
from backends.core.extensions import (
    AlterNamespaceRequest,
    AlterNamespaceResponse,
    AlterTableRequest,
    AlterTableResponse,
)
from backends.core.lance_tables import TABLE_TYPE_KEY, require_lance_table
from backends.core.locations import storage_root
from backends.core.modes import CreateMode, DropBehavior, DropMode, RegisterMode, parse_mode
from backends.core.names import joined_id
from backends.core.paging import page_of_table_ids, paginate, within_scope
from backends.core.properties import PropertyChanges
from backends.core.settings import BackendSettings
from backends.glue.catalog import GlueCatalog, namespace_not_found
from backends.glue.errors import glue_errors
from backends.glue.names import (
    DatabaseRef,
    ResolvedNamespace,
    glue_identifier,
    glue_table_identifier,
    validate_glue_name,
    validate_parameters,
)
from backends.glue.properties import altered_input, namespace_input, namespace_properties
from backends.glue.session import aws_client, build_session, session_region
from backends.glue.settings import GlueSettings
from backends.glue.tables import (
    default_location,
    is_lance_table,
    lance_parameters,
    stored_location,
    table_input,
    table_location,
    table_uri,
)
from backends.layouts import SuffixLayout, TableLayout

# Reserved CreateNamespace property choosing what to create in `catalogs` mode; not stored.
NAMESPACE_TYPE_PROPERTY = "glue.namespace_type"


class GlueNamespace(MetadataNamespace):
    """Lance namespace on the AWS Glue Data Catalog (metadata only)."""

    settings_class: ClassVar[type[BackendSettings]] = GlueSettings

    def __init__(self, **properties: str) -> None:
        self._settings = GlueSettings.from_properties(properties)
        self._root = storage_root(self._settings.root)
        self._session = build_session(self._settings)
        self._region = session_region(self._settings, self._session)
        self._glue = aws_client(self._session, "glue", self._settings, self._region)
        self._catalog = GlueCatalog(
            self._glue,
            self._settings,
            lambda: aws_client(self._session, "sts", self._settings, self._region),
        )

    def storage_root(self) -> str:
        return self._root

    def table_layout(self) -> TableLayout:
        return SuffixLayout(min_depth=2)

    def root_storage_options(self) -> dict[str, str]:
        return self._storage_options()

    def namespace_id(self) -> str:
        settings = self._settings
        return (
            f"GlueNamespace {{ catalog_id: {settings.catalog_id or 'default'}, "
            f"region: {self._region}, endpoint: {settings.endpoint or 'aws'}, "
            f"hierarchy: {settings.hierarchy} }}"
        )

    @property
    def session(self) -> boto3.Session:
        """The boto3 session whose (possibly refreshing) credentials sign every call."""
        return self._session

    @property
    def glue_client(self) -> Any:
        """The bounded boto3 Glue client this backend calls."""
        return self._glue

    # -- namespace operations -----------------------------------------------------------------

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        namespace = glue_identifier(request.id, "namespace")
        children = self._catalog.children(namespace)
        page, token = paginate(children, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def readiness_probe(self) -> None:
        """/readyz: one database of the catalog, a call Glue answers in either hierarchy."""
        catalog = DatabaseRef(self._settings.catalog_id, "")
        with glue_errors("catalog"):
            self._glue.get_databases(MaxResults=1, **catalog.params())

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        found = self._catalog.resolve(glue_identifier(request.id, "namespace"))
        return DescribeNamespaceResponse(properties=namespace_properties(found.entry))

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        self._catalog.resolve(glue_identifier(request.id, "namespace"))
        return NamespaceExistsResponse()

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        namespace = glue_identifier(request.id, "namespace")
        if not namespace:
            raise NamespaceAlreadyExistsError("the root namespace always exists")
        properties = validate_parameters(request.properties)
        namespace_type = properties.pop(NAMESPACE_TYPE_PROPERTY, "database").strip().lower()
        if namespace_type not in ("database", "catalog"):
            raise InvalidInputError(f"{NAMESPACE_TYPE_PROPERTY} must be 'database' or 'catalog'")
        created = namespace_input(properties, self._root, namespace, namespace_type)
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        catalogs_enabled = self._settings.catalogs_enabled
        if namespace_type == "catalog" and not catalogs_enabled:
            raise InvalidInputError("catalogs need hierarchy=catalogs")
        if not catalogs_enabled and len(namespace) > 1:
            raise InvalidInputError("hierarchy=databases has a single namespace level")
        parent_id = self._catalog.require_catalog(namespace[:-1])
        existing = self._catalog.find(namespace)
        if existing is not None:
            return self._on_existing(namespace, existing, mode, namespace_type, created)
        if namespace_type == "catalog":
            self._create_catalog(namespace, created)
        else:
            ref = DatabaseRef(parent_id, namespace[-1])
            with glue_errors(ref.describe()):
                self._glue.create_database(
                    DatabaseInput={"Name": ref.name, **created}, **ref.params()
                )
        return CreateNamespaceResponse(properties=namespace_properties(created))

    def _create_catalog(self, namespace: list[str], created: dict[str, Any]) -> None:
        # CreateCatalog has no parent or catalog ID: Glue creates the catalog under the caller's
        # default catalog, which must therefore be our root.
        root = self._settings.catalog_id
        if len(namespace) != 1 or (root is not None and root != self._catalog.caller_account()):
            raise UnsupportedOperationError(
                "Glue creates catalogs only directly under the account's default catalog"
            )
        with glue_errors(f"catalog {namespace[0]}"):
            self._glue.create_catalog(Name=namespace[0], CatalogInput=created)

    def _on_existing(
        self,
        namespace: list[str],
        existing: ResolvedNamespace,
        mode: str,
        namespace_type: str,
        created: dict[str, Any],
    ) -> CreateNamespaceResponse:
        name = joined_id(namespace)
        if mode == "create":
            raise NamespaceAlreadyExistsError(f"namespace {name} already exists")
        if mode == "overwrite" and existing.kind != namespace_type:
            raise InvalidInputError(
                f"namespace {name} is a {existing.kind}, not a {namespace_type}"
            )
        if mode == CreateMode.EXIST_OK:
            return CreateNamespaceResponse(properties=namespace_properties(existing.entry))
        # Overwrite = drop + create empty; done as one update so nothing is half-written, and
        # refused when there are children because dropping would unregister them.
        self._catalog.require_empty(existing, name)
        self._catalog.update_namespace(existing, created)
        return CreateNamespaceResponse(properties=namespace_properties(created))

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        namespace = glue_identifier(request.id, "namespace")
        if not namespace:
            raise InvalidInputError("the root namespace cannot be dropped")
        mode = parse_mode(request.mode, DropMode, DropMode.FAIL)
        behavior = parse_mode(request.behavior, DropBehavior, DropBehavior.RESTRICT, "behavior")
        if behavior == "cascade":
            raise UnsupportedOperationError("the Glue backend only drops namespaces in RESTRICT")
        found = self._catalog.find(namespace)
        if found is None:
            if mode == "skip":
                return DropNamespaceResponse()
            raise namespace_not_found(namespace)
        # DeleteDatabase would also unregister every table (of any format): refuse if any.
        self._catalog.require_empty(found, joined_id(namespace))
        with glue_errors(found.describe()):
            if found.database is not None:
                self._glue.delete_database(Name=found.database.name, **found.database.params())
            else:
                self._glue.delete_catalog(CatalogId=found.catalog_id)
        return DropNamespaceResponse(properties=namespace_properties(found.entry))

    def alter_namespace(self, request: AlterNamespaceRequest) -> AlterNamespaceResponse:
        namespace = glue_identifier(request.id, "namespace")
        changes = PropertyChanges.of(
            request.set_properties,
            request.unset_properties,
            (NAMESPACE_TYPE_PROPERTY,),
            "only choose what CreateNamespace creates",
        )
        found = self._catalog.resolve(namespace)
        if found.kind == "root":
            raise InvalidInputError("the root namespace has no properties to alter")
        shapes = ("Database", "DatabaseInput") if found.database else ("Catalog", "CatalogInput")
        current = self._catalog.writable(*shapes, found.entry or {})
        altered = altered_input(
            current, changes, self._root, namespace if found.database is not None else None
        )
        self._catalog.update_namespace(found, altered)
        described = self.describe_namespace(DescribeNamespaceRequest(id=namespace))
        return AlterNamespaceResponse(properties=described.properties)

    # -- table operations ---------------------------------------------------------------------

    def _table_ref(self, parts: list[str] | None) -> tuple[list[str], str, DatabaseRef]:
        namespace, table = glue_table_identifier(parts)
        return namespace, table, self._catalog.database_ref(namespace)

    def _get_lance_table(
        self, ref: DatabaseRef, table: str, namespace: list[str]
    ) -> dict[str, Any]:
        glue_table = self._catalog.get_table(ref, table, namespace)
        if not is_lance_table(glue_table):
            raise InvalidInputError(
                f"table {joined_id([*namespace, table])} is not a Lance table"
            )
        return glue_table

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        namespace = glue_identifier(request.id, "namespace")
        if not namespace:
            return ListTablesResponse(tables=[])  # tables live in databases, never in the root
        ref = self._catalog.database_ref(namespace)
        try:
            tables = self._catalog.tables(ref)
        except NamespaceNotFoundError:
            if self._catalog.resolve(namespace).kind == "catalog":
                return ListTablesResponse(tables=[])  # catalogs hold no tables directly
            raise
        names = self._lance_table_names(tables, request.include_declared)
        page, token = paginate(names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def _lance_table_names(
        self, tables: list[dict[str, Any]], include_declared: bool | None
    ) -> list[str]:
        lance_tables = [table for table in tables if is_lance_table(table)]
        if include_declared is False:
            # Only tables with data: this opens every table, so it is only done when asked.
            lance_tables = [table for table in lance_tables if self._has_data(table)]
        return [table["Name"] for table in lance_tables]

    def _has_data(self, glue_table: Mapping[str, Any]) -> bool:
        location = stored_location(glue_table)
        if not location:
            return False
        try:
            require_lance_table(location, self._storage_options())
        except InvalidInputError:
            return False
        return True

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        namespace, table, ref = self._table_ref(request.id)
        parameters = lance_parameters(request.properties)
        database = self._catalog.require_database(ref, namespace)
        location = request.location or default_location(self._root, database, namespace, table)
        self._catalog.create_table(ref, table_input(table, location, parameters), namespace)
        return DeclareTableResponse(
            location=location, storage_options=self._storage_options(), properties=parameters
        )

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        namespace, table, ref = self._table_ref(request.id)
        if not request.location or not request.location.strip():
            raise InvalidInputError("register_table needs a location")
        mode = parse_mode(request.mode, RegisterMode, RegisterMode.CREATE)
        parameters = lance_parameters(request.properties)
        self._catalog.require_database(ref, namespace)
        require_lance_table(request.location, self._storage_options())
        existing = self._catalog.table_if_exists(ref, table) if mode == "overwrite" else None
        registered = table_input(table, request.location, parameters)
        if existing is None:
            self._catalog.create_table(ref, registered, namespace)
        elif not is_lance_table(existing):
            raise InvalidInputError(f"table {joined_id(request.id)} is not a Lance table")
        else:
            self._catalog.update_table(ref, registered, [*namespace, table])
        return RegisterTableResponse(location=request.location, properties=parameters)

    # -- row writes: the table has Lance data afterwards, which its `empty_table` flag says ----

    def rows_written(self, table_id: list[str]) -> None:
        namespace, table, ref = self._table_ref(table_id)
        self._catalog.record_data(ref, [*namespace, table])

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        namespace, table, ref = self._table_ref(request.id)
        glue_table = self._get_lance_table(ref, table, namespace)
        location = table_location(glue_table, [*namespace, table])
        return DescribeTableResponse(
            location=location,
            table_uri=table_uri(location) if request.with_table_uri else None,
            storage_options=self._storage_options(),
            properties=dict(glue_table.get("Parameters") or {}),
        )

    def table_entry_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        namespace, table, ref = self._table_ref(request.id)
        glue_table = self._catalog.get_table(ref, table, namespace)
        if not is_lance_table(glue_table):
            raise TableNotFoundError(
                f"table {joined_id([*namespace, table])} is not a Lance table"
            )
        return TableExistsResponse()

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        namespace, table, ref = self._table_ref(request.id)
        glue_table = self._get_lance_table(ref, table, namespace)
        # DeleteTable only removes the Glue entry; the Lance data stays where it is.
        self._catalog.delete_table(ref, [*namespace, table])
        return DeregisterTableResponse(
            id=[*namespace, table],
            location=table_location(glue_table, [*namespace, table]),
            properties=dict(glue_table.get("Parameters") or {}),
        )

    # -- catalog-level operations -------------------------------------------------------------

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        namespace, table, ref = self._table_ref(request.id)
        new_name = validate_glue_name(request.new_table_name, "new table name")
        target_namespace = namespace
        if request.new_namespace_id is not None:
            target_namespace = glue_identifier(request.new_namespace_id, "namespace")
        target_ref = self._catalog.database_ref(target_namespace)
        glue_table = self._get_lance_table(ref, table, namespace)
        self._catalog.move_table(
            glue_table, (ref, [*namespace, table]), (target_ref, [*target_namespace, new_name])
        )
        return RenameTableResponse()

    def alter_table(self, request: AlterTableRequest) -> AlterTableResponse:
        namespace, table, ref = self._table_ref(request.id)
        changes = PropertyChanges.of(
            request.set_properties, request.unset_properties, (TABLE_TYPE_KEY,)
        )
        validate_parameters(changes.updates)
        glue_table = self._get_lance_table(ref, table, namespace)
        parameters = changes.applied_to(glue_table.get("Parameters"))
        self._catalog.replace_parameters(ref, glue_table, parameters, [*namespace, table])
        altered = self._get_lance_table(ref, table, namespace)
        return AlterTableResponse(properties=dict(altered.get("Parameters") or {}))

    def list_all_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        databases = self._catalog.database_paths([], self._settings.catalog_id)
        page, token = page_of_table_ids(
            within_scope(self, request, databases),
            lambda namespace: self._listed_tables(namespace, request.include_declared),
            request.page_token,
            request.limit,
        )
        return ListTablesResponse(tables=page, page_token=token)

    def _listed_tables(self, namespace: list[str], include_declared: bool | None) -> list[str]:
        try:
            tables = self._catalog.tables(self._catalog.database_ref(namespace))
        except NamespaceNotFoundError:
            return []  # dropped since it was listed
        return self._lance_table_names(tables, include_declared)

    def _storage_options(self) -> dict[str, str]:
        return dict(self._settings.storage)
