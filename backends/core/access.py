"""Who may do what: access levels, grants over namespace subtrees, the level each operation
needs, and `AccessPolicy`, which maps an identity to its grants.

Levels nest: `read` (every operation that changes nothing), `write` (table data and table
changes: create, insert, merge, update, delete, alter columns, indexes, tags, branches,
versions, restore, rename, drop), `admin` (namespaces, and RegisterTable, DeregisterTable and
DeclareTable at a named location, which point the catalog at storage). A grant gives a level
in one namespace and everything below it (`write@sales` covers `sales$t` and `sales$eu$t`),
or everywhere (`write`). An operation needs its level at every object it names: RenameTable
needs `write` at the table and at its new name. Operations that name no single place in the
tree (ListAllTables, the transactions, the batch operations) need their level everywhere.
The server checks a caller's grants in front of its cache and the backend (`app/server.py`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lance_namespace import InvalidInputError, PermissionDeniedError

from backends.core.names import ID_DELIMITER, joined_id, validate_identifier


class Level(enum.IntEnum):
    READ = 1
    WRITE = 2
    ADMIN = 3


LEVEL_NAMES = {level.name.lower(): level for level in Level}
_READ_PREFIXES = ("describe_", "list_", "count_", "query_", "get_", "explain_", "analyze_")
_ADMIN_METHODS = frozenset({
    "create_namespace", "drop_namespace", "alter_namespace", "register_table",
    "deregister_table",
})
# Operations naming several tables in their body, or a transaction (whose id is no place in
# the namespace tree): only a grant over everything covers them.
_WHOLE_CATALOG_METHODS = frozenset({
    "batch_commit_tables", "batch_create_table_versions", "alter_transaction",
})
_WHOLE_CATALOG_READS = frozenset({"describe_transaction"})
# Operations that name no object and reveal nothing about any.
_OPEN_METHODS = frozenset({"list_operations"})


@dataclass(frozen=True)
class Grant:
    """`level` in the namespace `namespace` and below (the empty namespace: everywhere)."""

    level: Level
    namespace: tuple[str, ...] = ()

    def covers(self, target: Sequence[str]) -> bool:
        return tuple(target[:len(self.namespace)]) == self.namespace

    def __str__(self) -> str:
        name = self.level.name.lower()
        return f"{name}@{joined_id(self.namespace)}" if self.namespace else name


@dataclass(frozen=True)
class Grants:
    grants: tuple[Grant, ...]

    def level_at(self, target: Sequence[str]) -> Level | None:
        """The highest level a grant gives at `target`, None when none covers it."""
        levels = [grant.level for grant in self.grants if grant.covers(target)]
        return max(levels, default=None)

    def allows(self, level: Level, target: Sequence[str]) -> bool:
        found = self.level_at(target)
        return found is not None and found >= level

    def __str__(self) -> str:
        return ", ".join(str(grant) for grant in self.grants) or "none"



def parse_grants(text: str) -> Grants:
    """`read`, `write@sales`, `admin@sales$eu`, comma-separated (`none`: no access);
    ValueError with one sentence for anything else."""
    grants = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry or entry == "none":
            continue
        name, at, namespace = entry.partition("@")
        level = LEVEL_NAMES.get(name.strip().lower())
        if level is None:
            raise ValueError(f"access {entry!r} must be read, write or admin, optionally "
                             "followed by @<namespace> (names joined by $)")
        if at and not namespace.strip():
            raise ValueError(f"access {entry!r} names no namespace after '@'")
        parts = namespace.strip().split(ID_DELIMITER) if at else []
        grants.append(Grant(level, tuple(validate_identifier(parts, "namespace"))))
    return Grants(tuple(grants))


@dataclass(frozen=True)
class AccessPolicy:
    """The grants of each identity named in the tokens file; `default` for the others (bare
    tokens, and identities without an entry)."""

    default: Grants
    identities: Mapping[str, Grants]

    @classmethod
    def parse(cls, default: str, identities: Mapping[str, str]) -> AccessPolicy:
        return cls(parse_grants(default),
                   {name: parse_grants(text) for name, text in identities.items()})

    def grants_of(self, identity: str | None) -> Grants:
        if identity is not None and identity in self.identities:
            return self.identities[identity]
        return self.default


def required_access(method: str, request: Any) -> list[tuple[Level, list[str]]]:
    """The level operation `method` needs at each object `request` names (validated ids)."""
    if method in _OPEN_METHODS:
        return []
    if method in _WHOLE_CATALOG_METHODS:
        return [(Level.ADMIN, [])]
    if method in _WHOLE_CATALOG_READS:
        return [(Level.READ, [])]
    target = validate_identifier(_field(request, "id") or [])
    if method in _ADMIN_METHODS or (method == "declare_table" and _field(request, "location")):
        return [(Level.ADMIN, target)]
    if method.startswith(_READ_PREFIXES) or method.endswith("_exists"):
        return [(Level.READ, target)]
    if method == "rename_table":
        return [(Level.WRITE, target), (Level.WRITE, _renamed(request, target))]
    return [(Level.WRITE, target)]


def check_access(grants: Grants, method: str, request: Any, who: str | None = None) -> None:
    """PermissionDeniedError (code 15) unless `grants` cover every object `request` names at
    the level `method` needs."""
    for level, target in required_access(method, request):
        if not grants.allows(level, target):
            found = grants.level_at(target)
            held = f"{found.name.lower()} access" if found else "no access"
            place = joined_id(target) or "the root namespace"
            caller = f"identity {who!r}" if who else "this caller"
            raise PermissionDeniedError(
                f"{caller} has {held} at {place}; this operation needs {level.name.lower()}"
            )


def _field(request: Any, name: str) -> Any:
    if isinstance(request, Mapping):
        return request.get(name)
    return getattr(request, name, None)


def _renamed(request: Any, target: list[str]) -> list[str]:
    namespace = _field(request, "new_namespace_id")
    if namespace is not None and (
        not isinstance(namespace, list | tuple)
        or not all(isinstance(name, str) for name in namespace)
    ):
        raise InvalidInputError("new_namespace_id must be a list of names")
    parent = list(namespace) if namespace is not None else target[:-1]
    return validate_identifier([*parent, _field(request, "new_table_name") or ""])
