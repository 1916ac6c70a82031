"""The spec's structured full-text queries (`FtsQuery`: match, phrase, boost, multi_match,
boolean) as Lance's own query objects (`lance.query`), nested as the request nests them.

A match or phrase query without a column searches the table's one full-text indexed column,
as Lance does for a plain string query; the spec's multi_match (one match query a column)
becomes Lance's multi-match when its queries share their terms and operator, else a boolean
query whose clauses are all SHOULD, which scores the same way.
"""

from __future__ import annotations

from typing import Any

from lance.query import (
    BooleanQuery,
    BoostQuery,
    FullTextOperator,
    FullTextQuery,
    MatchQuery,
    MultiMatchQuery,
    Occur,
    PhraseQuery,
)
from lance_namespace import InvalidInputError

# How deep boolean and boost queries may nest.
MOST_NESTED = 16
_CLAUSES = (("must", Occur.MUST), ("should", Occur.SHOULD), ("must_not", Occur.MUST_NOT))


def lance_fts_query(query: Any, path: str, depth: int = 0) -> FullTextQuery:
    """The spec's `FtsQuery` model `query` (at `path` in the request) as a Lance query."""
    if depth > MOST_NESTED:
        raise InvalidInputError(f"{path} nests full-text queries deeper than {MOST_NESTED}")
    kinds = [name for name in ("match", "phrase", "boost", "multi_match", "boolean")
             if getattr(query, name, None) is not None]
    if len(kinds) != 1:
        raise InvalidInputError(
            f"{path} needs exactly one of match, phrase, boost, multi_match and boolean"
        )
    kind = kinds[0]
    body = getattr(query, kind)
    inner = f"{path}.{kind}"
    if kind == "match":
        return _match(body, inner)
    if kind == "phrase":
        return PhraseQuery(body.terms, body.column or "", slop=body.slop or 0)
    if kind == "boost":
        return BoostQuery(
            lance_fts_query(body.positive, f"{inner}.positive", depth + 1),
            lance_fts_query(body.negative, f"{inner}.negative", depth + 1),
            negative_boost=0.5 if body.negative_boost is None else body.negative_boost,
        )
    if kind == "multi_match":
        return _multi_match(body.match_queries, inner)
    return BooleanQuery([
        (occur, lance_fts_query(item, f"{inner}.{name}", depth + 1))
        for name, occur in _CLAUSES
        for item in getattr(body, name) or []
    ])


def _operator(text: str | None, path: str) -> FullTextOperator:
    if text is None:
        return FullTextOperator.OR
    normalised = text.strip().upper()
    if normalised not in ("AND", "OR"):
        raise InvalidInputError(f"{path}.operator must be And or Or, got {text!r}")
    return FullTextOperator(normalised)


def _match(body: Any, path: str) -> MatchQuery:
    optional = {
        "boost": body.boost,
        "fuzziness": body.fuzziness,
        "max_expansions": body.max_expansions,
        "prefix_length": body.prefix_length,
    }
    return MatchQuery(
        body.terms, body.column or "", operator=_operator(body.operator, path),
        **{name: value for name, value in optional.items() if value is not None},
    )


def _multi_match(queries: list[Any], path: str) -> FullTextQuery:
    if not queries:
        raise InvalidInputError(f"{path}.match_queries needs at least one match query")
    if any(not query.column for query in queries):
        raise InvalidInputError(f"{path}: every match query needs its column")
    shared = {(query.terms, (query.operator or "or").lower()) for query in queries}
    plain = all(query.fuzziness in (None, 0) and not query.prefix_length for query in queries)
    if len(shared) == 1 and plain:
        return MultiMatchQuery(
            queries[0].terms, [query.column for query in queries],
            boosts=[1.0 if query.boost is None else query.boost for query in queries],
            operator=_operator(queries[0].operator, path),
        )
    return BooleanQuery([
        (Occur.SHOULD, _match(query, f"{path}.match_queries[{index}]"))
        for index, query in enumerate(queries)
    ])
