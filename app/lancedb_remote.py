"""What LanceDB's remote client (`lancedb.connect("db://…", host_override=URL)`) reads
differently from the Lance REST spec.

It calls the spec's /v1/ routes (with a trailing `/`) and marks every request with the
`x-lancedb-database` header. It parses DescribeTable's `schema` in Lance's own JSON schema
form (`float`, `double`, `string`, `timestamp:us`…) rather than the spec's `JsonArrowSchema`
names (`float32`, `float64`, `utf8`, `timestamp`…). The spec form carries no unit for
timestamps, times and durations: those become microseconds, Lance's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LANCEDB_DATABASE_HEADER = "x-lancedb-database"

_LANCE_TYPE_NAMES = {
    "float16": "halffloat",
    "float32": "float",
    "float64": "double",
    "utf8": "string",
    "large_utf8": "large_string",
    "date32": "date32:day",
    "date64": "date64:ms",
    "timestamp": "timestamp:us:-",  # Lance writes a naive time zone as `-`
    "time32": "time32:ms",
    "time64": "time64:us",
    "duration": "duration:us",
}


def is_lancedb_remote(headers: Mapping[str, str]) -> bool:
    return LANCEDB_DATABASE_HEADER in headers


def _lance_type(spec_type: dict[str, Any]) -> dict[str, Any]:
    name = spec_type.get("type", "")
    converted: dict[str, Any] = {"type": _LANCE_TYPE_NAMES.get(name, name)}
    if name.startswith("decimal"):
        bits = name.removeprefix("decimal") or "128"
        length = spec_type.get("length") or 38
        precision, scale = divmod(length, 1000) if length >= 1000 else (length, 0)
        converted["type"] = f"decimal:{bits}:{precision}:{scale}"
        return converted
    if spec_type.get("fields") is not None:
        converted["fields"] = [lance_json_field(field) for field in spec_type["fields"]]
    if spec_type.get("length") is not None:
        converted["length"] = spec_type["length"]
    return converted


def lance_json_field(field: dict[str, Any]) -> dict[str, Any]:
    converted = {
        "name": field["name"],
        "type": _lance_type(field["type"]),
        "nullable": field.get("nullable", True),
    }
    if field.get("metadata"):
        converted["metadata"] = field["metadata"]
    return converted


def lancedb_answer(operation_id: str, payload: dict[str, Any]) -> Any:
    """The answer of `operation_id` in the form LanceDB's remote client parses."""
    if operation_id == "DescribeTable":
        return as_lancedb_describe(payload)
    if operation_id == "ListTableTags":
        return payload.get("tags") or {}
    return payload


def as_lancedb_describe(payload: dict[str, Any]) -> dict[str, Any]:
    """A DescribeTable answer with its schema in the form LanceDB's remote client parses."""
    schema = payload.get("schema")
    if schema:
        converted: dict[str, Any] = {
            "fields": [lance_json_field(field) for field in schema.get("fields", [])]
        }
        if schema.get("metadata"):
            converted["metadata"] = schema["metadata"]
        payload["schema"] = converted
    return payload


def adapt_lancedb_request(operation_id: str, fields: dict[str, Any]) -> None:
    """The request fields of a LanceDB remote call in the spec's form."""
    if operation_id == "QueryTable":
        _wrap_query_vector(fields)
    elif operation_id == "DescribeTable" and fields.get("load_detailed_metadata") is None:
        # The spec leaves the unset case to the server; LanceDB needs version and schema.
        fields["load_detailed_metadata"] = True


def _wrap_query_vector(fields: dict[str, Any]) -> None:
    """LanceDB sends QueryTable's `vector` as a bare list (one vector) or a list of lists;
    the spec wraps it as `{"single_vector": [...]}` or `{"multi_vector": [[...], ...]}`."""
    vector = fields.get("vector")
    if not isinstance(vector, list):
        return
    if vector and all(isinstance(item, list) for item in vector):
        fields["vector"] = {"multi_vector": vector}
    else:
        fields["vector"] = {"single_vector": vector}
