"""Hive's names: Lance identifiers ↔ catalog, database and table names, and table locations.

Hive names are case-insensitive: every name is lowercased before it reaches the metastore, and
names Hive would reject (anything but letters, digits and `_`; databases and catalogs longer
than 128 characters) are refused with InvalidInputError before any metastore call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lance_namespace import InvalidInputError

from backends.core.locations import is_relative

DEFAULT_CATALOG = "hive"
DEFAULT_DATABASE = "default"
IDENTIFIER_DELIMITER = "$"
MAX_DATABASE_NAME_LENGTH = 128  # DBS.NAME / CTLGS.NAME are VARCHAR(128) in the HMS schema
MAX_TABLE_NAME_LENGTH = 256  # TBLS.TBL_NAME is VARCHAR(256)

_HIVE_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def hive_name(name: str, kind: str, max_length: int) -> str:
    """`name` lowercased, or InvalidInputError when Hive would reject it."""
    lowered = name.lower()
    if not set(lowered) <= _HIVE_NAME_CHARACTERS:
        raise InvalidInputError(
            f"{kind} name {name!r} is not a valid Hive name (use letters, digits and '_')"
        )
    if len(lowered) > max_length:
        raise InvalidInputError(f"{kind} name is longer than {max_length} characters")
    return lowered


def names_of_identifier(parts: Sequence[str] | None, kind: str) -> list[str]:
    """The names of a list identifier the guard validated (no name holds a `$`)."""
    return list(parts or [])


@dataclass(frozen=True)
class HiveLevels:
    """The namespace levels of a backend: a database, or a catalog and a database."""

    catalog_level: bool
    backend: str  # named in messages

    @property
    def depth(self) -> int:
        return 2 if self.catalog_level else 1

    def is_catalog_path(self, path: Sequence[str]) -> bool:
        return self.catalog_level and len(path) == 1

    def namespace_path(self, parts: Sequence[str] | None, allow_root: bool = False) -> list[str]:
        """The lowercased catalog and database names of a namespace identifier."""
        names = names_of_identifier(parts, "namespace identifier")
        if not names and not allow_root:
            raise InvalidInputError("this operation needs a namespace, not the root namespace")
        if len(names) > self.depth:
            raise InvalidInputError(
                f"{self.backend} namespaces have at most {self.depth} levels,"
                f" got {IDENTIFIER_DELIMITER.join(names)!r}"
            )
        kind = ["catalog", "database"] if self.catalog_level else ["database"]
        return [
            hive_name(name, kind[index], MAX_DATABASE_NAME_LENGTH)
            for index, name in enumerate(names)
        ]

    def database_path(self, parts: Sequence[str] | None) -> list[str]:
        path = self.namespace_path(parts)
        if len(path) != self.depth:
            raise InvalidInputError(f"{IDENTIFIER_DELIMITER.join(path)!r} does not name a database")
        return path

    def table_path(self, parts: Sequence[str] | None) -> tuple[list[str], str]:
        """The database path and the lowercased table name of a table identifier."""
        names = names_of_identifier(parts, "table identifier")
        if len(names) != self.depth + 1:
            expected = "catalog, database and table" if self.catalog_level else "database and table"
            raise InvalidInputError(f"a table identifier names the {expected}, got {names!r}")
        namespace = self.namespace_path(names[:-1])
        return namespace, hive_name(names[-1], "table", MAX_TABLE_NAME_LENGTH)


@dataclass(frozen=True)
class DatabaseRef:
    """A database, with its catalog when the metastore has catalogs."""

    catalog: str | None
    name: str

    @property
    def thrift_name(self) -> str:
        # HMS 3 addresses a database of a given catalog as "@catalog#database".
        return f"@{self.catalog}#{self.name}" if self.catalog else self.name


def absolute_location(location: str | None) -> str | None:
    """`location` if it is a URI or an absolute path: the metastore would resolve a relative
    path against its own working directory, not the adapter's."""
    if location and is_relative(location):
        raise InvalidInputError(f"table location must be absolute or a URI, got {location!r}")
    return location


def plain_location(location: str | None) -> str | None:
    """HMS qualifies local paths as `file:/path`; hand Lance a plain path instead."""
    if location and location.startswith("file:"):
        path = location[len("file:"):]
        if path.startswith("//"):
            path = path[2:] if path.startswith("///") else path[path.find("/", 2):]
        return "/" + path.lstrip("/")
    return location
