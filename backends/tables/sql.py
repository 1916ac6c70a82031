"""The SQL expressions a request carries (filters, predicates, update and column expressions,
a query's aliased output columns), checked before any storage is touched
(`check_sql_expressions`, in the one guard of every loaded backend,
`backends.guard.call_with_valid_id`) for what Lance's SQL planner does not implement: it
panics on them, so they are refused here with code 13.

Outside quoted strings and identifiers: placeholders (`?`, `$1`, `$name`, `:name`, but not
the cast `::`), dollar-quoted strings (`$$..$$`) and the string literals prefixed `N`, `B` or
`R` (`N'a'`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lance_namespace import InvalidInputError

_QUOTES = frozenset("'\"`")
_LITERAL_PREFIXES = frozenset("NnBbRr")
# Request fields that hold one SQL expression.
_EXPRESSION_FIELDS = (
    "filter",
    "predicate",
    "when_matched_update_all_filt",
    "when_not_matched_by_source_delete_filt",
)


def _unquoted(text: str) -> Iterator[tuple[int, str]]:
    """Each character of `text` outside quotes (`'`, `"`, backticks; doubled to escape),
    with its index; an opening quote is yielded, its contents are not."""
    quote: str | None = None
    for index, character in enumerate(text):
        if quote is not None:
            if character == quote:
                quote = None  # a doubled quote re-opens at once
            continue
        if character in _QUOTES:
            quote = character
        yield index, character


def _word_character(text: str, index: int) -> bool:
    return 0 <= index < len(text) and (text[index].isalnum() or text[index] == "_")


def _unimplemented(text: str) -> str | None:
    """What of `text` Lance's planner does not implement, or None."""
    for index, character in _unquoted(text):
        if character in "?$":
            return f"the placeholder or dollar-quoted string at {text[index : index + 8]!r}"
        if character == ":" and _word_character(text, index + 1) and text[index - 1 : index] != ":":
            return f"the placeholder {text[index : index + 8]!r}"
        if (
            character == "'"
            and text[index - 1 : index] in _LITERAL_PREFIXES
            and not _word_character(text, index - 2)
        ):
            return f"the {text[index - 1]}'' string literal"
    return None


def check_sql(text: object, field: str) -> None:
    """InvalidInputError if `text` holds what Lance's SQL planner does not implement."""
    if not isinstance(text, str):
        return
    found = _unimplemented(text)
    if found is not None:
        raise InvalidInputError(
            f"{field} holds {found}, which Lance's SQL does not support; write values as "
            "plain literals ('text', 1.5, true, X'hex')"
        )


def _expressions(request: Any) -> Iterator[tuple[str, object]]:
    for field in _EXPRESSION_FIELDS:
        yield field, getattr(request, field, None)
    for pair in getattr(request, "updates", None) or []:
        if isinstance(pair, list) and len(pair) == 2:
            yield "updates", pair[1]
    for entry in getattr(request, "new_columns", None) or []:
        yield "new_columns", getattr(entry, "expression", None)
        yield "new_columns", getattr(entry, "computed", None)
    yield from _aliased_expressions(request, "columns")
    query = getattr(request, "query", None)
    if query is not None and not isinstance(query, str):
        yield "query.filter", getattr(query, "filter", None)
        yield from _aliased_expressions(query, "query.columns")


def _aliased_expressions(query: Any, field: str) -> Iterator[tuple[str, object]]:
    """A query's output columns given as alias -> SQL expression."""
    columns = getattr(query, "columns", None)
    aliases = getattr(columns, "column_aliases", None)
    if isinstance(aliases, dict):
        for alias, expression in aliases.items():
            yield f"{field}.column_aliases.{alias}", expression


def check_sql_expressions(request: Any) -> None:
    """Check every SQL expression `request` carries (see the module's docstring)."""
    for field, text in _expressions(request):
        check_sql(text, field)
