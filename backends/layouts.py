"""Where each backend puts the tables it creates: every table id has its own path under the
storage root, and the layout reads back which id a path belongs to.

Ownership is decided from these paths alone, with no catalog search (`backends.containment`):
a path inside some id's own path belongs to that id, and a path that could lie above an own
path (a namespace's directory) belongs to no single table. A layout is a pure function of the
ids; it never calls the catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

# The directory of a Lance table named `<name>`: glue tables below their namespace
# levels, `dir`'s root tables below the root.
TABLE_SUFFIX = ".lance"


class TableLayout:
    """The layout of a backend that names none: no path belongs to any id by its place, so
    only the ownership record decides (see `backends.containment`)."""

    # Whether a table's own path may also be a namespace's directory (holding the own paths
    # of that namespace's tables): then a table and a namespace never share an id here.
    nests = False

    def home(self, table_id: Sequence[str]) -> tuple[str, ...] | None:
        """The id's own path, as segments below the root; None when the layout gives none."""
        return None

    def owner(self, relative: tuple[str, ...]) -> tuple[str, ...] | None:
        """The id whose own path is exactly root/`relative`, if the layout makes one there."""
        return None

    def holds_homes(self, relative: tuple[str, ...]) -> bool:
        """Whether an id's own path could lie strictly below root/`relative`."""
        return False

    def key(self, table_id: Sequence[str]) -> tuple[str, ...]:
        """The id as the layout spells it (a catalog that folds case folds it here)."""
        return tuple(table_id)

    def in_own_path(self, relative: tuple[str, ...], table_id: Sequence[str]) -> bool:
        """Whether root/`relative` is `table_id`'s own path or lies below it."""
        home = self.home(table_id)
        if home is not None and relative[: len(home)] == home:
            return True
        return self.owner_of(relative) == self.key(table_id)

    def owner_of(self, relative: tuple[str, ...]) -> tuple[str, ...] | None:
        """The id whose own path is root/`relative` or contains it."""
        for length in range(1, len(relative) + 1):
            owner = self.owner(relative[:length])
            if owner is not None:
                return owner
        return None


class SuffixLayout(TableLayout):
    """`<root>/<namespace…>/<table>.lance` (glue): a namespace level is a directory
    not ending in `.lance`, so a path ending in it is exactly one table's."""

    def __init__(self, min_depth: int = 2) -> None:
        self.min_depth = min_depth  # levels of a table id, namespace levels included

    def home(self, table_id: Sequence[str]) -> tuple[str, ...] | None:
        if len(table_id) < self.min_depth or any(_suffixed(name) for name in table_id[:-1]):
            return None
        return (*table_id[:-1], table_id[-1] + TABLE_SUFFIX)

    def owner(self, relative: tuple[str, ...]) -> tuple[str, ...] | None:
        if len(relative) < self.min_depth or not _suffixed(relative[-1]):
            return None
        if any(_suffixed(name) for name in relative[:-1]):
            return None
        table = relative[-1][: -len(TABLE_SUFFIX)]
        return (*relative[:-1], table) if table else None

    def holds_homes(self, relative: tuple[str, ...]) -> bool:
        return not any(_suffixed(name) for name in relative)


class PathLayout(TableLayout):
    """`<root>/<level>/…/<table>`, each name one directory (Iceberg's seed:
    `{root}/{warehouse}/{namespace}/{table_name}`): a path does not tell a table from a
    namespace, so the ownership records decide, and a table and a namespace of one id are
    kept apart (`nests`)."""

    nests = True

    def __init__(self, min_depth: int) -> None:
        self.min_depth = min_depth

    def home(self, table_id: Sequence[str]) -> tuple[str, ...] | None:
        return tuple(table_id) if len(table_id) >= self.min_depth else None

    def holds_homes(self, relative: tuple[str, ...]) -> bool:
        return True


class HiveLayout(TableLayout):
    """`<root>/[<catalog>/]<database>.db/<table>`, names folded to lower case; the default
    catalog's databases lie directly below the root."""

    def __init__(self, catalog_level: bool, default_catalog: str) -> None:
        self.catalog_level = catalog_level
        self.default_catalog = default_catalog

    def key(self, table_id: Sequence[str]) -> tuple[str, ...]:
        return tuple(name.lower() for name in table_id)

    def home(self, table_id: Sequence[str]) -> tuple[str, ...] | None:
        *namespace, table = self.key(table_id)
        if len(namespace) != (2 if self.catalog_level else 1):
            return None  # no table has this id here: the backend's own call says so
        if self.catalog_level:
            catalog, database = namespace
            above = () if catalog == self.default_catalog else (catalog,)
        else:
            (database,) = namespace
            above = ()
        return (*above, f"{database}.db", table)

    def owner(self, relative: tuple[str, ...]) -> tuple[str, ...] | None:
        if len(relative) == 2 and _database(relative[0]):
            database, table = relative[0][:-3], relative[1]
            return (self.default_catalog, database, table) if self.catalog_level else (
                database, table)
        if self.catalog_level and len(relative) == 3 and _database(relative[1]):
            if relative[0] == self.default_catalog:
                return None  # the default catalog's databases lie directly below the root
            return (relative[0], relative[1][:-3], relative[2])
        return None

    def holds_homes(self, relative: tuple[str, ...]) -> bool:
        if len(relative) == 1:  # a database's directory, or a catalog's
            return _database(relative[0]) or self.catalog_level
        return self.catalog_level and len(relative) == 2 and _database(relative[1])


class FixedDepthLayout(TableLayout):
    """`<root>/<level>/…/<table>` with a fixed number of levels (unity: catalog/schema/table);
    a path with a segment that can never be a name of the catalog (`is_name`) is no one's."""

    def __init__(self, depth: int, is_name: Callable[[str], bool] = lambda _: True) -> None:
        self.depth = depth
        self.is_name = is_name

    def home(self, table_id: Sequence[str]) -> tuple[str, ...] | None:
        return tuple(table_id) if len(table_id) == self.depth else None

    def owner(self, relative: tuple[str, ...]) -> tuple[str, ...] | None:
        named = all(self.is_name(segment) for segment in relative)
        return relative if len(relative) == self.depth and named else None

    def holds_homes(self, relative: tuple[str, ...]) -> bool:
        return len(relative) < self.depth and all(self.is_name(name) for name in relative)


def _suffixed(name: str) -> bool:
    return name.endswith(TABLE_SUFFIX)


def _database(name: str) -> bool:
    return name.endswith(".db") and len(name) > 3
