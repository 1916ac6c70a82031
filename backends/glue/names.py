"""Glue's names and references: what a namespace path names in the Data Catalog."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from lance_namespace import InvalidInputError

from backends.core.names import object_identifier

MAX_GLUE_NAME_LENGTH = 255
MAX_PARAMETER_KEY_LENGTH = 255

# Glue lowercases names it stores, so anything else would not round-trip.
_GLUE_NAME = re.compile(r"[a-z0-9_][a-z0-9_-]*")


def validate_glue_name(name: str, kind: str) -> str:
    """Glue's rules on top of the generic ones (the guard's): lowercase letters, digits, `_`,
    `-`; <= 255."""
    if len(name) > MAX_GLUE_NAME_LENGTH:
        raise InvalidInputError(f"{kind} {name!r} is longer than {MAX_GLUE_NAME_LENGTH} characters")
    if not _GLUE_NAME.fullmatch(name):
        raise InvalidInputError(
            f"{kind} {name!r} is not a valid Glue name: use lowercase letters, digits, '_' or '-'"
        )
    return name


def glue_identifier(parts: list[str] | None, kind: str) -> list[str]:
    """A namespace identifier of Glue names; the root namespace is the empty list."""
    return [validate_glue_name(part, f"{kind} name") for part in parts or []]


def glue_table_identifier(parts: list[str] | None) -> tuple[list[str], str]:
    """A table identifier of Glue names, as (namespace, table)."""
    identifier = object_identifier(parts, "table")
    identifier = [validate_glue_name(part, "name") for part in identifier]
    return identifier[:-1], identifier[-1]


def validate_parameters(properties: Mapping[str, str] | None) -> dict[str, str]:
    parameters = dict(properties or {})
    for key, value in parameters.items():
        if not isinstance(key, str) or not key or len(key) > MAX_PARAMETER_KEY_LENGTH:
            raise InvalidInputError(f"property key {key!r} must be 1 to 255 characters")
        if not isinstance(value, str):
            raise InvalidInputError(f"property {key!r} must have a string value")
    return parameters


def child_catalog_id(parent_id: str, name: str) -> str:
    """Glue child catalog IDs: `<account>:<name>`, nested ones `<account>:<parent>/<name>`."""
    separator = "/" if ":" in parent_id else ":"
    return f"{parent_id}{separator}{name}"


@dataclass(frozen=True)
class DatabaseRef:
    """Where a database lives: `catalog_id` None means the caller's default catalog."""

    catalog_id: str | None
    name: str

    def params(self) -> dict[str, str]:
        return {"CatalogId": self.catalog_id} if self.catalog_id else {}

    def describe(self) -> str:
        return f"database '{self.name}'" + (
            f" in catalog {self.catalog_id}" if self.catalog_id else ""
        )


NamespaceKind = Literal["root", "database", "catalog"]


@dataclass(frozen=True)
class ResolvedNamespace:
    """What a namespace path names: the root, a database or a catalog, with its Glue entry.

    `catalog_id` is the catalog the namespace is (root or catalog; None = the default
    catalog), `database` the database it is; `entry` Glue's Database or Catalog object.
    """

    kind: NamespaceKind
    catalog_id: str | None = None
    database: DatabaseRef | None = None
    entry: Mapping[str, Any] | None = None

    def describe(self) -> str:
        """How Glue errors about this namespace name it."""
        if self.database is not None:
            return self.database.describe()
        return f"catalog {self.catalog_id}"
