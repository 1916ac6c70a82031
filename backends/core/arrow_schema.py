"""Arrow types and schemas in the JSON form of the Lance Namespace spec (`JsonArrowSchema`),
both ways, written as pylance's DirectoryNamespace writes them; and which Arrow types Lance
cannot store (`unstorable_columns`).

The form gives a type's name and, where the type has them, its child `fields` and a `length`: a
fixed size, or a decimal's `precision * 1000 + scale`. It has no unit or time zone: timestamps,
times and durations read back in Lance's default unit. A dictionary is described by its value
type, an extension type by its storage type with its name and metadata in the field's metadata.

Read back, a type may also be named as Lance's own JSON schema names it (as LanceDB's remote
client sends it): `float`, `double`, `halffloat`, `string`, `large_string`, and the forms with
a unit (`timestamp:ms:UTC`, `time64:ns`, `duration:s`, `date32:day`, `decimal:128:10:2`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import lance
import pyarrow as pa
from lance_namespace_urllib3_client.models import JsonArrowDataType, JsonArrowField, JsonArrowSchema

DECIMAL_SCALE_FACTOR = 1000  # a decimal's length is precision * 1000 + scale

_NAMED_TYPES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float16": pa.float16(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "utf8": pa.string(),
    "large_utf8": pa.large_string(),
    "binary": pa.binary(),
    "large_binary": pa.large_binary(),
    "date32": pa.date32(),
    "date64": pa.date64(),
    # Named without their unit (and time zone): read back in Lance's default unit.
    "timestamp": pa.timestamp("us"),
    "time32": pa.time32("ms"),
    "time64": pa.time64("us"),
    "duration": pa.duration("us"),
}
# By Arrow type id, so every unit and time zone of a type has its one name; views are stored
# as the plain type.
_NAMES_BY_ID: dict[int, str] = {
    **{data_type.id: name for name, data_type in _NAMED_TYPES.items()},
    pa.string_view().id: "utf8",
    pa.binary_view().id: "binary",
}
_DECIMALS: dict[str, Any] = {
    "decimal32": pa.decimal32,
    "decimal64": pa.decimal64,
    "decimal128": pa.decimal128,
    "decimal256": pa.decimal256,
}


# -- Arrow → JSON ------------------------------------------------------------------------------


def arrow_schema_to_json(schema: pa.Schema) -> JsonArrowSchema:
    return JsonArrowSchema(
        fields=[_json_field(field) for field in schema], metadata=_text_map(schema.metadata)
    )


def _json_field(field: pa.Field) -> JsonArrowField:
    data_type, metadata = field.type, _text_map(field.metadata) or {}
    if isinstance(data_type, pa.BaseExtensionType):
        metadata |= _extension_metadata(data_type)
        data_type = data_type.storage_type
    json_type = _json_type(data_type)
    return JsonArrowField(
        name=field.name, nullable=field.nullable, type=json_type, metadata=metadata or None
    )


def _json_type(data_type: pa.DataType) -> JsonArrowDataType:
    if pa.types.is_dictionary(data_type):
        return _json_type(data_type.value_type)
    if data_type.id in _NAMES_BY_ID:
        return JsonArrowDataType(type=_NAMES_BY_ID[data_type.id])
    if pa.types.is_decimal(data_type):
        length = data_type.precision * DECIMAL_SCALE_FACTOR + data_type.scale
        return JsonArrowDataType(type=f"decimal{data_type.bit_width}", length=length)
    if pa.types.is_fixed_size_binary(data_type):
        return JsonArrowDataType(type="fixed_size_binary", length=data_type.byte_width)
    if pa.types.is_fixed_size_list(data_type):
        child = _json_field(data_type.value_field)
        return JsonArrowDataType(type="fixed_size_list", length=data_type.list_size, fields=[child])
    if pa.types.is_large_list(data_type) or pa.types.is_list(data_type):
        name = "large_list" if pa.types.is_large_list(data_type) else "list"
        return JsonArrowDataType(type=name, fields=[_json_field(data_type.value_field)])
    if pa.types.is_map(data_type):
        entries = pa.struct([data_type.key_field, data_type.item_field])
        fields = [_json_field(pa.field("entries", entries, nullable=False))]
        return JsonArrowDataType(type="map", fields=fields)
    if pa.types.is_struct(data_type):
        fields = [_json_field(data_type.field(i)) for i in range(data_type.num_fields)]
        return JsonArrowDataType(type="struct", fields=fields)
    # Lance stores none of the rest (unions, intervals, run-end encoded…): Arrow's own name.
    return JsonArrowDataType(type=str(data_type))


def _extension_metadata(data_type: pa.BaseExtensionType) -> dict[str, str]:
    """The field metadata naming an extension type where Arrow leaves the process (C++'s own
    extension types do not serialise in Python: pylance's schema export writes them)."""
    exported = lance.schema_to_json(pa.schema([pa.field("extension", data_type)]))
    return exported["fields"][0]["metadata"]


def _text_map(metadata: Mapping[bytes, bytes] | None) -> dict[str, str] | None:
    return {key.decode(): value.decode() for key, value in (metadata or {}).items()} or None


# -- what Lance stores --------------------------------------------------------------------------

# Arrow types Lance's writer refuses (pylance 14: "Unsupported data type"), at any depth.
_UNSTORABLE = (
    pa.types.is_union,
    pa.types.is_interval,
    pa.types.is_list_view,
    pa.types.is_large_list_view,
    pa.types.is_run_end_encoded,
    lambda data_type: pa.types.is_decimal(data_type) and data_type.bit_width < 128,
)


def unstorable_columns(schema: pa.Schema) -> list[str]:
    """`name (type)` for each column whose type, or a type nested in it, Lance cannot store."""
    return [f"{field.name} ({field.type})" for field in schema if not _storable(field.type)]


def _storable(data_type: pa.DataType) -> bool:
    if isinstance(data_type, pa.BaseExtensionType):
        return _storable(data_type.storage_type)
    if any(refused(data_type) for refused in _UNSTORABLE):
        return False
    if pa.types.is_dictionary(data_type):
        return _storable(data_type.value_type)
    return all(_storable(data_type.field(i).type) for i in range(data_type.num_fields))


# -- JSON → Arrow ------------------------------------------------------------------------------


# Lance's own names of the types the spec names otherwise.
_LANCE_NAMES: dict[str, pa.DataType] = {
    "halffloat": pa.float16(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "large_string": pa.large_string(),
}
_UNITS = frozenset({"s", "ms", "us", "ns"})
# Lance's `<name>:<unit>` forms: the Arrow type of each name, given the unit.
_WITH_UNIT: dict[str, Any] = {
    "time32": pa.time32,
    "time64": pa.time64,
    "duration": pa.duration,
}


def _lance_named(name: str) -> pa.DataType | None:
    """The type Lance's JSON schema names `name` (`double`, `timestamp:ms:UTC`…), or None."""
    if name in _LANCE_NAMES:
        return _LANCE_NAMES[name]
    kind, _, rest = name.partition(":")
    if not rest:
        return None
    if kind == "timestamp":
        unit, _, zone = rest.partition(":")
        if unit in _UNITS:
            return pa.timestamp(unit, None if zone in ("", "-") else zone)
    if kind in _WITH_UNIT and rest in _UNITS:
        return _WITH_UNIT[kind](rest)
    if (kind, rest) in (("date32", "day"), ("date64", "ms")):
        return _NAMED_TYPES[kind]
    if kind == "decimal":
        bits, _, digits = rest.partition(":")
        precision, _, scale = digits.partition(":")
        if f"decimal{bits}" in _DECIMALS and precision.isdigit() and scale.isdigit():
            return _DECIMALS[f"decimal{bits}"](int(precision), int(scale))
    return None


def arrow_type_from_json(json_type: Mapping[str, Any]) -> pa.DataType:
    """The Arrow type a `JsonArrowDataType` (as a dict) describes, in the spec's names or
    Lance's own; ValueError if none."""
    name = str(json_type.get("type") or "").lower()
    if name in _NAMED_TYPES:
        return _NAMED_TYPES[name]
    try:
        lance_named = _lance_named(str(json_type.get("type") or ""))
    except (ValueError, pa.ArrowInvalid) as error:
        raise ValueError(f"data_type {json_type!r} is not a type: {error}") from None
    if lance_named is not None:
        return lance_named
    if name in _DECIMALS:
        precision, scale = _precision_and_scale(_length(json_type))
        return _DECIMALS[name](precision, scale)
    if name == "fixed_size_binary":
        return pa.binary(_length(json_type))
    children = [_arrow_field(child) for child in json_type.get("fields") or []]
    if name in ("list", "large_list", "fixed_size_list", "map") and len(children) == 1:
        return _list_type(name, children[0], json_type)
    if name == "struct":
        return pa.struct(children)
    known = ", ".join(sorted([*_NAMED_TYPES, *_DECIMALS, "fixed_size_binary", "list", "struct"]))
    raise ValueError(f"data_type must be one of {known} (with its fields), got {json_type!r}")


def _list_type(name: str, child: pa.Field, json_type: Mapping[str, Any]) -> pa.DataType:
    if name == "map":
        if child.type.num_fields != 2:
            raise ValueError(f"a map's entries are a key and a value, got {json_type!r}")
        return pa.map_(child.type.field(0), child.type.field(1))
    if name == "fixed_size_list":
        return pa.list_(child, _length(json_type))
    return pa.large_list(child) if name == "large_list" else pa.list_(child)


def _arrow_field(json_field: Mapping[str, Any]) -> pa.Field:
    return pa.field(
        str(json_field.get("name", "")),
        arrow_type_from_json(json_field.get("type") or {}),
        nullable=json_field.get("nullable", True) is not False,
        metadata=json_field.get("metadata") or None,
    )


def _length(json_type: Mapping[str, Any]) -> int:
    length = json_type.get("length")
    if not isinstance(length, int) or isinstance(length, bool) or length <= 0:
        raise ValueError(f"data_type {json_type.get('type')!r} needs a positive length")
    return length


def _precision_and_scale(length: int) -> tuple[int, int]:
    """A length under 1000 is a bare precision (the form this adapter wrote before)."""
    if length < DECIMAL_SCALE_FACTOR:
        return length, 0
    return divmod(length, DECIMAL_SCALE_FACTOR)
