"""The SQL expressions a request carries (filters, predicates, update and column expressions,
a query's aliased output columns), checked before any storage is touched
(`check_sql_expressions`, in the one guard of every loaded backend,
`backends.guard.call_with_valid_id`) for what Lance's SQL planner does not implement: it
panics on them, so they are refused here with code 13.

Outside quoted strings and identifiers: placeholders (`?`, `$1`, `$name`, `:name`, but not
the cast `::`), dollar-quoted strings (`$$..$$`) and the string literals prefixed `N`, `B` or
`R` (`N'a'`).

And what one request may make the server compute (`backends.core.bounds.RequestBounds`): the
length of each expression, the number of a query's output columns, and how many times the
functions that repeat their input may multiply a value (their counts must be integer
literals, whose product over an expression is bounded): a 100-byte request must not answer
hundreds of megabytes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from lance_namespace import InvalidInputError

from backends.core.bounds import RequestBounds

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


def check_sql_expressions(request: Any, bounds: RequestBounds | None = None) -> None:
    """Check every SQL expression `request` carries and its projection (see the module's
    docstring)."""
    bounds = bounds or RequestBounds()
    for field, text in _expressions(request):
        check_sql(text, field)
        if isinstance(text, str):
            _check_bounded(text, field, bounds)
    for query, field in ((request, "columns"), (getattr(request, "query", None), "query.columns")):
        _check_projection(getattr(query, "columns", None), field, bounds)


def _check_projection(columns: Any, field: str, bounds: RequestBounds) -> None:
    names = getattr(columns, "column_names", None) or []
    aliases = getattr(columns, "column_aliases", None) or {}
    count = len(names) + len(aliases)
    if count > bounds.max_projection_columns:
        raise InvalidInputError(
            f"{field} asks for {count} output columns; a query may ask for at most "
            f"{bounds.max_projection_columns} (max_projection_columns)"
        )


# The functions whose result repeats their input, and which argument says how often.
_EXPANDING = re.compile(r"\b(repeat|lpad|rpad|array_repeat|range|generate_series)\s*\(",
                        re.IGNORECASE)


def _check_bounded(text: str, field: str, bounds: RequestBounds) -> None:
    if len(text.encode()) > bounds.max_expression_bytes:
        raise InvalidInputError(
            f"{field} is {len(text.encode())} bytes long; an expression may be at most "
            f"{bounds.max_expression_bytes} bytes (max_expression_bytes)"
        )
    masked = _masked(text)
    expansion = 1
    for call in _EXPANDING.finditer(masked):
        arguments = _arguments(text, masked, call.end())
        expansion *= _expansion(call.group(1).lower(), arguments, field)
        if expansion > bounds.max_expression_expansion:
            raise InvalidInputError(
                f"{field} repeats a value more than {bounds.max_expression_expansion} times "
                "(max_expression_expansion): ask for less"
            )


def _masked(text: str) -> str:
    """`text` with the contents of quoted strings and identifiers blanked out."""
    masked = [" "] * len(text)
    for index, character in _unquoted(text):
        masked[index] = character
    return "".join(masked)


def _arguments(text: str, masked: str, start: int) -> list[str]:
    """The top-level arguments of the call whose `(` ends at `start`, as written."""
    depth, begin, found = 0, start, []
    for index in range(start, len(masked)):
        character = masked[index]
        if character == "(":
            depth += 1
        elif character == ")" and depth:
            depth -= 1
        elif character in ",)" and depth == 0:
            found.append(text[begin:index].strip())
            begin = index + 1
            if character == ")":
                return found
    return found


def _expansion(function: str, arguments: list[str], field: str) -> int:
    """How many times the call multiplies a value; its counts must be integer literals."""
    if function in ("range", "generate_series"):
        numbers = [_integer(argument) for argument in arguments]
        if 1 <= len(numbers) <= 3 and None not in numbers:
            start, stop = (0, numbers[0]) if len(numbers) == 1 else numbers[:2]
            step = numbers[2] if len(numbers) == 3 else 1
            return max(1, math.ceil(abs(stop - start) / max(1, abs(step))))
        count = None
    else:
        count = _integer(arguments[1]) if len(arguments) > 1 else None
    if count is None:
        raise InvalidInputError(
            f"{field}: the counts of {function}(...) must be integer literals, so that the "
            "server can bound what one expression computes"
        )
    return max(1, count)


def _integer(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
