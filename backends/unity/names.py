"""Lance identifiers ↔ Unity's catalog.schema.table names and their API paths."""

from __future__ import annotations

import re
from urllib.parse import quote

from lance_namespace import InvalidInputError

from backends.core.names import object_identifier

API_PATH = "/api/2.1/unity-catalog"
# Unity Catalog's own rule for catalog, schema and table names.
UNITY_NAME = re.compile(r"[A-Za-z0-9_@-]{1,255}")


def unity_identifier(
    identifier: list[str] | None, kind: str, max_levels: int, min_levels: int = 0
) -> list[str]:
    """An identifier the guard validated, checked against Unity's levels and name rule."""
    parts = object_identifier(identifier, kind) if min_levels else list(identifier or [])
    if not min_levels <= len(parts) <= max_levels:
        shape = "catalog.schema.table" if kind == "table" else "catalog or catalog.schema"
        raise InvalidInputError(f"a Unity {kind} identifier is {shape}, got {parts}")
    for part in parts:
        if not UNITY_NAME.fullmatch(part):
            raise InvalidInputError(
                f"Unity names use only letters, digits, '_', '-' and '@': {part!r}"
            )
    return parts


def namespace_parts(identifier: list[str] | None) -> list[str]:
    """The root ([]), a catalog ([catalog]) or a schema ([catalog, schema])."""
    return unity_identifier(identifier, "namespace", max_levels=2)


def securable_identifier(identifier: list[str] | None) -> list[str]:
    """A catalog ([catalog]) or a schema ([catalog, schema]), never the root."""
    return unity_identifier(identifier, "namespace", max_levels=2, min_levels=1)


def schema_identifier(identifier: list[str] | None) -> tuple[str, str]:
    parts = unity_identifier(identifier, "namespace", max_levels=2, min_levels=2)
    return parts[0], parts[1]


def table_identifier(identifier: list[str] | None) -> tuple[str, str, str]:
    parts = unity_identifier(identifier, "table", max_levels=3, min_levels=3)
    return parts[0], parts[1], parts[2]


def securable_path(parts: list[str]) -> str:
    """The API path of a catalog ([catalog]) or a schema ([catalog, schema])."""
    if len(parts) == 1:
        return f"/catalogs/{_quote(parts[0])}"
    return f"/schemas/{_quote(parts[0])}.{_quote(parts[1])}"


def table_path(catalog: str, schema: str, name: str) -> str:
    return f"/tables/{_quote(catalog)}.{_quote(schema)}.{_quote(name)}"


def _quote(name: str) -> str:
    return quote(name, safe="")
