"""The Iceberg REST calls the namespace makes, per warehouse; a table's vended credentials come
from loading it with `X-Iceberg-Access-Delegation: vended-credentials` (`s3_credentials`).

A Lance table is kept as an Iceberg table with a one-column dummy schema, located at the Lance
table root and marked with the property `table_type=lance`.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any
from urllib.parse import quote

from lance_namespace import InvalidInputError, NamespaceNotEmptyError, NamespaceNotFoundError

from backends.core.lance_tables import LANCE_TABLE_TYPE, TABLE_TYPE_KEY, has_lance_table_type
from backends.core.properties import string_map
from backends.iceberg.errors import (
    COMMIT_ERRORS,
    CREATE_TABLE_ERRORS,
    DROP_NAMESPACE_ERRORS,
    NAMESPACE_ERRORS,
    NAMESPACE_PROPERTIES_ERRORS,
    TABLE_ERRORS,
    WAREHOUSE_ERRORS,
)
from backends.iceberg.names import encoded_namespace, is_namespace, parent_params
from backends.rest_catalog import ErrorRules, RestCatalogClient
from backends.vending import S3Credentials

DELEGATION_HEADER = {"X-Iceberg-Access-Delegation": "vended-credentials"}
# LoadTableResult's S3 keys (the spec's AWS configurations; the expiry is Iceberg's
# S3FileIOProperties.SESSION_TOKEN_EXPIRES_AT_MS).
ACCESS_KEY_ID = "s3.access-key-id"
SECRET_ACCESS_KEY = "s3.secret-access-key"
SESSION_TOKEN = "s3.session-token"
EXPIRES_AT_MS = "s3.session-token-expires-at-ms"
REGION_KEYS = ("client.region", "s3.region")
ENDPOINT = "s3.endpoint"

DUMMY_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "dummy", "required": False, "type": "string"}],
}


def table_location(table: dict[str, Any]) -> str | None:
    metadata = table.get("metadata") or {}
    location = metadata.get("location")
    return str(location) if location else None


def table_properties(table: dict[str, Any]) -> dict[str, str]:
    metadata = table.get("metadata") or {}
    return string_map(metadata.get("properties"))


def credential_config(table: dict[str, Any]) -> dict[str, str]:
    """A LoadTableResult's `config` under its `storage-credentials` entry with the longest
    prefix of the table's location: the spec has clients check those first."""
    location = (table_location(table) or "").rstrip("/") + "/"  # a prefix may end in `/`
    entries = [entry for entry in table.get("storage-credentials") or []
               if isinstance(entry, dict) and location.startswith(str(entry.get("prefix", "")))]
    best = max(entries, key=lambda entry: len(str(entry.get("prefix", ""))), default={})
    return {**string_map(table.get("config")), **string_map(best.get("config"))}


def s3_credentials(table: dict[str, Any]) -> S3Credentials | None:
    """The S3 credentials a LoadTableResult vends; None when it carries none."""
    config = credential_config(table)
    if not config.get(ACCESS_KEY_ID):
        return None
    expires = config.get(EXPIRES_AT_MS)
    return S3Credentials(
        access_key_id=config[ACCESS_KEY_ID],
        secret_access_key=config.get(SECRET_ACCESS_KEY, ""),
        session_token=config.get(SESSION_TOKEN),
        expires_at_millis=int(expires) if expires else None,
        region=next((config[key] for key in REGION_KEYS if config.get(key)), None),
        endpoint=config.get(ENDPOINT),
    )


class IcebergCatalog:
    """One Iceberg REST Catalog, through the backend's `RestCatalogClient`; remembers each
    warehouse's path prefix from its `/v1/config`."""

    def __init__(self, client: RestCatalogClient) -> None:
        self.client = client
        self._prefixes: dict[str, str] = {}
        self._prefix_lock = threading.Lock()

    # Namespaces

    def child_names(self, warehouse: str, parent: list[str]) -> list[str]:
        """The names of the namespaces directly below `parent` ([] for the top level)."""
        entries = self._collect_pages(
            self.base(warehouse) + "/namespaces", parent_params(parent), "namespaces",
            NAMESPACE_ERRORS,
        )
        return [entry[-1] for entry in entries if is_namespace(entry)]

    def namespace_properties(self, warehouse: str, path: list[str]) -> dict[str, str]:
        body = self.client.get_json(self.namespace_url(warehouse, path), errors=NAMESPACE_ERRORS)
        return string_map(body.get("properties"))

    def require_namespace(self, warehouse: str, path: list[str]) -> None:
        """NamespaceNotFound unless the namespace exists. Catalogs need not check it themselves:
        Iceberg's JdbcCatalog (the REST reference server's) creates a table, or a child
        namespace, under a namespace that does not exist, which then seems to exist."""
        if path:
            self.namespace_properties(warehouse, path)

    def create_namespace(
        self, warehouse: str, path: list[str], properties: dict[str, str]
    ) -> dict[str, str]:
        self.require_namespace(warehouse, path[:-1])
        body = {"namespace": path, "properties": properties}
        response = self.client.request(
            "POST", self.base(warehouse) + "/namespaces", json=body, errors=NAMESPACE_ERRORS
        )
        return string_map(RestCatalogClient.json_body(response).get("properties", properties))

    def drop_namespace(self, warehouse: str, path: list[str], missing_ok: bool) -> None:
        """RESTRICT: a namespace with child namespaces is NamespaceNotEmpty here, as one with
        tables is in the catalog (JdbcCatalog drops a parent and leaves its children behind)."""
        try:
            if self.child_names(warehouse, path):
                raise NamespaceNotEmptyError(
                    f"namespace {'.'.join([warehouse, *path])} holds namespaces"
                )
            self.client.request(
                "DELETE", self.namespace_url(warehouse, path), errors=DROP_NAMESPACE_ERRORS
            )
        except NamespaceNotFoundError:
            if not missing_ok:
                raise

    def update_namespace_properties(
        self, warehouse: str, path: list[str], updates: dict[str, str], removals: list[str]
    ) -> None:
        self.client.request(
            "POST",
            self.namespace_url(warehouse, path) + "/properties",
            json={"updates": updates, "removals": removals},
            errors=NAMESPACE_PROPERTIES_ERRORS,
        )

    # Tables

    def table_names(self, warehouse: str, path: list[str]) -> list[str]:
        identifiers = self._collect_pages(
            self.namespace_url(warehouse, path) + "/tables", {}, "identifiers", NAMESPACE_ERRORS
        )
        return [entry["name"] for entry in identifiers if isinstance(entry, dict)]

    def create_table(
        self,
        warehouse: str,
        path: list[str],
        name: str,
        location: str,
        properties: dict[str, str] | None,
    ) -> dict[str, Any]:
        self.require_namespace(warehouse, path)
        body = {
            "name": name,
            "location": location,
            "schema": DUMMY_SCHEMA,
            "stage-create": False,
            "properties": {**(properties or {}), TABLE_TYPE_KEY: LANCE_TABLE_TYPE},
        }
        response = self.client.request(
            "POST",
            self.namespace_url(warehouse, path) + "/tables",
            json=body,
            errors=CREATE_TABLE_ERRORS,
        )
        return RestCatalogClient.json_body(response)

    def load_table(
        self, warehouse: str, path: list[str], name: str, delegated: bool = False
    ) -> dict[str, Any]:
        """LoadTable; `delegated` asks the catalog for vended credentials."""
        return self.client.get_json(
            self.table_url(warehouse, path, name), errors=TABLE_ERRORS,
            headers=DELEGATION_HEADER if delegated else None,
        )

    def require_lance_table(
        self, warehouse: str, path: list[str], name: str, delegated: bool = False
    ) -> dict[str, Any]:
        table = self.load_table(warehouse, path, name, delegated)
        if not has_lance_table_type(table_properties(table)):
            dotted = ".".join([warehouse, *path, name])
            raise InvalidInputError(f"table {dotted} is not a Lance table")
        return table

    def delete_table(self, warehouse: str, path: list[str], name: str) -> None:
        self.client.request(
            "DELETE",
            self.table_url(warehouse, path, name),
            params={"purgeRequested": "false"},
            errors=TABLE_ERRORS,
        )

    def rename_table(self, warehouse: str, source: dict[str, Any], target: dict[str, Any]) -> None:
        body = {"source": source, "destination": target}
        self.client.request(
            "POST", self.base(warehouse) + "/tables/rename", json=body, errors=TABLE_ERRORS
        )

    def commit_table(
        self, warehouse: str, path: list[str], name: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        response = self.client.request(
            "POST", self.table_url(warehouse, path, name), json=body, errors=COMMIT_ERRORS
        )
        return RestCatalogClient.json_body(response)

    # Paths

    def probe(self, warehouse: str | None) -> None:
        """The catalog's config endpoint answers, for `warehouse` (the first the operator
        named; the protocol cannot list the root). Without one, a catalog that needs a
        warehouse answers 404 or 400 (Polaris-style), which still shows it up."""
        if warehouse:
            self.client.get_json("/v1/config", params={"warehouse": warehouse},
                                 errors=WAREHOUSE_ERRORS)
            return
        with contextlib.suppress(NamespaceNotFoundError, InvalidInputError):
            self.client.get_json("/v1/config", errors=WAREHOUSE_ERRORS)

    def base(self, warehouse: str) -> str:
        """`/v1/{prefix}` for a warehouse, from its cached `/v1/config` lookup (`/v1` when the
        catalog announces no prefix, as the spec and its clients have it); an unknown warehouse
        fails it."""
        with self._prefix_lock:
            prefix = self._prefixes.get(warehouse)
        if prefix is None:
            config = self.client.get_json(
                "/v1/config", params={"warehouse": warehouse}, errors=WAREHOUSE_ERRORS
            )
            overrides = config.get("overrides") or {}
            defaults = config.get("defaults") or {}
            prefix = str(overrides.get("prefix") or defaults.get("prefix") or "").strip("/")
            with self._prefix_lock:
                self._prefixes[warehouse] = prefix
        return f"/v1/{prefix}" if prefix else "/v1"

    def namespace_url(self, warehouse: str, path: list[str]) -> str:
        return f"{self.base(warehouse)}/namespaces/{encoded_namespace(path)}"

    def table_url(self, warehouse: str, path: list[str], name: str) -> str:
        return f"{self.namespace_url(warehouse, path)}/tables/{quote(name, safe='')}"

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
