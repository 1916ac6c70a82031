"""Lance namespace backed by an Apache Iceberg REST Catalog.

The first identifier level is the warehouse; the levels after it are (nested) Iceberg
namespaces, joined with the unit separator on the wire. A Lance table is kept as an Iceberg
table with a one-column dummy schema, located at the Lance table root and marked with the
property `table_type=lance`.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar
from urllib.parse import quote

from lance_namespace import (
    ConcurrentModificationError,
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
    AlterTableRequest,
    AlterTableResponse,
)
from backends.modes import CreateMode, DropBehavior, DropMode, RegisterMode, parse_mode
from backends.names import joined_id, require_object_identifier, validate_identifier
from backends.paging import paginate
from backends.rest_catalog_client import (
    ErrorRules,
    OAuth2ClientCredentials,
    RestCatalogClient,
    acts_for_the_caller,
    property_changes,
    string_map,
    validate_location,
)
from backends.rest_catalog_settings import IcebergSettings
from backends.settings import BackendSettings

NAMESPACE_SEPARATOR = "%1F"  # the unit separator \x1F, URL-encoded
LOAD_CONCURRENCY = 8
DUMMY_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "dummy", "required": False, "type": "string"}],
}

# What a 404/409 (or the server's exception type) means, per kind of call.
NAMESPACE_ERRORS: ErrorRules = {
    404: NamespaceNotFoundError,
    409: NamespaceAlreadyExistsError,
    "NoSuchNamespaceException": NamespaceNotFoundError,
    "AlreadyExistsException": NamespaceAlreadyExistsError,
}
DROP_NAMESPACE_ERRORS: ErrorRules = {
    404: NamespaceNotFoundError,
    409: NamespaceNotEmptyError,
    "NoSuchNamespaceException": NamespaceNotFoundError,
    "NamespaceNotEmptyException": NamespaceNotEmptyError,
}
TABLE_ERRORS: ErrorRules = {
    404: TableNotFoundError,
    409: TableAlreadyExistsError,
    "NoSuchTableException": TableNotFoundError,
    "NoSuchNamespaceException": NamespaceNotFoundError,
    "AlreadyExistsException": TableAlreadyExistsError,
}
CREATE_TABLE_ERRORS: ErrorRules = {**TABLE_ERRORS, 404: NamespaceNotFoundError}
WAREHOUSE_ERRORS: ErrorRules = {404: NamespaceNotFoundError}
# 422: a key both updated and removed.
NAMESPACE_PROPERTIES_ERRORS: ErrorRules = {**NAMESPACE_ERRORS, 422: InvalidInputError}
COMMIT_ERRORS: ErrorRules = {
    **TABLE_ERRORS,
    409: ConcurrentModificationError,
    "CommitFailedException": ConcurrentModificationError,
}


@acts_for_the_caller
class IcebergNamespace(MetadataNamespace):
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
        self._prefixes: dict[str, str] = {}
        self._prefix_lock = threading.Lock()

    def storage_root(self) -> str:
        return self.root

    def namespace_id(self) -> str:
        return f"IcebergNamespace {{ endpoint: '{self.endpoint}' }}"

    def close(self) -> None:
        self.client.close()

    def readiness_probe(self) -> None:
        """/readyz: the catalog's config endpoint (the protocol cannot list the root).

        A catalog that needs a warehouse answers 404 without one, which still shows it up."""
        with contextlib.suppress(NamespaceNotFoundError):
            self.client.get_json("/v1/config", errors=WAREHOUSE_ERRORS)

    # Namespaces

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        parts = validate_identifier(request.id, "namespace identifier")
        if not parts:
            raise UnsupportedOperationError(
                "the Iceberg REST protocol cannot list warehouses; list a warehouse instead"
            )
        warehouse, path = parts[0], parts[1:]
        params = {"parent": "\x1f".join(path)} if path else {}
        names = [
            entry[-1]
            for entry in self._collect_pages(
                self._base(warehouse) + "/namespaces", params, "namespaces", NAMESPACE_ERRORS
            )
            if isinstance(entry, list) and entry
        ]
        page, token = paginate(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=page, page_token=token)

    def describe_namespace(self, request: DescribeNamespaceRequest) -> DescribeNamespaceResponse:
        if not validate_identifier(request.id, "namespace identifier"):
            return DescribeNamespaceResponse(properties={})  # the root always exists
        warehouse, path = self._namespace(request.id)
        if not path:
            self._base(warehouse)  # an unknown warehouse fails its config lookup
            return DescribeNamespaceResponse(properties={})
        body = self.client.get_json(self._namespace_url(warehouse, path), errors=NAMESPACE_ERRORS)
        return DescribeNamespaceResponse(properties=string_map(body.get("properties")))

    def namespace_exists(self, request: NamespaceExistsRequest) -> NamespaceExistsResponse:
        self.describe_namespace(DescribeNamespaceRequest(id=request.id))
        return NamespaceExistsResponse()

    def create_namespace(self, request: CreateNamespaceRequest) -> CreateNamespaceResponse:
        warehouse, path = self._namespace(request.id)
        if not path:
            raise UnsupportedOperationError("warehouses are created in the catalog, not here")
        mode = parse_mode(request.mode, CreateMode, CreateMode.CREATE)
        if mode == "overwrite":
            self._drop_namespace(warehouse, path)
        body = {"namespace": path, "properties": dict(request.properties or {})}
        try:
            response = self.client.request(
                "POST", self._base(warehouse) + "/namespaces", json=body, errors=NAMESPACE_ERRORS
            )
        except NamespaceAlreadyExistsError:
            if mode != CreateMode.EXIST_OK:
                raise
            return CreateNamespaceResponse(
                properties=self.describe_namespace(
                    DescribeNamespaceRequest(id=request.id)
                ).properties
            )
        created = RestCatalogClient.json_body(response)
        properties = created.get("properties", body["properties"])
        return CreateNamespaceResponse(properties=string_map(properties))

    def drop_namespace(self, request: DropNamespaceRequest) -> DropNamespaceResponse:
        warehouse, path = self._namespace(request.id)
        if not path:
            raise UnsupportedOperationError("warehouses are dropped in the catalog, not here")
        skip_missing = parse_mode(request.mode, DropMode, DropMode.FAIL) is DropMode.SKIP
        behavior = parse_mode(request.behavior, DropBehavior, DropBehavior.RESTRICT, "behavior")
        if behavior is DropBehavior.CASCADE:
            raise UnsupportedOperationError("the iceberg backend only drops namespaces RESTRICT")
        if skip_missing:
            self._drop_namespace(warehouse, path)
        else:  # Fail, the spec's default: a missing namespace is NamespaceNotFound (code 1)
            self.client.request(
                "DELETE", self._namespace_url(warehouse, path), errors=DROP_NAMESPACE_ERRORS
            )
        return DropNamespaceResponse()

    def alter_namespace(self, request: AlterNamespaceRequest) -> AlterNamespaceResponse:
        warehouse, path = self._namespace(request.id)
        updates, removals = property_changes(request.set_properties, request.unset_properties)
        if not path:
            raise UnsupportedOperationError(
                "alter_namespace on the iceberg backend: a warehouse has no namespace properties"
            )
        if updates or removals:
            self.client.request(
                "POST",
                self._namespace_url(warehouse, path) + "/properties",
                json={"updates": updates, "removals": removals},
                errors=NAMESPACE_PROPERTIES_ERRORS,
            )
        described = self.describe_namespace(DescribeNamespaceRequest(id=request.id))
        return AlterNamespaceResponse(properties=described.properties)

    def _drop_namespace(self, warehouse: str, path: list[str]) -> None:
        """Drop a namespace; one that does not exist counts as dropped."""
        with contextlib.suppress(NamespaceNotFoundError):
            self.client.request(
                "DELETE", self._namespace_url(warehouse, path), errors=DROP_NAMESPACE_ERRORS
            )

    # Tables

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        warehouse, path = self._namespace(request.id)
        if not path:
            raise InvalidInputError("tables live in a namespace under the warehouse")
        with_declared = request.include_declared is not False
        lance_names = self._lance_tables(warehouse, path, with_declared)
        page, token = paginate(lance_names, request.page_token, request.limit)
        return ListTablesResponse(tables=page, page_token=token)

    def list_all_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        """Every Lance table under `request.id`, `$`-joined; an empty id means every namespace
        of the configured `warehouses`."""
        scope = validate_identifier(request.id, "namespace identifier")
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
            params = {"parent": "\x1f".join(parent)} if parent else {}
            entries = self._collect_pages(
                self._base(warehouse) + "/namespaces", params, "namespaces", NAMESPACE_ERRORS
            )
            children = [[*parent, entry[-1]] for entry in entries if _is_namespace(entry)]
            found.extend(children)
            pending.extend(children)
        return found

    def _lance_tables(self, warehouse: str, path: list[str], with_declared: bool) -> list[str]:
        """List a namespace's tables, load them concurrently (bounded) and keep the Lance ones;
        without declared tables, only those with Lance data at their location."""
        identifiers = self._collect_pages(
            self._namespace_url(warehouse, path) + "/tables", {}, "identifiers", NAMESPACE_ERRORS
        )
        names = [entry["name"] for entry in identifiers if isinstance(entry, dict)]

        def lance_or_none(name: str) -> str | None:
            try:
                table = self._load_table(warehouse, path, name)
            except TableNotFoundError:
                return None  # dropped between the listing and the load
            if not has_lance_table_type(_table_properties(table)):
                return None
            return name if with_declared or self._has_data(table) else None

        if not names:
            return []
        with ThreadPoolExecutor(max_workers=min(LOAD_CONCURRENCY, len(names))) as pool:
            return [name for name in pool.map(lance_or_none, names) if name is not None]

    def _has_data(self, table: dict[str, Any]) -> bool:
        location = _table_location(table)
        return location is not None and open_lance_table(location, self.storage_options) is not None

    def declare_table(self, request: DeclareTableRequest) -> DeclareTableResponse:
        warehouse, path, name = self._table(request.id)
        location = (
            validate_location(request.location)
            if request.location is not None
            else self._default_location(warehouse, path, name)
        )
        table = self._create_table(warehouse, path, name, location, request.properties)
        return DeclareTableResponse(
            location=_table_location(table) or location,
            storage_options=dict(self.storage_options),
            properties=_table_properties(table),
        )

    def register_table(self, request: RegisterTableRequest) -> RegisterTableResponse:
        warehouse, path, name = self._table(request.id)
        mode = parse_mode(request.mode, RegisterMode, RegisterMode.CREATE)
        location = validate_location(request.location)
        require_lance_table(location, self.storage_options)
        replaced = (
            self._unregister_for_overwrite(warehouse, path, name) if mode == "overwrite" else None
        )
        try:
            table = self._create_table(warehouse, path, name, location, request.properties)
        except LanceNamespaceError:
            if replaced is not None:  # put the previous registration back: nothing half-done
                with contextlib.suppress(LanceNamespaceError):
                    self._create_table(
                        warehouse,
                        path,
                        name,
                        str(_table_location(replaced)),
                        _table_properties(replaced),
                    )
            raise
        return RegisterTableResponse(
            location=_table_location(table) or location, properties=_table_properties(table)
        )

    def describe_table_entry(self, request: DescribeTableRequest) -> DescribeTableResponse:
        warehouse, path, name = self._table(request.id)
        table = self._require_lance_table(warehouse, path, name)
        return DescribeTableResponse(
            location=_table_location(table),
            storage_options=dict(self.storage_options),
            properties=_table_properties(table),
        )

    def table_exists(self, request: TableExistsRequest) -> TableExistsResponse:
        self.describe_table(DescribeTableRequest(id=request.id))
        return TableExistsResponse()

    def deregister_table(self, request: DeregisterTableRequest) -> DeregisterTableResponse:
        warehouse, path, name = self._table(request.id)
        table = self._require_lance_table(warehouse, path, name)
        self._delete_table(warehouse, path, name)
        return DeregisterTableResponse(
            id=[warehouse, *path, name],
            location=_table_location(table),
            properties=_table_properties(table),
        )

    def rename_table(self, request: RenameTableRequest) -> RenameTableResponse:
        warehouse, path, name = self._table(request.id)
        target_namespace = request.new_namespace_id
        if target_namespace is None:
            target_namespace = [warehouse, *path]
        target_warehouse, target_path, new_name = self._table(
            [*validate_identifier(target_namespace, "new namespace id"), request.new_table_name]
        )
        if target_warehouse != warehouse:
            raise UnsupportedOperationError(
                "rename_table on the iceberg backend cannot move a table to another warehouse"
            )
        self._require_lance_table(warehouse, path, name)
        if (target_path, new_name) == (path, name):
            raise TableAlreadyExistsError(f"table {'.'.join([*target_path, new_name])} exists")
        body = {
            "source": {"namespace": path, "name": name},
            "destination": {"namespace": target_path, "name": new_name},
        }
        self.client.request(
            "POST", self._base(warehouse) + "/tables/rename", json=body, errors=TABLE_ERRORS
        )
        return RenameTableResponse()

    def alter_table(self, request: AlterTableRequest) -> AlterTableResponse:
        """One CommitTable of set-properties / remove-properties, asserting it is still the
        table that was checked to be a Lance table."""
        warehouse, path, name = self._table(request.id)
        updates, removals = property_changes(
            request.set_properties, request.unset_properties, protected=(TABLE_TYPE_KEY,)
        )
        table = self._require_lance_table(warehouse, path, name)
        if not (updates or removals):
            return AlterTableResponse(properties=_table_properties(table))
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
        response = self.client.request(
            "POST", self._table_url(warehouse, path, name), json=body, errors=COMMIT_ERRORS
        )
        return AlterTableResponse(
            properties=_table_properties(RestCatalogClient.json_body(response))
        )

    def _unregister_for_overwrite(
        self, warehouse: str, path: list[str], name: str
    ) -> dict[str, Any] | None:
        """Remove the Lance table a RegisterTable Overwrite replaces; None when there is none."""
        try:
            table = self._require_lance_table(warehouse, path, name)
        except TableNotFoundError:
            return None
        self._delete_table(warehouse, path, name)
        return table

    # Catalog calls

    def _create_table(
        self,
        warehouse: str,
        path: list[str],
        name: str,
        location: str,
        properties: dict[str, str] | None,
    ) -> dict[str, Any]:
        body = {
            "name": name,
            "location": location,
            "schema": DUMMY_SCHEMA,
            "stage-create": False,
            "properties": {**(properties or {}), TABLE_TYPE_KEY: LANCE_TABLE_TYPE},
        }
        response = self.client.request(
            "POST",
            self._namespace_url(warehouse, path) + "/tables",
            json=body,
            errors=CREATE_TABLE_ERRORS,
        )
        return RestCatalogClient.json_body(response)

    def _load_table(self, warehouse: str, path: list[str], name: str) -> dict[str, Any]:
        return self.client.get_json(self._table_url(warehouse, path, name), errors=TABLE_ERRORS)

    def _require_lance_table(self, warehouse: str, path: list[str], name: str) -> dict[str, Any]:
        table = self._load_table(warehouse, path, name)
        if not has_lance_table_type(_table_properties(table)):
            dotted = ".".join([warehouse, *path, name])
            raise InvalidInputError(f"table {dotted} is not a Lance table")
        return table

    def _delete_table(self, warehouse: str, path: list[str], name: str) -> None:
        self.client.request(
            "DELETE",
            self._table_url(warehouse, path, name),
            params={"purgeRequested": "false"},
            errors=TABLE_ERRORS,
        )

    def _collect_pages(
        self, url: str, params: dict[str, str], field: str, errors: ErrorRules
    ) -> list[Any]:
        """Every item of a paged Iceberg listing (an empty first pageToken opts in to paging)."""
        items: list[Any] = []
        page_token = ""
        while True:
            body = self.client.get_json(
                url, params={**params, "pageToken": page_token}, errors=errors
            )
            items.extend(body.get(field) or [])
            page_token = body.get("next-page-token") or ""
            if not page_token:
                return items

    # Identifiers and paths

    def _base(self, warehouse: str) -> str:
        """`/v1/{prefix}` for a warehouse, from its cached `/v1/config` lookup."""
        with self._prefix_lock:
            prefix = self._prefixes.get(warehouse)
        if prefix is None:
            config = self.client.get_json(
                "/v1/config", params={"warehouse": warehouse}, errors=WAREHOUSE_ERRORS
            )
            overrides = config.get("overrides") or {}
            defaults = config.get("defaults") or {}
            prefix = str(overrides.get("prefix") or defaults.get("prefix") or warehouse)
            with self._prefix_lock:
                self._prefixes[warehouse] = prefix
        return f"/v1/{prefix.strip('/')}"

    def _namespace_url(self, warehouse: str, path: list[str]) -> str:
        encoded = NAMESPACE_SEPARATOR.join(quote(part, safe="") for part in path)
        return f"{self._base(warehouse)}/namespaces/{encoded}"

    def _table_url(self, warehouse: str, path: list[str], name: str) -> str:
        return f"{self._namespace_url(warehouse, path)}/tables/{quote(name, safe='')}"

    def _default_location(self, warehouse: str, path: list[str], name: str) -> str:
        return "/".join([self.root, warehouse, *path, name])

    @staticmethod
    def _namespace(identifier: list[str] | None) -> tuple[str, list[str]]:
        parts = require_object_identifier(identifier, "namespace")
        return parts[0], parts[1:]

    @staticmethod
    def _table(identifier: list[str] | None) -> tuple[str, list[str], str]:
        parts = require_object_identifier(identifier, "table")
        if len(parts) < 3:
            raise InvalidInputError(
                "an Iceberg table identifier is [warehouse, namespace..., table]"
            )
        return parts[0], parts[1:-1], parts[-1]


def _is_namespace(entry: Any) -> bool:
    return isinstance(entry, list) and bool(entry)


def _table_location(table: dict[str, Any]) -> str | None:
    metadata = table.get("metadata") or {}
    location = metadata.get("location")
    return str(location) if location else None


def _table_properties(table: dict[str, Any]) -> dict[str, str]:
    metadata = table.get("metadata") or {}
    return string_map(metadata.get("properties"))


__all__ = ["IcebergNamespace"]
