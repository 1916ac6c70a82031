"""Translation of the filters Spark offers a Python data source into Lance SQL.

Only filters whose Lance result is exactly Spark's are translated; everything else
(floating point, decimals, timestamps, nested columns) stays with Spark.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from pyspark.sql import datasource as ds
from pyspark.sql import types as T

# Spark column types whose comparisons Lance evaluates identically.
_PUSHABLE_TYPES = (
    T.BooleanType,
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.StringType,
    T.DateType,
)

_COMPARISONS: dict[type[ds.Filter], str] = {
    ds.EqualTo: "=",
    ds.GreaterThan: ">",
    ds.GreaterThanOrEqual: ">=",
    ds.LessThan: "<",
    ds.LessThanOrEqual: "<=",
}

_STRING_FUNCTIONS: dict[type[ds.Filter], str] = {
    ds.StringStartsWith: "starts_with",
    ds.StringEndsWith: "ends_with",
    ds.StringContains: "contains",
}


def to_lance_sql(spark_filter: ds.Filter, schema: T.StructType) -> str | None:
    """The Lance SQL for `spark_filter`, or None when Spark must evaluate it."""
    if isinstance(spark_filter, ds.Not):
        inner = to_lance_sql(spark_filter.child, schema)
        return f"NOT ({inner})" if inner else None
    column = _pushable_column(spark_filter.attribute, schema)
    if column is None:
        return None
    translate = _TRANSLATORS.get(type(spark_filter))
    return translate(spark_filter, column) if translate else None


def _comparison(spark_filter: ds.Filter, column: str) -> str | None:
    literal = sql_literal(spark_filter.value)
    return f"{column} {_COMPARISONS[type(spark_filter)]} {literal}" if literal else None


def _membership(spark_filter: ds.Filter, column: str) -> str | None:
    literals = [sql_literal(value) for value in spark_filter.value]
    if not literals or any(literal is None for literal in literals):
        return None
    return f"{column} IN ({', '.join(literals)})"  # type: ignore[arg-type]


def _string_function(spark_filter: ds.Filter, column: str) -> str | None:
    if not isinstance(spark_filter.value, str):
        return None
    return f"{_STRING_FUNCTIONS[type(spark_filter)]}({column}, {sql_literal(spark_filter.value)})"


_TRANSLATORS: dict[type[ds.Filter], Callable[[ds.Filter, str], str | None]] = {
    **dict.fromkeys(_COMPARISONS, _comparison),
    **dict.fromkeys(_STRING_FUNCTIONS, _string_function),
    ds.In: _membership,
    ds.IsNull: lambda _, column: f"{column} IS NULL",
    ds.IsNotNull: lambda _, column: f"{column} IS NOT NULL",
}


def _pushable_column(attribute: tuple[str, ...], schema: T.StructType) -> str | None:
    if len(attribute) != 1 or attribute[0] not in schema.fieldNames():
        return None
    if not isinstance(schema[attribute[0]].dataType, _PUSHABLE_TYPES):
        return None
    return "`" + attribute[0].replace("`", "``") + "`"


def sql_literal(value: object) -> str | None:
    """A Lance SQL literal for a Python value, or None for values not pushed."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return f"date '{value.isoformat()}'"
    return None


def combine(sql_filters: list[str]) -> str | None:
    """One Lance filter that is the AND of `sql_filters`."""
    if not sql_filters:
        return None
    return " AND ".join(f"({sql})" for sql in sql_filters)
