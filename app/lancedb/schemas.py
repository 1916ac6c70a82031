"""Table schemas as LanceDB's remote client reads them: Lance's own JSON schema form (`float`,
`double`, `string`, `timestamp:ms:UTC`…) rather than the spec's `JsonArrowSchema` names
(`float32`, `float64`, `utf8`, `timestamp`…).

The spec form carries no unit for timestamps, times and durations. The client casts the rows
it adds to the schema it reads, so a unit read wrong makes every later `add()` fail: where a
schema holds such a type, DescribeTable also reads the table's Arrow schema (a query of one
row of the same version, `described_with_units`), and the answer names each one's unit and
time zone from it.
"""

from __future__ import annotations

import base64
from typing import Any

import pyarrow as pa
from lance_namespace import (
    DescribeTableRequest,
    DescribeTableResponse,
    LanceNamespace,
    LanceNamespaceError,
    QueryTableRequest,
)

# Where `described_with_units` hands the Arrow schema (IPC, base64) to the answer.
ARROW_SCHEMA_CONTEXT = "lancedb.arrow_schema"
_UNIT_TYPES = frozenset({"timestamp", "time32", "time64", "duration"})

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


def _holds_units(spec_type: dict[str, Any]) -> bool:
    return spec_type.get("type") in _UNIT_TYPES or any(
        _holds_units(field.get("type") or {}) for field in spec_type.get("fields") or [])


def described_with_units(
    namespace: LanceNamespace, request: DescribeTableRequest
) -> DescribeTableResponse:
    """DescribeTable; when its schema holds a type with a unit, the table's Arrow schema too
    (in the answer's context), read from one row of the version described."""
    response = namespace.describe_table(request)
    schema = response.var_schema
    fields = [] if schema is None else [field.to_dict() for field in schema.fields]
    if not any(_holds_units(field.get("type") or {}) for field in fields):
        return response
    try:
        one_row = namespace.query_table(QueryTableRequest(
            id=request.id, k=1, vector={}, version=response.version, branch=request.branch,
            identity=request.identity, context=request.context,
        ))
    except LanceNamespaceError:  # e.g. declared without data: the spec form's units stand
        return response
    arrow_schema = pa.ipc.open_file(pa.BufferReader(one_row.data)).schema
    encoded = base64.b64encode(arrow_schema.serialize().to_pybytes()).decode("ascii")
    response.context = {**(response.context or {}), ARROW_SCHEMA_CONTEXT: encoded}
    return response


def payload_context(payload: dict[str, Any], key: str) -> str | None:
    """The value a backend call handed over in the answer's context, taken out of it."""
    context = dict(payload.pop("context", None) or {})
    value = context.pop(key, None)
    if context:
        payload["context"] = context
    return value


def _unit_name(arrow_type: pa.DataType) -> str | None:
    if pa.types.is_timestamp(arrow_type):
        return f"timestamp:{arrow_type.unit}:{arrow_type.tz or '-'}"
    if pa.types.is_time32(arrow_type) or pa.types.is_time64(arrow_type):
        return f"time{arrow_type.bit_width}:{arrow_type.unit}"
    if pa.types.is_duration(arrow_type):
        return f"duration:{arrow_type.unit}"
    return None


def _with_units(lance_type: dict[str, Any], arrow_type: pa.DataType) -> None:
    """`lance_type` (converted from the spec form) given the units of `arrow_type`."""
    name = _unit_name(arrow_type)
    if name is not None:
        lance_type["type"] = name
    children = lance_type.get("fields") or []
    arrow_children = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
    for child, arrow_child in zip(children, arrow_children, strict=False):
        _with_units(child["type"], arrow_child.type)


def as_lancedb_describe(payload: dict[str, Any], arrow_schema: str | None) -> dict[str, Any]:
    """A DescribeTable answer with its schema in the form LanceDB's remote client parses,
    with the units of `arrow_schema` (base64 Arrow IPC) when given."""
    schema = payload.get("schema")
    if not schema:
        return payload
    fields = [lance_json_field(field) for field in schema.get("fields", [])]
    if arrow_schema is not None:
        real = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(arrow_schema)))
        by_name = {field.name: field for field in real}
        for field in fields:
            if field["name"] in by_name:
                _with_units(field["type"], by_name[field["name"]].type)
    converted: dict[str, Any] = {"fields": fields}
    if schema.get("metadata"):
        converted["metadata"] = schema["metadata"]
    payload["schema"] = converted
    return payload
