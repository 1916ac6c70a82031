"""Lance identifiers ↔ an Iceberg warehouse, its (nested) namespaces and table names.

The first identifier level is the warehouse; the levels after it are Iceberg namespaces, joined
with the unit separator on the wire.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from lance_namespace import InvalidInputError

from backends.core.names import object_identifier

NAMESPACE_SEPARATOR = "%1F"  # the unit separator \x1F, URL-encoded
PARENT_SEPARATOR = "\x1f"  # the same in a `parent` query parameter


def namespace_identifier(identifier: list[str] | None) -> tuple[str, list[str]]:
    """(warehouse, namespace path) of a namespace identifier."""
    parts = object_identifier(identifier, "namespace")
    return parts[0], parts[1:]


def table_identifier(identifier: list[str] | None) -> tuple[str, list[str], str]:
    """(warehouse, namespace path, name) of a table identifier."""
    parts = object_identifier(identifier, "table")
    if len(parts) < 3:
        raise InvalidInputError("an Iceberg table identifier is [warehouse, namespace..., table]")
    return parts[0], parts[1:-1], parts[-1]


def encoded_namespace(path: list[str]) -> str:
    """A namespace path as one URL path segment."""
    return NAMESPACE_SEPARATOR.join(quote(part, safe="") for part in path)


def parent_params(path: list[str]) -> dict[str, str]:
    """The query that lists the children of `path` (none for the warehouse's top level)."""
    return {"parent": PARENT_SEPARATOR.join(path)} if path else {}


def is_namespace(entry: Any) -> bool:
    """A namespace entry of a ListNamespaces answer: a non-empty list of names."""
    return isinstance(entry, list) and bool(entry)
