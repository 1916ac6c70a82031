"""The Unity namespace: Lance's namespace and table operations on Unity Catalog (the
open-source REST API, `api/2.1/unity-catalog`).

Identifiers are catalog.schema.table: the root lists catalogs, a catalog lists its schemas, and
a Lance table is an EXTERNAL Unity table (`catalog.py`). Its Unity `columns` are converted from
the Arrow schema of the data at its location (`columns.py`), and kept true when this server
writes.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, ClassVar

from lance_namespace import (
    AlterTableAddColumnsRequest,
    AlterTableAddColumnsResponse,
    AlterTableAlterColumnsRequest,
    AlterTableAlterColumnsResponse,
    AlterTableDropColumnsRequest,
    AlterTableDropColumnsResponse,
    CreateNamespaceRequest,
    CreateNamespaceResponse,
    CreateTableRequest,
    CreateTableResponse,
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
    InsertIntoTableRequest,
    InsertIntoTableResponse,
    LanceNamespaceError,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    NamespaceAlreadyExistsError,
    NamespaceNotFoundError,
    RegisterTableRequest,
    RegisterTableResponse,
    RenameTableRequest,
    RenameTableResponse,
    RestoreTableRequest,
    RestoreTableResponse,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)

from backends.core.extensions import AlterNamespaceRequest, AlterNamespaceResponse
from backends.core.lance_tables import open_lance_table, require_lance_table
from backends.core.locations import storage_root
from backends.core.modes import CreateMode, DropBehavior, DropMode, RegisterMode, parse_mode
from backends.core.names import joined_id
from backends.core.paging import paginate
from backends.core.properties import PropertyChanges, string_map
from backends.core.settings import BackendSettings
from backends.layouts import FixedDepthLayout, TableLayout
from backends.rest_catalog import (
    RestCatalogClient,
    RestCatalogNamespace,
    validate_location,
)
from backends.unity.catalog import UnityCatalog, is_lance, s3_credentials
from backends.unity.columns import unity_columns
from backends.unity.errors import NAMESPACE_ERRORS
from backends.unity.names import (
    API_PATH,
    UNITY_NAME,
    namespace_parts,
    schema_identifier,
    securable_identifier,
    table_identifier,
)
from backends.unity.settings import UnitySettings
from backends.vending import S3Credentials

logger = logging.getLogger(__name__)


class UnityNamespace(RestCatalogNamespace):
    """Lance tables registered in Unity Catalog as EXTERNAL tables."""

    settings_class: ClassVar[type[BackendSettings]] = UnitySettings

    def __init__(self, **properties: str) -> None:
        settings = UnitySettings.from_properties(properties)
        self.endpoint = settings.endpoint.rstrip("/")
        base_url = self.endpoint if self.endpoint.endswith(API_PATH) else self.endpoint + API_PATH
        self.root = storage_root(settings.root)
        self.storage_options = dict(settings.storage)
        self.client = RestCatalogClient(base_url, settings)
        self.catalog = UnityCatalog(self.client)

    def table_layout(self) -> TableLayout:
        return FixedDepthLayout(depth=3, is_name=lambda name: bool(UNITY_NAME.fullmatch(name)))

    def namespace_id(self) -> str:
        return f"UnityNamespace {{ endpoint: '{self.endpoint}' }}"

    def readiness_probe(self) -> None:
        """/readyz: the server lists one catalog."""
        self.client.get_json("/catalogs", params={"max_results": 1}, errors=NAMESPACE_ERRORS)

    # Namespaces: the root lists catalogs, a catalog lists schemas, a schema has no children.

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        parts = namespace_parts(request.id)
        if not parts:
            names = self.catalog.catalog_names()
        elif len(parts) == 1:
            names = self.catalog.schema_names(parts[0])
        else:
            self.catalog.securable(parts)
            names = []
        page, token = paginate(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        parts = namespace_parts(request.id)
        if not parts:
            return DescribeNamespaceResponse(properties={})  # the root always exists
        securable = self.catalog.securable(parts)
        return DescribeNamespaceResponse(properties=string_map(securable.get("properties")))

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        catalog, schema = schema_identifier(request.id)
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        if mode == "overwrite":
            self.catalog.delete_schema(catalog, schema, missing_ok=True)
        body = {
            "name": schema,
            "catalog_name": catalog,
            "properties": dict(request.properties or {}),
        }
        try:
            created = self.catalog.create_schema(body)
        except NamespaceAlreadyExistsError:
            if mode != CreateMode.EXIST_OK:
                raise
            existing = self.catalog.securable([catalog, schema])
            return CreateNamespaceResponse(properties=string_map(existing.get("properties")))
        return CreateNamespaceResponse(
            properties=string_map(created.get("properties", body["properties"]))
        )

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        catalog, schema = schema_identifier(request.id)
        skip_missing = parse_mode(request.mode, DropMode, DropMode.FAIL) == "skip"
        behavior = parse_mode(request.behavior, DropBehavior, DropBehavior.RESTRICT, "behavior")
        if behavior is DropBehavior.CASCADE:
            raise UnsupportedOperationError("the unity backend only drops schemas RESTRICT")
        self.catalog.delete_schema(catalog, schema, missing_ok=skip_missing)
        return DropNamespaceResponse()

    def alter_namespace(self, request: AlterNamespaceRequest) -> AlterNamespaceResponse:
        """UpdateCatalog / UpdateSchema with the whole new properties map: Unity replaces the
        map it is sent, and ignores an empty one."""
        parts = securable_identifier(request.id)
        changes = PropertyChanges.of(request.set_properties, request.unset_properties)
        current = string_map(self.catalog.securable(parts).get("properties"))
        wanted = changes.applied_to(current)
        if wanted == current:
            return AlterNamespaceResponse(properties=current)
        if not wanted:
            raise UnsupportedOperationError(
                "alter_namespace on the unity backend cannot remove every property of "
                f"{'.'.join(parts)}: Unity's update ignores an empty properties map"
            )
        updated = self.catalog.update_properties(parts, wanted)
        return AlterNamespaceResponse(properties=string_map(updated.get("properties")))

    # Tables

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        catalog, schema = schema_identifier(request.id)
        names = self._lance_table_names(catalog, schema, request.include_declared is not False)
        page, token = paginate(names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def list_all_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        """Every Lance table under `request.id` (the whole server when empty), `$`-joined."""
        scope = namespace_parts(request.id)
        with_declared = request.include_declared is not False
        identifiers = [
            joined_id([catalog, schema, name])
            for catalog, schema in self._schemas_under(scope)
            for name in self._lance_table_names(
                catalog, schema, with_declared, missing_ok=len(scope) < 2
            )
        ]
        page, token = paginate(identifiers, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def _schemas_under(self, scope: list[str]) -> list[tuple[str, str]]:
        if len(scope) == 2:
            return [(scope[0], scope[1])]
        catalogs = scope or self.catalog.catalog_names()
        schemas = []
        for catalog in catalogs:
            try:
                names = self.catalog.schema_names(catalog)
            except NamespaceNotFoundError:
                if scope:
                    raise
                continue  # dropped since the catalogs were listed
            schemas.extend((catalog, name) for name in names)
        return schemas

    def _lance_table_names(
        self, catalog: str, schema: str, with_declared: bool, missing_ok: bool = False
    ) -> list[str]:
        """The Lance tables of a schema; without declared ones, only those with data."""
        try:
            tables = self.catalog.tables(catalog, schema)
        except NamespaceNotFoundError:
            if not missing_ok:
                raise
            return []  # dropped since the schemas were listed
        lance_tables = [table for table in tables if is_lance(table) and table.get("name")]
        if not with_declared:
            lance_tables = [
                table for table in lance_tables if self.has_data_at(table.get("storage_location"))
            ]
        return [str(table["name"]) for table in lance_tables]

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        catalog, schema, name = table_identifier(request.id)
        location = (
            validate_location(request.location)
            if request.location is not None
            else self.own_location([catalog, schema, name])
        )
        dataset = open_lance_table(location, self.storage_options)
        columns = unity_columns(dataset.schema) if dataset is not None else []
        table = self.catalog.create_table(
            catalog, schema, name, location, columns, request.properties
        )
        return DeclareTableResponse(
            location=table.get("storage_location") or location,
            storage_options=dict(self.storage_options),
            properties=string_map(table.get("properties")),
        )

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        catalog, schema, name = table_identifier(request.id)
        mode = parse_mode(request.mode, RegisterMode, RegisterMode.CREATE)
        location = validate_location(request.location)
        dataset = require_lance_table(location, self.storage_options)
        replaced = (
            self._unregister_for_overwrite(catalog, schema, name) if mode == "overwrite" else None
        )
        columns = unity_columns(dataset.schema)
        try:
            table = self.catalog.create_table(
                catalog, schema, name, location, columns, request.properties
            )
        except LanceNamespaceError:
            if replaced is not None:  # put the previous registration back: nothing half-done
                with contextlib.suppress(LanceNamespaceError):
                    self.catalog.copy_table(replaced, catalog, schema, name)
            raise
        return RegisterTableResponse(
            location=table.get("storage_location") or location,
            properties=string_map(table.get("properties")),
        )

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        table = self.catalog.require_lance_table(*table_identifier(request.id))
        return DescribeTableResponse(
            location=table.get("storage_location"),
            storage_options=dict(self.storage_options),
            properties=string_map(table.get("properties")),
        )

    def catalog_credentials(self, table_id: list[str], access: str) -> S3Credentials | None:
        table = self.catalog.require_lance_table(*table_identifier(table_id))
        return s3_credentials(self.catalog.temporary_table_credentials(table, access))

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        catalog, schema, name = table_identifier(request.id)
        table = self.catalog.require_lance_table(catalog, schema, name)
        self.catalog.delete_table(catalog, schema, name)
        return DeregisterTableResponse(
            id=[catalog, schema, name],
            location=table.get("storage_location"),
            properties=string_map(table.get("properties")),
        )

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        """Unity's API has no rename: register the same entry under the new name, then remove
        the old one, removing the new one again if that fails. The data is not touched."""
        catalog, schema, name = table_identifier(request.id)
        target_namespace = (
            [catalog, schema] if request.new_namespace_id is None else request.new_namespace_id
        )
        target_catalog, target_schema = schema_identifier(target_namespace)
        target = table_identifier([target_catalog, target_schema, request.new_table_name])
        table = self.catalog.require_lance_table(catalog, schema, name)
        if target == (catalog, schema, name):
            raise TableAlreadyExistsError(f"table {'.'.join(target)} already exists")
        self.catalog.copy_table(table, *target)
        try:
            self.catalog.delete_table(catalog, schema, name)
        except LanceNamespaceError:
            with contextlib.suppress(LanceNamespaceError):
                self.catalog.delete_table(*target)
            raise
        return RenameTableResponse()

    def _unregister_for_overwrite(
        self, catalog: str, schema: str, name: str
    ) -> dict[str, Any] | None:
        """Remove the Lance table a RegisterTable Overwrite replaces; None when there is none."""
        try:
            table = self.catalog.require_lance_table(catalog, schema, name)
        except TableNotFoundError:
            return None
        self.catalog.delete_table(catalog, schema, name)
        return table

    # Writes keep the entry's columns true to the data: a table declared without data (by this
    # server: no columns; by lance-namespace-impls: a placeholder `__placeholder_id`) gets the
    # columns of its first data, and a schema change reaches Unity. Unity has no call that
    # changes columns, so the entry is registered again, everything else unchanged.

    def create_table(self, request: CreateTableRequest, request_data: bytes) -> CreateTableResponse:
        created = super().create_table(request, request_data)
        self._keep_columns_true(request)
        return created

    def insert_into_table(
        self, request: InsertIntoTableRequest, request_data: bytes
    ) -> InsertIntoTableResponse:
        inserted = super().insert_into_table(request, request_data)
        self._keep_columns_true(request)
        return inserted

    def alter_table_add_columns(
        self, request: AlterTableAddColumnsRequest
    ) -> AlterTableAddColumnsResponse:
        altered = super().alter_table_add_columns(request)
        self._keep_columns_true(request)
        return altered

    def alter_table_alter_columns(
        self, request: AlterTableAlterColumnsRequest
    ) -> AlterTableAlterColumnsResponse:
        altered = super().alter_table_alter_columns(request)
        self._keep_columns_true(request)
        return altered

    def alter_table_drop_columns(
        self, request: AlterTableDropColumnsRequest
    ) -> AlterTableDropColumnsResponse:
        altered = super().alter_table_drop_columns(request)
        self._keep_columns_true(request)
        return altered

    def restore_table(self, request: RestoreTableRequest) -> RestoreTableResponse:
        restored = super().restore_table(request)
        self._keep_columns_true(request)
        return restored

    def _keep_columns_true(self, request: Any) -> None:
        """Register the table again when its columns differ from its data's; the write has
        happened either way, so a refusal only leaves the old columns (and a warning)."""
        catalog, schema, name = table_identifier(request.id)
        try:
            table = self.catalog.require_lance_table(catalog, schema, name)
            dataset = open_lance_table(str(table.get("storage_location")), self.storage_options)
            if dataset is None:
                return
            columns = unity_columns(dataset.schema)
            if _column_types(table.get("columns")) != _column_types(columns):
                self.catalog.replace_columns(table, catalog, schema, name, columns)
        except LanceNamespaceError as error:
            logger.warning("table %s keeps its old columns in Unity: %s", request.id, error)


def _column_types(columns: Any) -> list[tuple[str, str, bool]]:
    """What the columns say about the data: names, SQL types and nullability, in order."""
    return [
        (str(column.get("name")), str(column.get("type_text")), bool(column.get("nullable")))
        for column in columns or []
        if isinstance(column, dict)
    ]
