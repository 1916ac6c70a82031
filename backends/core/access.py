"""Who may do what: access levels, grants over namespace subtrees, the level each operation
needs, and `AccessPolicy`, which maps an identity to its grants.

Levels nest: `read` (every operation that changes nothing), `write` (table data and table
changes: create, insert, merge, update, delete, alter columns, indexes, tags, branches,
versions, restore, rename, drop), `admin` (namespaces, and RegisterTable, DeregisterTable and
DeclareTable at a named location, which point the catalog at storage). A grant gives a level
in one namespace and everything below it (`write@sales` covers the namespace `sales`, its
tables `sales$t` and `sales$eu$t`, but not a root table named `sales`), or everywhere
(`write`). An operation needs its level at every object it names (the level and what its id
names are the operation's traits, `backends.core.operations`): RenameTable needs `write` at
the table and at its new name; ListAllTables and ListTables need `read` at the namespace they
list (the root: everywhere). Operations that name no single place in the tree (the
transactions, the batch operations across tables) need their level everywhere. The server
checks a caller's grants in front of its cache and the backend (`app/server.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lance_namespace import InvalidInputError, PermissionDeniedError

from backends.core.names import ID_DELIMITER, joined_id, validate_identifier
from backends.core.operations import Level, Subject, traits_of

LEVEL_NAMES = {level.name.lower(): level for level in Level}

# Whether the caller of a request may read the table of an id (the server's judgement of its
# grants): asked of the source of a shallow clone each time the clone is opened.
Reader = Callable[[Sequence[str]], bool]


def every_table(_: Sequence[str]) -> bool:
    """The reader of a caller the server does not judge (auth off, or its own maintenance)."""
    return True


@dataclass(frozen=True)
class Grant:
    """`level` in the namespace `namespace` and below (the empty namespace: everywhere)."""

    level: Level
    namespace: tuple[str, ...] = ()

    def covers(self, target: Sequence[str], subject: Subject = Subject.NAMESPACE) -> bool:
        """Whether the grant reaches `target`, a namespace (at or below the grant's) or a
        table (in a namespace at or below it: a table id equal to the grant's namespace is a
        root-level table of that name, not inside it)."""
        inside = tuple(target[:len(self.namespace)]) == self.namespace
        if subject is Subject.TABLE and self.namespace:
            return inside and len(target) > len(self.namespace)
        return inside

    def __str__(self) -> str:
        name = self.level.name.lower()
        return f"{name}@{joined_id(self.namespace)}" if self.namespace else name


@dataclass(frozen=True)
class Grants:
    grants: tuple[Grant, ...]

    def level_at(
        self, target: Sequence[str], subject: Subject = Subject.NAMESPACE
    ) -> Level | None:
        """The highest level a grant gives at `target`, None when none covers it."""
        levels = [grant.level for grant in self.grants if grant.covers(target, subject)]
        return max(levels, default=None)

    def allows(
        self, level: Level, target: Sequence[str], subject: Subject = Subject.NAMESPACE
    ) -> bool:
        found = self.level_at(target, subject)
        return found is not None and found >= level

    def __str__(self) -> str:
        return ", ".join(str(grant) for grant in self.grants) or "none"

    def reader(self) -> Reader:
        """Whether these grants read the table of an id."""
        return lambda table_id: self.allows(Level.READ, table_id, Subject.TABLE)



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
    """The grants of each identity (named by the tokens file, or a token's identity claim) and
    of each group (a token's groups claim); `default` for a caller that neither names."""

    default: Grants
    identities: Mapping[str, Grants]
    groups: Mapping[str, Grants] = field(default_factory=dict)

    @classmethod
    def parse(
        cls, default: str, identities: Mapping[str, str], groups: Mapping[str, str] | None = None
    ) -> AccessPolicy:
        return cls(parse_grants(default),
                   {name: parse_grants(text) for name, text in identities.items()},
                   {name: parse_grants(text) for name, text in (groups or {}).items()})

    def grants_of(self, identity: str | None, groups: Sequence[str] = ()) -> Grants:
        """The identity's own grants and those of each of its groups that has an entry."""
        named = [self.identities[identity]] if identity in self.identities else []
        named += [self.groups[group] for group in groups if group in self.groups]
        if not named:
            return self.default
        return Grants(tuple(grant for grants in named for grant in grants.grants))


@dataclass(frozen=True)
class Need:
    """The level an operation needs at one object it names."""

    level: Level
    target: list[str]
    subject: Subject


def required_access(method: str, request: Any, target_only: bool = False) -> list[Need]:
    """What operation `method` needs at each object `request` names (validated ids); with
    `target_only`, only at its `id`, at the operation's own level."""
    traits = traits_of(method)
    if traits.level is None:
        return []
    if traits.subject is Subject.CATALOG:
        return [Need(traits.level, [], Subject.NAMESPACE)]
    target = validate_identifier(_field(request, "id") or [])
    level = traits.level
    if method == "declare_table" and _field(request, "location") and not target_only:
        level = Level.ADMIN  # points the catalog at storage, as RegisterTable does
    needs = [Need(level, target, traits.subject)]
    if target_only:
        return needs
    if method == "rename_table":
        needs.append(Need(Level.WRITE, renamed_id(request, target), Subject.TABLE))
    if traits.source_by_location:  # resolved by the server before access is checked
        needs.append(Need(Level.READ, validate_identifier(_field(request, "source_id") or []),
                          Subject.TABLE))
    return needs


def check_access(grants: Grants, method: str, request: Any, who: str | None = None,
                 target_only: bool = False) -> None:
    """PermissionDeniedError (code 15) unless `grants` cover every object `request` names at
    the level `method` needs; with `target_only`, the object its `id` names at the operation's
    own level (what the server checks before it reads the rest of the request)."""
    for need in required_access(method, request, target_only):
        if not grants.allows(need.level, need.target, need.subject):
            found = grants.level_at(need.target, need.subject)
            held = f"{found.name.lower()} access" if found else "no access"
            place = _place(need)
            caller = f"identity {who!r}" if who else "this caller"
            raise PermissionDeniedError(
                f"{caller} has {held} at {place}; this operation needs {need.level.name.lower()}"
            )


def _place(need: Need) -> str:
    if not need.target:
        return "the root namespace"
    kind = "table" if need.subject is Subject.TABLE else "namespace"
    return f"{kind} {joined_id(need.target)}"


def _field(request: Any, name: str) -> Any:
    if isinstance(request, Mapping):
        return request.get(name)
    return getattr(request, name, None)


def renamed_id(request: Any, target: list[str]) -> list[str]:
    """The id RenameTable `request` gives the table `target` (validated)."""
    namespace = _field(request, "new_namespace_id")
    if namespace is not None and (
        not isinstance(namespace, list | tuple)
        or not all(isinstance(name, str) for name in namespace)
    ):
        raise InvalidInputError("new_namespace_id must be a list of names")
    parent = list(namespace) if namespace is not None else target[:-1]
    return validate_identifier([*parent, _field(request, "new_table_name") or ""])
