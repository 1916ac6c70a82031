"""What each operation of the protocol is: the one traits table every part of the server
reads (access levels, read-only, the cache's invalidation, vending, the root id, choice fields),
keyed by the spec's operation id (`DescribeTable`), and the one converter between operation
ids and `LanceNamespace` method names (`describe_table`).

Most traits follow from the operation itself (its method name says whether it reads and what
its id names); `_EXPLICIT` lists every operation whose traits do not, so a new trait or an
exception is one change here.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

from lance_namespace import LanceNamespace

from backends.core.modes import CreateMode, DropBehavior, DropMode, RegisterMode, WriteMode

# The request context's entry holding a write's idempotency key (HTTP: `Idempotency-Key`).
IDEMPOTENCY_KEY = "idempotency_key"


class Level(enum.IntEnum):
    """Access levels; they nest (`backends.core.access`)."""

    READ = 1
    WRITE = 2
    ADMIN = 3


class Subject(enum.Enum):
    """What an operation's `id` names, and so where its access is checked."""

    TABLE = "table"  # one table: a grant covers it from a namespace strictly above it
    NAMESPACE = "namespace"  # one namespace (a scope): a grant covers it at or above it
    CATALOG = "catalog"  # several tables, or a transaction: only a grant over everything
    NOTHING = "nothing"  # names nothing and reveals nothing (ListOperations)


@dataclass(frozen=True)
class Traits:
    operation_id: str
    method: str
    subject: Subject
    level: Level | None  # None: no access needed
    root_allowed: bool = False  # the empty id (the root namespace) may be addressed
    vends: bool = False  # the answer carries vended credentials when vending is on
    changes_listing: bool = False  # a write that adds or takes a name in its namespace's list
    # Reads another table, named by its location (`source_location`): the server resolves it
    # to the table's id (`source_id`), where read access is needed too.
    source_by_location: bool = False
    # The backend method that answers as rows are read (`ArrowFileAnswer`), where a backend
    # has it: the server calls it instead of `method`, so its memory stays flat.
    streamed_method: str | None = None
    # Takes an Arrow body the backend may read as it arrives (the backend `honours` it).
    streamed_body: bool = False
    # Takes an idempotency key (`IDEMPOTENCY_KEY` in its context), where the backend `honours`
    # it: a retry of a write that took effect is answered as that write, not done twice.
    keyed: bool = False
    # Writes rows into a table that is there already: each is a small fragment (or deletion
    # file) the table's maintenance compacts (`maintenance_after_writes`).
    writes_rows: bool = False
    choices: Mapping[str, type[enum.StrEnum]] = field(default_factory=dict)

    @property
    def read_only(self) -> bool:
        """Changes nothing: a read the caller may retry, that the cache may answer."""
        return self.level is None or self.level is Level.READ


def operation_id(method: str) -> str:
    """`create_table_index` -> `CreateTableIndex`."""
    return "".join(part.capitalize() for part in method.split("_"))


def method_name(operation: str) -> str:
    """`CreateTableIndex` -> `create_table_index`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", operation).lower()


# Deprecated in the spec in favour of DeclareTable; the official 0.13 clients have no route.
_NOT_OPERATIONS = frozenset({"namespace_id", "create_empty_table"})
# The spec's operations `LanceNamespace` has no method for, and LanceDB's remote client's
# calls served as operations of their own.
EXTENSION_METHODS = ("alter_namespace", "alter_table", "prewarm_table_index", "clone_table")


def operation_methods() -> list[str]:
    """The method names of every operation of `LanceNamespace`."""
    return [
        name
        for name, member in vars(LanceNamespace).items()
        if callable(member) and not name.startswith("_") and name not in _NOT_OPERATIONS
    ]


_READ_PREFIXES = ("describe_", "list_", "count_", "query_", "get_", "explain_", "analyze_")
_LISTING = {"changes_listing": True}
# A write of rows, which takes an idempotency key.
_ROWS: dict[str, object] = {"keyed": True, "writes_rows": True}
_EXPLICIT: dict[str, dict[str, object]] = {
    "list_namespaces": {"root_allowed": True},
    "describe_namespace": {"root_allowed": True},
    "namespace_exists": {"root_allowed": True},
    "list_tables": {"subject": Subject.NAMESPACE, "root_allowed": True},
    "list_all_tables": {"subject": Subject.NAMESPACE, "root_allowed": True},
    "create_namespace": {"level": Level.ADMIN, "choices": {"mode": CreateMode}},
    "drop_namespace": {"level": Level.ADMIN,
                       "choices": {"mode": DropMode, "behavior": DropBehavior}},
    "alter_namespace": {"level": Level.ADMIN},
    "describe_table": {"vends": True},
    # Loads an index into the worker's cache (bounded by its size) for faster searches, as
    # a reader's LanceDB client asks: read, like the searches it speeds up.
    "prewarm_table_index": {"level": Level.READ},
    "declare_table": {"vends": True, **_LISTING},
    "create_table": {"choices": {"mode": CreateMode}, **_LISTING},
    "clone_table": {"source_by_location": True, **_LISTING},
    "register_table": {"level": Level.ADMIN, "choices": {"mode": RegisterMode}, **_LISTING},
    "deregister_table": {"level": Level.ADMIN, **_LISTING},
    "drop_table": _LISTING,
    "rename_table": _LISTING,
    "insert_into_table": {"choices": {"mode": WriteMode}, "streamed_body": True, **_ROWS},
    "merge_insert_into_table": _ROWS,
    "update_table": _ROWS,
    "delete_from_table": _ROWS,
    "query_table": {"streamed_method": "stream_query_table"},
    "batch_commit_tables": {"subject": Subject.CATALOG, "level": Level.ADMIN},
    "batch_create_table_versions": {"subject": Subject.CATALOG, "level": Level.ADMIN},
    "alter_transaction": {"subject": Subject.CATALOG, "level": Level.ADMIN},
    "describe_transaction": {"subject": Subject.CATALOG},
    "list_operations": {"subject": Subject.NOTHING, "level": None, "root_allowed": True},
}


def _derived(method: str) -> Traits:
    explicit = dict(_EXPLICIT.get(method, {}))
    reads = method.startswith(_READ_PREFIXES) or method.endswith("_exists")
    subject = Subject.NAMESPACE if "namespace" in method else Subject.TABLE
    return Traits(
        operation_id=operation_id(method),
        method=method,
        subject=explicit.pop("subject", subject),  # type: ignore[arg-type]
        level=explicit.pop("level", Level.READ if reads else Level.WRITE),  # type: ignore[arg-type]
        **explicit,  # type: ignore[arg-type]
    )


@cache
def _table() -> dict[str, Traits]:
    methods = [*operation_methods(), *EXTENSION_METHODS, "list_operations"]
    return {operation_id(method): _derived(method) for method in methods}


def traits_of(operation: str) -> Traits:
    """The traits of the operation `operation` (an id, `DescribeTable`, or a method name,
    `describe_table`); KeyError for no operation of the protocol."""
    return _table()[operation if operation[:1].isupper() else operation_id(operation)]


def all_traits() -> list[Traits]:
    return list(_table().values())


def streamed_methods() -> list[str]:
    """The backend methods that answer operations as rows are read."""
    return [traits.streamed_method for traits in all_traits() if traits.streamed_method]
