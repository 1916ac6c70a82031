"""LanceDB's remote requests put in the Lance REST spec's form.

Its query (QueryTable, AnalyzeTableQueryPlan, and ExplainTableQueryPlan's `query`) differs:
- `vector` is a bare list (one vector, or none when empty) or a list of lists; the spec wraps
  it as `{"single_vector": [...]}` or `{"multi_vector": [[...], ...]}`.
- `k` is isize::MAX when no limit is given: every row.
- `columns` is a list of names, or an object of alias -> SQL expression; the spec's is
  `{"column_names": [...]}` or `{"column_aliases": {...}}`.
- `full_text_query` is `{"columns": [...], "query": "text"}` (the flat form, sent to servers
  older than 0.3.0) or `{"query": {<Lance FtsQuery>}}` (the structured form); the spec's is
  `{"string_query": ...}` or `{"structured_query": {"query": ...}}`. A `multi_match` names
  one query over several columns, with a boost each; the spec's holds one match query a
  column.
CreateTableIndex names the distance `metric_type`; the spec's name is `distance_type`.
AlterTableAddColumns of types (`add_columns(pa.field(...))`, a list of fields or a schema) is
an Arrow IPC stream of their schema, without rows: all-null columns of those types.
DescribeTable without `load_detailed_metadata` means with it: LanceDB needs the version and
schema. In a database (`in_database`), every id is below the database's namespace.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from lance_namespace import InvalidInputError

from backends.core.arrow_schema import arrow_schema_to_json
from backends.core.names import ID_DELIMITER

# The most rows a query can ask for (the spec's `k` is an int32); LanceDB sends isize::MAX
# for a query without a limit, and no answer holds more rows than this anyway.
MOST_ROWS = 2**31 - 1
QUERY_OPERATIONS = frozenset({"QueryTable", "AnalyzeTableQueryPlan"})
INDEX_OPERATIONS = frozenset({"CreateTableIndex", "CreateTableScalarIndex"})


def lancedb_request_fields(operation_id: str, fields: dict[str, Any]) -> None:
    """The request fields of a LanceDB remote call put in the spec's form, in place."""
    if operation_id in QUERY_OPERATIONS:
        _query(fields)
    elif operation_id == "ExplainTableQueryPlan" and isinstance(fields.get("query"), dict):
        _query(fields["query"])
    elif operation_id in INDEX_OPERATIONS:
        _index(fields)
    elif operation_id == "DescribeTable" and fields.get("load_detailed_metadata") is None:
        fields["load_detailed_metadata"] = True


def _query(fields: dict[str, Any]) -> None:
    _wrap_query_vector(fields)
    k = fields.get("k")
    if isinstance(k, int) and not isinstance(k, bool) and k > MOST_ROWS:
        fields["k"] = MOST_ROWS
    _wrap_columns(fields)
    text = fields.get("full_text_query")
    if isinstance(text, dict) and "query" in text:
        fields["full_text_query"] = _spec_full_text(text)


def _wrap_query_vector(fields: dict[str, Any]) -> None:
    vector = fields.get("vector")
    if not isinstance(vector, list):
        return
    if vector and all(isinstance(item, list) for item in vector):
        fields["vector"] = {"multi_vector": vector}
    else:
        fields["vector"] = {"single_vector": vector}


def _wrap_columns(fields: dict[str, Any]) -> None:
    columns = fields.get("columns")
    if isinstance(columns, list):
        fields["columns"] = {"column_names": columns}
    elif isinstance(columns, dict) and all(isinstance(v, str) for v in columns.values()):
        fields["columns"] = {"column_aliases": columns}


def _spec_full_text(text: dict[str, Any]) -> dict[str, Any]:
    query = text["query"]
    if isinstance(query, str):
        if set(text) - {"query", "columns"}:
            return text  # not LanceDB's flat form: refused as it is, naming its fields
        string_query: dict[str, Any] = {"query": query}
        if text.get("columns"):
            string_query["columns"] = text["columns"]
        return {"string_query": string_query}
    if isinstance(query, dict) and set(text) == {"query"}:
        return {"structured_query": {"query": _spec_fts_query(query)}}
    return text


def _spec_fts_query(query: dict[str, Any]) -> dict[str, Any]:
    """A Lance `FtsQuery` as LanceDB serialises it, in the spec's `FtsQuery` form."""
    if not isinstance(query, dict) or len(query) != 1:
        return query
    kind, body = next(iter(query.items()))
    if not isinstance(body, dict):
        return query
    if kind == "multi_match":
        return {"multi_match": {"match_queries": _match_queries(body)}}
    if kind == "boolean":
        return {"boolean": {
            clause: [_spec_fts_query(item) for item in body.get(clause) or []]
            for clause in ("must", "must_not", "should")
        }}
    if kind == "boost":
        return {"boost": {
            **body,
            "positive": _spec_fts_query(body.get("positive")),
            "negative": _spec_fts_query(body.get("negative")),
        }}
    return query


def _match_queries(body: dict[str, Any]) -> list[dict[str, Any]]:
    """LanceDB's multi_match (one query, its columns, a boost each) as the spec's match
    queries, one a column."""
    unknown = set(body) - {"query", "columns", "boost", "operator"}
    if unknown:
        raise InvalidInputError(
            f"full_text_query.query.multi_match does not take {', '.join(sorted(unknown))}"
        )
    columns = body.get("columns") or []
    boosts = body.get("boost") or [1.0] * len(columns)
    if not isinstance(columns, list) or not isinstance(boosts, list) or (
        len(boosts) != len(columns)
    ):
        raise InvalidInputError(
            "full_text_query.query.multi_match needs a list of columns and one boost a column"
        )
    shared = {"terms": body.get("query")}
    if body.get("operator") is not None:
        shared["operator"] = body["operator"]
    return [
        {**shared, "column": column, "boost": boost}
        for column, boost in zip(columns, boosts, strict=True)
    ]


def _index(fields: dict[str, Any]) -> None:
    metric = fields.pop("metric_type", None)
    if metric is None:
        return
    if fields.get("distance_type") not in (None, metric):
        raise InvalidInputError(
            "CreateTableIndex names two distances: metric_type and distance_type differ"
        )
    fields["distance_type"] = metric


def lancedb_fields_from_arrow(operation_id: str, body: bytes) -> dict[str, Any] | None:
    """The fields of AlterTableAddColumns whose body is the Arrow schema of the new columns."""
    if operation_id != "AlterTableAddColumns":
        return None
    try:
        schema = pa.ipc.open_stream(body).schema
    except (pa.ArrowInvalid, OSError) as error:
        raise InvalidInputError(f"the body is not an Arrow IPC stream: {error}") from None
    fields = arrow_schema_to_json(schema).fields
    return {"new_columns": [
        {"name": field.name, "data_type": field.type.to_dict(), "nullable": field.nullable}
        for field in fields
    ]}


def in_database(operation_id: str, fields: dict[str, Any], database: str) -> None:
    """The ids of a call to `database` put below its namespace: the call's own (ListAllTables,
    `GET /v1/table/`, lists the database's tables) and a rename's new namespace. A database
    named by a whole id (`aws$sales`: a namespace inside a catalog of a server of several)
    is that nested namespace."""
    namespace = database.split(ID_DELIMITER)
    if operation_id == "ListAllTables":
        fields["id"] = namespace
        return
    for name in ("id", "new_namespace_id"):
        identifier = fields.get(name)
        if isinstance(identifier, list):
            fields[name] = [*namespace, *identifier]
