"""The spec's structured full-text queries (`FtsQuery`: match, phrase, boost, multi_match,
boolean) as Lance's own query objects (`lance.query`), nested as the request nests them.

A match or phrase query without a column searches the table's full-text indexed columns, as
Lance does for a plain string query (the one column, or a multi-match over them all); the
spec's multi_match (one match query a column) becomes Lance's multi-match when its queries
share their terms and operator, else a boolean query whose clauses are all SHOULD, which
scores the same way.
"""

from __future__ import annotations

from collections.abc import Callable
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


def lance_fts_query(
    query: Any, path: str, indexed: Callable[[], list[str]], depth: int = 0
) -> FullTextQuery:
    """The spec's `FtsQuery` model `query` (at `path` in the request) as a Lance query;
    `indexed()` names the table's full-text indexed columns, searched by a query naming
    none."""
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
        if body.column:
            return _match(body, inner)
        columns = _indexed_columns(indexed, inner)
        return _match(body.model_copy(update={"column": columns[0]}), inner) if len(
            columns) == 1 else _multi_match(
            [body.model_copy(update={"column": column}) for column in columns], inner)
    if kind == "phrase":
        column = body.column or _only_indexed_column(indexed, inner)
        return PhraseQuery(body.terms, column, slop=body.slop or 0)
    if kind == "boost":
        return BoostQuery(
            lance_fts_query(body.positive, f"{inner}.positive", indexed, depth + 1),
            lance_fts_query(body.negative, f"{inner}.negative", indexed, depth + 1),
            negative_boost=0.5 if body.negative_boost is None else body.negative_boost,
        )
    if kind == "multi_match":
        return _multi_match(body.match_queries, inner)
    return BooleanQuery([
        (occur, lance_fts_query(item, f"{inner}.{name}", indexed, depth + 1))
        for name, occur in _CLAUSES
        for item in getattr(body, name) or []
    ])


def _indexed_columns(indexed: Callable[[], list[str]], path: str) -> list[str]:
    columns = indexed()
    if not columns:
        raise InvalidInputError(f"{path} names no column and the table has no full-text index")
    return columns


def _only_indexed_column(indexed: Callable[[], list[str]], path: str) -> str:
    columns = _indexed_columns(indexed, path)
    if len(columns) > 1:
        raise InvalidInputError(
            f"{path} names no column and the table has {len(columns)} full-text indexed "
            f"columns ({', '.join(columns)}): name one"
        )
    return columns[0]


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
