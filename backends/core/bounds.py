"""How much one request may make the server compute: the bounds the guard checks on the SQL
expressions and projections a request carries (`backends.tables.sql`), so that a small
request cannot take large memory or time. The server sets them from its settings
(`max_expression_bytes`, `max_projection_columns`, `max_expression_expansion`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestBounds:
    # The length of one SQL expression (a filter, a predicate, a computed column), in bytes.
    max_expression_bytes: int = 16 * 1024
    # The output columns of one query: names and aliased expressions together.
    max_projection_columns: int = 1024
    # How many times the functions that repeat their input (repeat, lpad, rpad,
    # array_repeat, range, generate_series) may multiply a value, over one expression.
    max_expression_expansion: int = 1024
