"""Arrow schema → Unity `columns`.

Unity describes a column the way Spark does: a type name (ColumnTypeName), a SQL type text and
the Spark JSON of the field.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

_SIMPLE_TYPES: list[tuple[Any, str, str, str]] = [
    # (arrow predicate, type_name, Spark JSON type, SQL type text)
    (pa.types.is_boolean, "BOOLEAN", "boolean", "boolean"),
    (pa.types.is_int8, "BYTE", "byte", "tinyint"),
    (lambda t: pa.types.is_int16(t) or pa.types.is_uint8(t), "SHORT", "short", "smallint"),
    (lambda t: pa.types.is_int32(t) or pa.types.is_uint16(t), "INT", "integer", "int"),
    (lambda t: pa.types.is_int64(t) or pa.types.is_uint32(t), "LONG", "long", "bigint"),
    (lambda t: pa.types.is_float16(t) or pa.types.is_float32(t), "FLOAT", "float", "float"),
    (pa.types.is_float64, "DOUBLE", "double", "double"),
    (
        lambda t: (
            pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
        ),
        "STRING",
        "string",
        "string",
    ),
    (
        lambda t: (
            pa.types.is_binary(t)
            or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t)
            or pa.types.is_binary_view(t)
        ),
        "BINARY",
        "binary",
        "binary",
    ),
    (pa.types.is_date, "DATE", "date", "date"),
    (pa.types.is_null, "NULL", "void", "void"),
]


def unity_columns(schema: pa.Schema) -> list[dict[str, Any]]:
    """Unity `ColumnInfo`s for the top-level fields of an Arrow schema."""
    columns = []
    for position, field in enumerate(schema):
        type_name, spark_type, type_text = _unity_type(field.type)
        column: dict[str, Any] = {
            "name": field.name,
            "type_name": type_name,
            "type_text": type_text,
            "type_json": json.dumps(_spark_field(field.name, spark_type, field.nullable)),
            "position": position,
            "nullable": field.nullable,
        }
        if pa.types.is_decimal(field.type):
            column["type_precision"] = field.type.precision
            column["type_scale"] = field.type.scale
        elif pa.types.is_uint64(field.type):
            column["type_precision"], column["type_scale"] = 20, 0
        columns.append(column)
    return columns


def _spark_field(name: str, spark_type: Any, nullable: bool) -> dict[str, Any]:
    return {"name": name, "type": spark_type, "nullable": nullable, "metadata": {}}


def _unity_type(data_type: pa.DataType) -> tuple[str, Any, str]:
    """(type_name, Spark JSON type, SQL type text) for an Arrow type."""
    if pa.types.is_dictionary(data_type):
        return _unity_type(data_type.value_type)
    if isinstance(data_type, pa.BaseExtensionType):
        return _unity_type(data_type.storage_type)
    for predicate, type_name, spark_type, type_text in _SIMPLE_TYPES:
        if predicate(data_type):
            return type_name, spark_type, type_text
    if pa.types.is_uint64(data_type):
        return "DECIMAL", "decimal(20,0)", "decimal(20,0)"
    if pa.types.is_decimal(data_type):
        text = f"decimal({data_type.precision},{data_type.scale})"
        return "DECIMAL", text, text
    if pa.types.is_timestamp(data_type):
        if data_type.tz:
            return "TIMESTAMP", "timestamp", "timestamp"
        return "TIMESTAMP_NTZ", "timestamp_ntz", "timestamp_ntz"
    if _is_list(data_type):
        element = data_type.value_field
        _, element_json, element_text = _unity_type(element.type)
        spark = {"type": "array", "elementType": element_json, "containsNull": element.nullable}
        return "ARRAY", spark, f"array<{element_text}>"
    if pa.types.is_struct(data_type):
        return _struct_type(data_type)
    if pa.types.is_map(data_type):
        _, key_json, key_text = _unity_type(data_type.key_type)
        item = data_type.item_field
        _, value_json, value_text = _unity_type(item.type)
        spark = {
            "type": "map",
            "keyType": key_json,
            "valueType": value_json,
            "valueContainsNull": item.nullable,
        }
        return "MAP", spark, f"map<{key_text},{value_text}>"
    # Times, durations and other types Spark SQL has no name for.
    return "USER_DEFINED_TYPE", str(data_type), str(data_type)


def _is_list(data_type: pa.DataType) -> bool:
    return (
        pa.types.is_list(data_type)
        or pa.types.is_large_list(data_type)
        or pa.types.is_fixed_size_list(data_type)
        or pa.types.is_list_view(data_type)
        or pa.types.is_large_list_view(data_type)
    )


def _struct_type(data_type: pa.StructType) -> tuple[str, Any, str]:
    fields, texts = [], []
    for index in range(data_type.num_fields):
        child = data_type.field(index)
        _, child_json, child_text = _unity_type(child.type)
        fields.append(_spark_field(child.name, child_json, child.nullable))
        texts.append(f"{child.name}:{child_text}")
    return "STRUCT", {"type": "struct", "fields": fields}, f"struct<{','.join(texts)}>"
