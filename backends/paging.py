"""Sorted, token-based paging shared by every backend's list operations."""

from __future__ import annotations

from collections.abc import Iterable

from lance_namespace import InvalidInputError


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
