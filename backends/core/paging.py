"""Sorted, token-based paging shared by every backend's list operations, and ListAllTables'
scope and paging of table ids across namespaces."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from lance_namespace import InvalidInputError, NamespaceExistsRequest

from backends.core.names import ID_DELIMITER


def paginate(
    names: Iterable[str], page_token: str | None, limit: int | None
) -> tuple[list[str], str | None]:
    """Return one page of the sorted `names` after `page_token` and the token of the next page.

    The token is the last name of the page, so paging stays stable while names are added
    or removed. `limit` None or 0 means no limit; a negative limit is invalid input.
    """
    if limit is not None and limit < 0:
        raise InvalidInputError(f"limit must not be negative, got {limit}")
    ordered = sorted(set(names))
    if page_token:
        ordered = [name for name in ordered if name > page_token]
    if not limit or len(ordered) <= limit:
        return ordered, None
    page = ordered[:limit]
    return page, page[-1]


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


def within_scope(
    namespace: Any, request: Any, paths: Iterable[Sequence[str]]
) -> list[Sequence[str]]:
    """The namespace `paths` at or below ListAllTables' scope, `request.id` (the root by
    default): what a grant of that scope covers. A scope that is no namespace is not found
    (code 1), as ListTables answers."""
    scope = list(request.id or [])
    if scope:
        namespace.namespace_exists(NamespaceExistsRequest(
            id=scope, identity=request.identity, context=request.context))
    return [path for path in paths if list(path[:len(scope)]) == scope]
