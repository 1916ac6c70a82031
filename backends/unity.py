"""Lance namespace backed by Unity Catalog (the open-source REST API, `api/2.1/unity-catalog`).

Identifiers are catalog.schema.table: the root lists catalogs, a catalog lists its schemas, and
a Lance table is an EXTERNAL Unity table with data source format TEXT, its storage location at
the Lance table root and the property `table_type=lance`. When the location already holds a
Lance table, its Arrow schema is converted to Unity `columns`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import quote

import pyarrow as pa
from lance_namespace import (
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
    TableAlreadyExistsError,
    TableExistsRequest,
    TableExistsResponse,
    TableNotFoundError,
    UnsupportedOperationError,
)

from backends.base import MetadataNamespace
from backends.conventions import (
    LANCE_TABLE_TYPE,
    TABLE_TYPE_KEY,
    has_lance_table_type,
    open_lance_table,
    require_lance_table,
    storage_root,
)
from backends.extensions import (
    AlterNamespaceRequest,
    AlterNamespaceResponse,
)
from backends.modes import CreateMode, DropBehavior, DropMode, RegisterMode, parse_mode
from backends.names import joined_id, require_object_identifier, validate_identifier
from backends.paging import paginate
from backends.rest_catalog_client import (
    ErrorRules,
    RestCatalogClient,
    acts_for_the_caller,
    property_changes,
    string_map,
    validate_location,
)
from backends.rest_catalog_settings import UnitySettings
from backends.settings import BackendSettings

logger = logging.getLogger(__name__)
API_PATH = "/api/2.1/unity-catalog"
PAGE_SIZE = 1000
# Unity Catalog's own rule for catalog, schema and table names.
UNITY_NAME = re.compile(r"[A-Za-z0-9_@-]{1,255}")

# What a refusal means, per kind of call. Unity answers "already exists" with 409
# ALREADY_EXISTS (older servers) or 400 <KIND>_ALREADY_EXISTS (newer ones).
NAMESPACE_ERRORS: ErrorRules = {
    404: NamespaceNotFoundError,
    409: NamespaceAlreadyExistsError,
    "ALREADY_EXISTS": NamespaceAlreadyExistsError,
    "SCHEMA_ALREADY_EXISTS": NamespaceAlreadyExistsError,
    "RESOURCE_ALREADY_EXISTS": NamespaceAlreadyExistsError,
}
DROP_SCHEMA_ERRORS: ErrorRules = {
    404: NamespaceNotFoundError,
    "FAILED_PRECONDITION": NamespaceNotEmptyError,
}
TABLE_ERRORS: ErrorRules = {404: TableNotFoundError}
CREATE_TABLE_ERRORS: ErrorRules = {
    404: NamespaceNotFoundError,
    409: TableAlreadyExistsError,
    "ALREADY_EXISTS": TableAlreadyExistsError,
    "TABLE_ALREADY_EXISTS": TableAlreadyExistsError,
    "RESOURCE_ALREADY_EXISTS": TableAlreadyExistsError,
}
# What a renamed table keeps: every CreateTable field but its name, catalog and schema.
COPIED_TABLE_FIELDS = (
    "table_type",
    "data_source_format",
    "columns",
    "storage_location",
    "comment",
    "properties",
)


@acts_for_the_caller
class UnityNamespace(MetadataNamespace):
    """Lance tables registered in Unity Catalog as EXTERNAL tables."""

    settings_class: ClassVar[type[BackendSettings]] = UnitySettings

    def __init__(self, **properties: str) -> None:
        settings = UnitySettings.from_properties(properties)
        self.endpoint = settings.endpoint.rstrip("/")
        base_url = self.endpoint if self.endpoint.endswith(API_PATH) else self.endpoint + API_PATH
        self.root = storage_root(settings.root)
        self.storage_options = dict(settings.storage)
        self.client = RestCatalogClient(base_url, settings)

    def storage_root(self) -> str:
        return self.root

    def namespace_id(self) -> str:
        return f"UnityNamespace {{ endpoint: '{self.endpoint}' }}"

    def close(self) -> None:
        self.client.close()

    def readiness_probe(self) -> None:
        """/readyz: the server lists one catalog."""
        self.client.get_json("/catalogs", params={"max_results": 1}, errors=NAMESPACE_ERRORS)

    # Namespaces: the root lists catalogs, a catalog lists schemas, a schema has no children.

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        parts = _unity_identifier(request.id, "namespace", max_levels=2)
        if not parts:
            names = self._collect_names("/catalogs", {}, "catalogs", NAMESPACE_ERRORS)
        elif len(parts) == 1:
            params = {"catalog_name": parts[0]}
            names = self._collect_names("/schemas", params, "schemas", NAMESPACE_ERRORS)
        else:
            self._get_schema(parts[0], parts[1])
            names = []
        page, token = paginate(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        parts = _unity_identifier(request.id, "namespace", max_levels=2)
        if not parts:
            return DescribeNamespaceResponse(properties={})  # the root always exists
        if len(parts) == 1:
            catalog = self.client.get_json(f"/catalogs/{_quote(parts[0])}", errors=NAMESPACE_ERRORS)
            return DescribeNamespaceResponse(properties=string_map(catalog.get("properties")))
        schema = self._get_schema(parts[0], parts[1])
        return DescribeNamespaceResponse(properties=string_map(schema.get("properties")))

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        self.describe_namespace(DescribeNamespaceRequest(id=request.id))
        return NamespaceExistsResponse()

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        catalog, schema = self._schema_identifier(request.id)
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        if mode == "overwrite":
            self._delete_schema(catalog, schema, missing_ok=True)
        body = {
            "name": schema,
            "catalog_name": catalog,
            "properties": dict(request.properties or {}),
        }
        try:
            response = self.client.request("POST", "/schemas", json=body, errors=NAMESPACE_ERRORS)
        except NamespaceAlreadyExistsError:
            if mode != CreateMode.EXIST_OK:
                raise
            existing = self._get_schema(catalog, schema)
            return CreateNamespaceResponse(properties=string_map(existing.get("properties")))
        created = RestCatalogClient.json_body(response)
        return CreateNamespaceResponse(
            properties=string_map(created.get("properties", body["properties"]))
        )

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        catalog, schema = self._schema_identifier(request.id)
        skip_missing = parse_mode(request.mode, DropMode, DropMode.FAIL) == "skip"
        behavior = parse_mode(request.behavior, DropBehavior, DropBehavior.RESTRICT, "behavior")
        if behavior is DropBehavior.CASCADE:
            raise UnsupportedOperationError("the unity backend only drops schemas RESTRICT")
        self._delete_schema(catalog, schema, missing_ok=skip_missing)
        return DropNamespaceResponse()

    def alter_namespace(self, request: AlterNamespaceRequest) -> AlterNamespaceResponse:
        """UpdateCatalog / UpdateSchema with the whole new properties map: Unity replaces the
        map it is sent, and ignores an empty one."""
        parts = _unity_identifier(request.id, "namespace", max_levels=2, min_levels=1)
        updates, removals = property_changes(request.set_properties, request.unset_properties)
        path = _securable_path(parts)
        current = string_map(self.client.get_json(path, errors=NAMESPACE_ERRORS).get("properties"))
        wanted = {key: value for key, value in current.items() if key not in removals} | updates
        if wanted == current:
            return AlterNamespaceResponse(properties=current)
        if not wanted:
            raise UnsupportedOperationError(
                "alter_namespace on the unity backend cannot remove every property of "
                f"{'.'.join(parts)}: Unity's update ignores an empty properties map"
            )
        response = self.client.request(
            "PATCH", path, json={"properties": wanted}, errors=NAMESPACE_ERRORS
        )
        updated = RestCatalogClient.json_body(response)
        return AlterNamespaceResponse(properties=string_map(updated.get("properties")))

    def _get_schema(self, catalog: str, schema: str) -> dict[str, Any]:
        return self.client.get_json(
            f"/schemas/{_quote(catalog)}.{_quote(schema)}", errors=NAMESPACE_ERRORS
        )

    def _delete_schema(self, catalog: str, schema: str, missing_ok: bool) -> None:
        try:
            self.client.request(
                "DELETE",
                f"/schemas/{_quote(catalog)}.{_quote(schema)}",
                params={"force": "false"},
                errors=DROP_SCHEMA_ERRORS,
            )
        except NamespaceNotFoundError:
            if not missing_ok:
                raise

    # Tables

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        catalog, schema = self._schema_identifier(request.id)
        names = self._lance_table_names(catalog, schema, request.include_declared is not False)
        page, token = paginate(names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def list_all_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        """Every Lance table under `request.id` (the whole server when empty), `$`-joined."""
        scope = _unity_identifier(request.id, "namespace", max_levels=2)
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
        catalogs = scope or self._collect_names("/catalogs", {}, "catalogs", NAMESPACE_ERRORS)
        schemas = []
        for catalog in catalogs:
            try:
                names = self._collect_names(
                    "/schemas", {"catalog_name": catalog}, "schemas", NAMESPACE_ERRORS
                )
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
        params = {"catalog_name": catalog, "schema_name": schema}
        try:
            tables = self._collect("/tables", params, "tables", NAMESPACE_ERRORS)
        except NamespaceNotFoundError:
            if not missing_ok:
                raise
            return []  # dropped since the schemas were listed
        lance_tables = [table for table in tables if _is_lance(table) and table.get("name")]
        if not with_declared:
            lance_tables = [table for table in lance_tables if self._has_data(table)]
        return [str(table["name"]) for table in lance_tables]

    def _has_data(self, table: Mapping[str, Any]) -> bool:
        location = table.get("storage_location")
        return bool(location) and open_lance_table(str(location), self.storage_options) is not None

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        catalog, schema, name = self._table_identifier(request.id)
        location = (
            validate_location(request.location)
            if request.location is not None
            else f"{self.root}/{catalog}/{schema}/{name}"
        )
        dataset = open_lance_table(location, self.storage_options)
        columns = unity_columns(dataset.schema) if dataset is not None else []
        table = self._create_table(catalog, schema, name, location, columns, request.properties)
        return DeclareTableResponse(
            location=table.get("storage_location") or location,
            storage_options=dict(self.storage_options),
            properties=string_map(table.get("properties")),
        )

    def create_table(self, request: CreateTableRequest, request_data: bytes) -> CreateTableResponse:
        """The generic CreateTable, then the registration again with the columns of the data
        just written: Unity cannot add columns to a table entry that exists."""
        created = super().create_table(request, request_data)
        try:
            self.register_table(
                RegisterTableRequest(
                    id=request.id,
                    location=created.location,
                    mode="overwrite",
                    properties=created.properties,
                    identity=request.identity,
                    context=request.context,
                )
            )
        except LanceNamespaceError:
            logger.warning("table %s keeps its registration without columns", request.id)
        return created

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        catalog, schema, name = self._table_identifier(request.id)
        mode = parse_mode(request.mode, RegisterMode, RegisterMode.CREATE)
        location = validate_location(request.location)
        dataset = require_lance_table(location, self.storage_options)
        replaced = (
            self._unregister_for_overwrite(catalog, schema, name) if mode == "overwrite" else None
        )
        columns = unity_columns(dataset.schema)
        try:
            table = self._create_table(catalog, schema, name, location, columns, request.properties)
        except LanceNamespaceError:
            if replaced is not None:  # put the previous registration back: nothing half-done
                with contextlib.suppress(LanceNamespaceError):
                    self._create_table(
                        catalog,
                        schema,
                        name,
                        str(replaced.get("storage_location")),
                        replaced.get("columns") or [],
                        string_map(replaced.get("properties")),
                    )
            raise
        return RegisterTableResponse(
            location=table.get("storage_location") or location,
            properties=string_map(table.get("properties")),
        )

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        table = self._require_lance_table(*self._table_identifier(request.id))
        return DescribeTableResponse(
            location=table.get("storage_location"),
            storage_options=dict(self.storage_options),
            properties=string_map(table.get("properties")),
        )

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        self.describe_table(DescribeTableRequest(id=request.id))
        return TableExistsResponse()

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        catalog, schema, name = self._table_identifier(request.id)
        table = self._require_lance_table(catalog, schema, name)
        self._delete_table(catalog, schema, name)
        return DeregisterTableResponse(
            id=[catalog, schema, name],
            location=table.get("storage_location"),
            properties=string_map(table.get("properties")),
        )

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        """Unity's API has no rename: register the same entry under the new name, then remove
        the old one, removing the new one again if that fails. The data is not touched."""
        catalog, schema, name = self._table_identifier(request.id)
        target_namespace = (
            [catalog, schema] if request.new_namespace_id is None else request.new_namespace_id
        )
        target_catalog, target_schema = self._schema_identifier(target_namespace)
        target = self._table_identifier([target_catalog, target_schema, request.new_table_name])
        table = self._require_lance_table(catalog, schema, name)
        if target == (catalog, schema, name):
            raise TableAlreadyExistsError(f"table {'.'.join(target)} already exists")
        self._copy_table(table, *target)
        try:
            self._delete_table(catalog, schema, name)
        except LanceNamespaceError:
            with contextlib.suppress(LanceNamespaceError):
                self._delete_table(*target)
            raise
        return RenameTableResponse()

    def _unregister_for_overwrite(
        self, catalog: str, schema: str, name: str
    ) -> dict[str, Any] | None:
        """Remove the Lance table a RegisterTable Overwrite replaces; None when there is none."""
        try:
            table = self._require_lance_table(catalog, schema, name)
        except TableNotFoundError:
            return None
        self._delete_table(catalog, schema, name)
        return table

    # Catalog calls

    def _create_table(
        self,
        catalog: str,
        schema: str,
        name: str,
        location: str,
        columns: list[dict[str, Any]],
        properties: Mapping[str, str] | None,
    ) -> dict[str, Any]:
        body = {
            "name": name,
            "catalog_name": catalog,
            "schema_name": schema,
            "table_type": "EXTERNAL",
            "data_source_format": "TEXT",
            "columns": columns,
            "storage_location": location,
            "properties": {**(properties or {}), TABLE_TYPE_KEY: LANCE_TABLE_TYPE},
        }
        response = self.client.request("POST", "/tables", json=body, errors=CREATE_TABLE_ERRORS)
        return RestCatalogClient.json_body(response)

    def _copy_table(self, table: Mapping[str, Any], catalog: str, schema: str, name: str) -> None:
        body = {"name": name, "catalog_name": catalog, "schema_name": schema}
        body |= {key: table[key] for key in COPIED_TABLE_FIELDS if table.get(key) is not None}
        self.client.request("POST", "/tables", json=body, errors=CREATE_TABLE_ERRORS)

    def _require_lance_table(self, catalog: str, schema: str, name: str) -> dict[str, Any]:
        full_name = f"{_quote(catalog)}.{_quote(schema)}.{_quote(name)}"
        table = self.client.get_json(f"/tables/{full_name}", errors=TABLE_ERRORS)
        if not _is_lance(table):
            raise InvalidInputError(f"table {catalog}.{schema}.{name} is not a Lance table")
        return table

    def _delete_table(self, catalog: str, schema: str, name: str) -> None:
        full_name = f"{_quote(catalog)}.{_quote(schema)}.{_quote(name)}"
        self.client.request("DELETE", f"/tables/{full_name}", errors=TABLE_ERRORS)

    def _collect(
        self, path: str, params: dict[str, str], field: str, errors: ErrorRules
    ) -> list[dict[str, Any]]:
        """Every item of a paged Unity listing."""
        items: list[dict[str, Any]] = []
        page_token: str | None = None
        while True:
            query = {**params, "max_results": str(PAGE_SIZE)}
            if page_token:
                query["page_token"] = page_token
            body = self.client.get_json(path, params=query, errors=errors)
            items.extend(item for item in body.get(field) or [] if isinstance(item, dict))
            page_token = body.get("next_page_token")
            if not page_token:
                return items

    def _collect_names(
        self, path: str, params: dict[str, str], field: str, errors: ErrorRules
    ) -> list[str]:
        return [
            str(item["name"])
            for item in self._collect(path, params, field, errors)
            if item.get("name")
        ]

    # Identifiers

    @staticmethod
    def _schema_identifier(identifier: list[str] | None) -> tuple[str, str]:
        parts = _unity_identifier(identifier, "namespace", max_levels=2, min_levels=2)
        return parts[0], parts[1]

    @staticmethod
    def _table_identifier(identifier: list[str] | None) -> tuple[str, str, str]:
        parts = _unity_identifier(identifier, "table", max_levels=3, min_levels=3)
        return parts[0], parts[1], parts[2]


def _unity_identifier(
    identifier: list[str] | None, kind: str, max_levels: int, min_levels: int = 0
) -> list[str]:
    """Validate an identifier against the common rules, Unity's levels and Unity's name rule."""
    if min_levels:
        parts = require_object_identifier(identifier, kind)
    else:
        parts = validate_identifier(identifier, f"{kind} identifier")
    if not min_levels <= len(parts) <= max_levels:
        shape = "catalog.schema.table" if kind == "table" else "catalog or catalog.schema"
        raise InvalidInputError(f"a Unity {kind} identifier is {shape}, got {parts}")
    for part in parts:
        if not UNITY_NAME.fullmatch(part):
            raise InvalidInputError(
                f"Unity names use only letters, digits, '_', '-' and '@': {part!r}"
            )
    return parts


def _is_lance(table: Mapping[str, Any]) -> bool:
    return str(table.get("table_type", "")).upper() == "EXTERNAL" and has_lance_table_type(
        table.get("properties")
    )


def _quote(name: str) -> str:
    return quote(name, safe="")


def _securable_path(parts: list[str]) -> str:
    """The API path of a catalog ([catalog]) or a schema ([catalog, schema])."""
    if len(parts) == 1:
        return f"/catalogs/{_quote(parts[0])}"
    return f"/schemas/{_quote(parts[0])}.{_quote(parts[1])}"


# Arrow schema -> Unity columns. Unity describes a column the way Spark does: a type name
# (ColumnTypeName), a SQL type text and the Spark JSON of the field.

_SIMPLE_TYPES: list[tuple[Any, str, str, str]] = [
    # (arrow predicate, type_name, Spark JSON type, SQL type text)
    (pa.types.is_boolean, "BOOLEAN", "boolean", "boolean"),
    (pa.types.is_int8, "BYTE", "byte", "tinyint"),
    (lambda t: pa.types.is_int16(t) or pa.types.is_uint8(t), "SHORT", "short", "smallint"),
    (lambda t: pa.types.is_int32(t) or pa.types.is_uint16(t), "INT", "integer", "int"),
    (lambda t: pa.types.is_int64(t) or pa.types.is_uint32(t), "LONG", "long", "bigint"),
    (lambda t: pa.types.is_float16(t) or pa.types.is_float32(t), "FLOAT", "float", "float"),
    (pa.types.is_float64, "DOUBLE", "double", "double"),
    (
        lambda t: (
            pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
        ),
        "STRING",
        "string",
        "string",
    ),
    (
        lambda t: (
            pa.types.is_binary(t)
            or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t)
            or pa.types.is_binary_view(t)
        ),
        "BINARY",
        "binary",
        "binary",
    ),
    (pa.types.is_date, "DATE", "date", "date"),
    (pa.types.is_null, "NULL", "void", "void"),
]


def unity_columns(schema: pa.Schema) -> list[dict[str, Any]]:
    """Unity `ColumnInfo`s for the top-level fields of an Arrow schema."""
    columns = []
    for position, field in enumerate(schema):
        type_name, spark_type, type_text = _unity_type(field.type)
        column: dict[str, Any] = {
            "name": field.name,
            "type_name": type_name,
            "type_text": type_text,
            "type_json": json.dumps(_spark_field(field.name, spark_type, field.nullable)),
            "position": position,
            "nullable": field.nullable,
        }
        if pa.types.is_decimal(field.type):
            column["type_precision"] = field.type.precision
            column["type_scale"] = field.type.scale
        elif pa.types.is_uint64(field.type):
            column["type_precision"], column["type_scale"] = 20, 0
        columns.append(column)
    return columns


def _spark_field(name: str, spark_type: Any, nullable: bool) -> dict[str, Any]:
    return {"name": name, "type": spark_type, "nullable": nullable, "metadata": {}}


def _unity_type(data_type: pa.DataType) -> tuple[str, Any, str]:
    """(type_name, Spark JSON type, SQL type text) for an Arrow type."""
    if pa.types.is_dictionary(data_type):
        return _unity_type(data_type.value_type)
    for predicate, type_name, spark_type, type_text in _SIMPLE_TYPES:
        if predicate(data_type):
            return type_name, spark_type, type_text
    if pa.types.is_uint64(data_type):
        return "DECIMAL", "decimal(20,0)", "decimal(20,0)"
    if pa.types.is_decimal(data_type):
        text = f"decimal({data_type.precision},{data_type.scale})"
        return "DECIMAL", text, text
    if pa.types.is_timestamp(data_type):
        if data_type.tz:
            return "TIMESTAMP", "timestamp", "timestamp"
        return "TIMESTAMP_NTZ", "timestamp_ntz", "timestamp_ntz"
    if _is_list(data_type):
        element = data_type.value_field
        _, element_json, element_text = _unity_type(element.type)
        spark = {"type": "array", "elementType": element_json, "containsNull": element.nullable}
        return "ARRAY", spark, f"array<{element_text}>"
    if pa.types.is_struct(data_type):
        return _struct_type(data_type)
    if pa.types.is_map(data_type):
        _, key_json, key_text = _unity_type(data_type.key_type)
        item = data_type.item_field
        _, value_json, value_text = _unity_type(item.type)
        spark = {
            "type": "map",
            "keyType": key_json,
            "valueType": value_json,
            "valueContainsNull": item.nullable,
        }
        return "MAP", spark, f"map<{key_text},{value_text}>"
    # Times, durations and other types Spark SQL has no name for.
    return "USER_DEFINED_TYPE", str(data_type), str(data_type)


def _is_list(data_type: pa.DataType) -> bool:
    return (
        pa.types.is_list(data_type)
        or pa.types.is_large_list(data_type)
        or pa.types.is_fixed_size_list(data_type)
        or pa.types.is_list_view(data_type)
        or pa.types.is_large_list_view(data_type)
    )


def _struct_type(data_type: pa.StructType) -> tuple[str, Any, str]:
    fields, texts = [], []
    for index in range(data_type.num_fields):
        child = data_type.field(index)
        _, child_json, child_text = _unity_type(child.type)
        fields.append(_spark_field(child.name, child_json, child.nullable))
        texts.append(f"{child.name}:{child_text}")
    return "STRUCT", {"type": "struct", "fields": fields}, f"struct<{','.join(texts)}>"


__all__ = ["UnityNamespace", "unity_columns"]
