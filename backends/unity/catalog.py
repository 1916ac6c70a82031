"""The Unity Catalog calls the namespace makes: paged listings, schemas, table entries and the
table's temporary credentials (`temporary-table-credentials`, relayed by credential vending).

A Lance table is an EXTERNAL Unity table with data source format TEXT, its storage location at
the Lance table root and the property `table_type=lance`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from lance_namespace import InvalidInputError, LanceNamespaceError, NamespaceNotFoundError

from backends.core.lance_tables import LANCE_TABLE_TYPE, TABLE_TYPE_KEY, has_lance_table_type
from backends.rest_catalog import RestCatalogClient
from backends.unity.errors import (
    CREATE_TABLE_ERRORS,
    DROP_SCHEMA_ERRORS,
    NAMESPACE_ERRORS,
    TABLE_ERRORS,
)
from backends.unity.names import securable_path, table_path
from backends.vending import READ, READ_WRITE, S3Credentials

PAGE_SIZE = 1000
# The TableOperation of GenerateTemporaryTableCredential for each vending access level.
TABLE_OPERATIONS = {READ: "READ", READ_WRITE: "READ_WRITE"}
# What a renamed table keeps: every CreateTable field but its name, catalog and schema.
COPIED_TABLE_FIELDS = (
    "table_type",
    "data_source_format",
    "columns",
    "storage_location",
    "comment",
    "properties",
)


def is_lance(table: Mapping[str, Any]) -> bool:
    return str(table.get("table_type", "")).upper() == "EXTERNAL" and has_lance_table_type(
        table.get("properties")
    )


class UnityCatalog:
    """One Unity Catalog server, through the backend's `RestCatalogClient`."""

    def __init__(self, client: RestCatalogClient) -> None:
        self.client = client

    def collect(self, path: str, params: dict[str, str], field: str) -> list[dict[str, Any]]:
        """Every item of a paged Unity listing."""
        items: list[dict[str, Any]] = []
        page_token: str | None = None
        while True:
            query = {**params, "max_results": str(PAGE_SIZE)}
            if page_token:
                query["page_token"] = page_token
            body = self.client.get_json(path, params=query, errors=NAMESPACE_ERRORS)
            items.extend(item for item in body.get(field) or [] if isinstance(item, dict))
            page_token = body.get("next_page_token")
            if not page_token:
                return items

    def collect_names(self, path: str, params: dict[str, str], field: str) -> list[str]:
        return [str(item["name"]) for item in self.collect(path, params, field) if item.get("name")]

    def catalog_names(self) -> list[str]:
        return self.collect_names("/catalogs", {}, "catalogs")

    def schema_names(self, catalog: str) -> list[str]:
        return self.collect_names("/schemas", {"catalog_name": catalog}, "schemas")

    def tables(self, catalog: str, schema: str) -> list[dict[str, Any]]:
        return self.collect("/tables", {"catalog_name": catalog, "schema_name": schema}, "tables")

    def securable(self, parts: list[str]) -> dict[str, Any]:
        """A catalog ([catalog]) or a schema ([catalog, schema])."""
        return self.client.get_json(securable_path(parts), errors=NAMESPACE_ERRORS)

    def update_properties(self, parts: list[str], properties: dict[str, str]) -> dict[str, Any]:
        response = self.client.request(
            "PATCH", securable_path(parts), json={"properties": properties},
            errors=NAMESPACE_ERRORS,
        )
        return RestCatalogClient.json_body(response)

    def create_schema(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self.client.request("POST", "/schemas", json=body, errors=NAMESPACE_ERRORS)
        return RestCatalogClient.json_body(response)

    def delete_schema(self, catalog: str, schema: str, missing_ok: bool) -> None:
        try:
            self.client.request(
                "DELETE",
                securable_path([catalog, schema]),
                params={"force": "false"},
                errors=DROP_SCHEMA_ERRORS,
            )
        except NamespaceNotFoundError:
            if not missing_ok:
                raise

    def create_table(
        self,
        catalog: str,
        schema: str,
        name: str,
        location: str,
        columns: list[dict[str, Any]],
        properties: Mapping[str, str] | None,
    ) -> dict[str, Any]:
        """Register a Lance table: EXTERNAL, format TEXT, marked `table_type=lance`."""
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
        return self._post_table(body)

    def copy_table(self, table: Mapping[str, Any], catalog: str, schema: str, name: str) -> None:
        body = {"name": name, "catalog_name": catalog, "schema_name": schema}
        body |= {key: table[key] for key in COPIED_TABLE_FIELDS if table.get(key) is not None}
        self._post_table(body)

    def replace_columns(
        self, table: Mapping[str, Any], catalog: str, schema: str, name: str,
        columns: list[dict[str, Any]],
    ) -> None:
        """Register the entry again with `columns`, everything else unchanged: Unity has no
        call that changes the columns of a table. If the new entry is refused, the old one is
        put back and the refusal raised."""
        self.delete_table(catalog, schema, name)
        try:
            self.copy_table({**table, "columns": columns}, catalog, schema, name)
        except LanceNamespaceError:
            with contextlib.suppress(LanceNamespaceError):
                self.copy_table(table, catalog, schema, name)
            raise

    def require_lance_table(self, catalog: str, schema: str, name: str) -> dict[str, Any]:
        table = self.client.get_json(table_path(catalog, schema, name), errors=TABLE_ERRORS)
        if not is_lance(table):
            raise InvalidInputError(f"table {catalog}.{schema}.{name} is not a Lance table")
        return table

    def delete_table(self, catalog: str, schema: str, name: str) -> None:
        self.client.request("DELETE", table_path(catalog, schema, name), errors=TABLE_ERRORS)

    def temporary_table_credentials(self, table: Mapping[str, Any], access: str) -> dict[str, Any]:
        """POST /temporary-table-credentials for a table entry (by its `table_id`)."""
        body = {"table_id": str(table.get("table_id")), "operation": TABLE_OPERATIONS[access]}
        response = self.client.request(
            "POST", "/temporary-table-credentials", json=body, errors=TABLE_ERRORS
        )
        return RestCatalogClient.json_body(response)

    def _post_table(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self.client.request("POST", "/tables", json=body, errors=CREATE_TABLE_ERRORS)
        return RestCatalogClient.json_body(response)


def s3_credentials(answer: Mapping[str, Any]) -> S3Credentials | None:
    """The AWS part of a TemporaryCredentials answer (`aws_temp_credentials`, with
    `expiration_time` in epoch ms); None when Unity vends no AWS credentials."""
    aws = answer.get("aws_temp_credentials")
    if not isinstance(aws, Mapping) or not aws.get("access_key_id"):
        return None
    expiration = answer.get("expiration_time")
    return S3Credentials(
        access_key_id=str(aws["access_key_id"]),
        secret_access_key=str(aws.get("secret_access_key") or ""),
        session_token=str(aws["session_token"]) if aws.get("session_token") else None,
        expires_at_millis=int(expiration) if expiration is not None else None,
    )


__all__ = ["UnityCatalog", "is_lance", "s3_credentials"]
