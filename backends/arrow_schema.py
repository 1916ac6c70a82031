"""Arrow schemas in the JSON form of the Lance Namespace spec (`JsonArrowSchema`)."""

from __future__ import annotations

import pyarrow as pa
from lance_namespace_urllib3_client.models import JsonArrowDataType, JsonArrowField, JsonArrowSchema

_SIMPLE_TYPE_NAMES: dict[pa.DataType, str] = {
    pa.null(): "null",
    pa.bool_(): "bool",
    pa.int8(): "int8",
    pa.int16(): "int16",
    pa.int32(): "int32",
    pa.int64(): "int64",
    pa.uint8(): "uint8",
    pa.uint16(): "uint16",
    pa.uint32(): "uint32",
    pa.uint64(): "uint64",
    pa.float16(): "float16",
    pa.float32(): "float32",
    pa.float64(): "float64",
    pa.string(): "utf8",
    pa.large_string(): "large_utf8",
    pa.binary(): "binary",
    pa.large_binary(): "large_binary",
    pa.date32(): "date32",
    pa.date64(): "date64",
}


def _json_type(data_type: pa.DataType) -> JsonArrowDataType:
    if data_type in _SIMPLE_TYPE_NAMES:
        return JsonArrowDataType(type=_SIMPLE_TYPE_NAMES[data_type])
    if pa.types.is_fixed_size_list(data_type):
        return JsonArrowDataType(
            type="fixed_size_list",
            length=data_type.list_size,
            fields=[_json_field(data_type.value_field)],
        )
    if pa.types.is_large_list(data_type):
        return JsonArrowDataType(type="large_list", fields=[_json_field(data_type.value_field)])
    if pa.types.is_list(data_type):
        return JsonArrowDataType(type="list", fields=[_json_field(data_type.value_field)])
    if pa.types.is_map(data_type):
        entries = pa.field(
            "entries", pa.struct([data_type.key_field, data_type.item_field]), nullable=False
        )
        return JsonArrowDataType(type="map", fields=[_json_field(entries)])
    if pa.types.is_struct(data_type):
        children = [_json_field(data_type.field(i)) for i in range(data_type.num_fields)]
        return JsonArrowDataType(type="struct", fields=children)
    if pa.types.is_fixed_size_binary(data_type):
        return JsonArrowDataType(type="fixed_size_binary", length=data_type.byte_width)
    if pa.types.is_decimal(data_type):
        return JsonArrowDataType(type=f"decimal{data_type.bit_width}", length=data_type.precision)
    # timestamp, time and duration carry their unit in the Arrow name (e.g. timestamp[us]).
    return JsonArrowDataType(type=str(data_type).split("[")[0].split("(")[0])


def _json_field(field: pa.Field) -> JsonArrowField:
    metadata = {k.decode(): v.decode() for k, v in (field.metadata or {}).items()} or None
    return JsonArrowField(
        name=field.name, nullable=field.nullable, type=_json_type(field.type), metadata=metadata
    )


def arrow_schema_to_json(schema: pa.Schema) -> JsonArrowSchema:
    metadata = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()} or None
    return JsonArrowSchema(fields=[_json_field(field) for field in schema], metadata=metadata)


_TYPES_BY_NAME = {name: data_type for data_type, name in _SIMPLE_TYPE_NAMES.items()}


def arrow_type_from_json(json_type: dict[str, object]) -> pa.DataType:
    """The Arrow type of a `JsonArrowDataType` of a primitive type (what a cast names)."""
    name = json_type.get("type")
    if not isinstance(name, str) or name.lower() not in _TYPES_BY_NAME:
        known = ", ".join(sorted(_TYPES_BY_NAME))
        raise ValueError(f"data_type must name one of {known}, got {json_type!r}")
    return _TYPES_BY_NAME[name.lower()]
