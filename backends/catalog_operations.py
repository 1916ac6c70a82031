"""Pieces of the catalog-level operations (AlterNamespace, AlterTable, ListAllTables) that do
not depend on the catalog: validating property changes and paging table ids across namespaces.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from lance_namespace import InvalidInputError

from backends.names import ID_DELIMITER
from backends.paging import paginate


@dataclass(frozen=True)
class PropertyChanges:
    """The `set_properties` and `unset_properties` of an Alter request, validated."""

    updates: dict[str, str]
    removals: frozenset[str]

    @classmethod
    def of(
        cls,
        set_properties: Mapping[str, str] | None,
        unset_properties: Sequence[str] | None,
        protected: Collection[str] = (),
        protected_because: str = "mark this as a Lance table",
    ) -> PropertyChanges:
        """Refuse empty keys, a key both set and unset, and any key in `protected`
        (compared case-insensitively: the catalogs match their markers that way)."""
        changes = cls(dict(set_properties or {}), frozenset(unset_properties or ()))
        for key in (*changes.updates, *changes.removals):
            if not isinstance(key, str) or not key.strip():
                raise InvalidInputError(f"property keys must be non-empty strings, got {key!r}")
        for key, value in changes.updates.items():
            if not isinstance(value, str):
                raise InvalidInputError(f"property {key!r} must have a string value")
        both = sorted(changes.removals & changes.updates.keys())
        if both:
            raise InvalidInputError(f"properties both set and unset: {', '.join(both)}")
        lowered = {key.lower() for key in protected}
        keys = (*changes.updates, *changes.removals)
        touched = sorted(key for key in keys if key.lower() in lowered)
        if touched:
            raise InvalidInputError(
                f"properties {', '.join(touched)} {protected_because} and cannot be changed"
            )
        return changes

    def applied_to(self, current: Mapping[str, str] | None) -> dict[str, str]:
        """`current` after the change; unsetting an absent key is not an error."""
        current = current or {}
        changed = {key: value for key, value in current.items() if key not in self.removals}
        changed.update(self.updates)
        return changed


def page_of_table_ids(
    namespaces: Iterable[Sequence[str]],
    lance_tables: Callable[[Sequence[str]], Iterable[str]],
    page_token: str | None,
    limit: int | None,
) -> tuple[list[str], str | None]:
    """One page of every `namespace$table` id, sorted, asking `lance_tables` only for the
    namespaces that can hold ids of this page.

    Namespaces are visited in the order of their id prefix `namespace$`, which is a lower bound
    of every id of that namespace and of all later ones; so the walk stops as soon as more than
    `limit` ids after the token sort below the next prefix.
    """
    if limit is not None and limit < 0:
        raise InvalidInputError(f"limit must not be negative, got {limit}")
    prefixes = sorted(
        (ID_DELIMITER.join(namespace) + ID_DELIMITER, namespace)
        for namespace in namespaces
    )
    ids: list[str] = []
    for prefix, namespace in prefixes:
        if page_token and page_token[: len(prefix)] > prefix:
            continue  # every id of this namespace sorts before the token
        if limit and _ids_between(ids, page_token, prefix) > limit:
            break
        ids = sorted([*ids, *(prefix + table for table in lance_tables(namespace))])
    return paginate(ids, page_token, limit)


def _ids_between(ordered_ids: list[str], after: str | None, below: str) -> int:
    start = bisect_right(ordered_ids, after) if after else 0
    return max(0, bisect_left(ordered_ids, below) - start)
