"""External locations: storage prefixes outside the server's root where an operator lets
existing data be registered, each bound to the namespace subtree whose tables may register
there (setting `external_locations`, e.g. `{"s3://legacy/hr/": "hr"}`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lance_namespace import InvalidInputError

from backends.core.locations import StorageLocation, parse_location
from backends.core.names import ID_DELIMITER, joined_id, validate_identifier


@dataclass(frozen=True)
class ExternalLocation:
    prefix: StorageLocation
    namespace: tuple[str, ...]  # () : tables of every namespace
    purge: bool = False  # DropTable deletes the data of a table that owns its location

    def holds(self, place: StorageLocation) -> bool:
        """Whether `place` lies strictly below the prefix."""
        return place.relative_to(self.prefix) is not None

    def admits(self, table_id: Sequence[str]) -> bool:
        """Whether a table `table_id` may register below the prefix."""
        return tuple(table_id[:-1])[: len(self.namespace)] == self.namespace

    def __str__(self) -> str:
        bound = joined_id(list(self.namespace)) or "every namespace"
        return f"{self.prefix.uri} (bound to {bound})"


def admitting(external: Sequence[ExternalLocation], table_id: Sequence[str],
              place: StorageLocation) -> ExternalLocation | None:
    """The external location holding `place` that admits the table `table_id`, if any (where
    a multi-base table's extra base may lie: `backends.tables.reach`)."""
    return next((entry for entry in external
                 if entry.admits(table_id) and entry.holds(place)), None)


def parse_external_locations(
    mapping: Mapping[str, str], purge: bool = False
) -> tuple[ExternalLocation, ...]:
    """The setting's entries, prefix -> namespace (`a$b`; empty: every namespace), with the
    operator's `purge` choice; ValueError with one sentence for an entry that names no
    absolute location or no namespace."""
    parsed = []
    for prefix, namespace in mapping.items():
        try:
            location = parse_location(str(prefix).rstrip("/"))
            names = str(namespace).split(ID_DELIMITER) if namespace else []
            bound = tuple(validate_identifier(names, "namespace"))
        except InvalidInputError as error:
            raise ValueError(f"external location {prefix!r}: {error}") from None
        if location.scheme == "file" and not location.key:
            raise ValueError(f"external location {prefix!r} must not be the whole file system")
        parsed.append(ExternalLocation(location, bound, purge))
    return tuple(parsed)
