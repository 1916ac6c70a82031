"""The one converter between Arrow types and the spec's JSON form (`backends/core/arrow_schema.py`):
what it writes reads back as the same type, decimals keep their scale, and what is not a type
of the form is refused."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from backends.core.arrow_schema import arrow_schema_to_json, arrow_type_from_json
from tests.support.arrow_types import COLUMNS


def json_type(data_type: pa.DataType) -> dict[str, Any]:
    described = arrow_schema_to_json(pa.schema([pa.field("c", data_type)])).to_dict()
    return described["fields"][0]["type"]


@pytest.mark.parametrize(("name", "data_type"), [(name, t) for name, t, _ in COLUMNS])
def test_what_it_writes_reads_back_as_the_type_it_describes(name: str, data_type: pa.DataType):
    described = json_type(data_type)
    assert json_type(arrow_type_from_json(described)) == described


@pytest.mark.parametrize(
    ("data_type", "described"),
    [
        (pa.decimal128(10, 2), {"type": "decimal128", "length": 10002}),
        (pa.decimal128(38, 0), {"type": "decimal128", "length": 38000}),
        (pa.decimal256(76, 38), {"type": "decimal256", "length": 76038}),
        (pa.binary(16), {"type": "fixed_size_binary", "length": 16}),
        (
            pa.map_(pa.string(), pa.list_(pa.float32(), 2)),
            {"type": "map", "fields": [{"name": "entries", "nullable": False, "type": {
                "type": "struct", "fields": [
                    {"name": "key", "nullable": False, "type": {"type": "utf8"}},
                    {"name": "value", "nullable": True, "type": {
                        "type": "fixed_size_list", "length": 2,
                        "fields": [{"name": "item", "nullable": True, "type": {"type": "float32"}}],
                    }},
                ]}}]},
        ),
    ],
)  # fmt: skip
def test_types_with_parameters_keep_them_both_ways(data_type: pa.DataType, described: dict):
    assert json_type(data_type) == described
    assert arrow_type_from_json(described) == data_type


@pytest.mark.parametrize(
    ("written", "read"),
    [
        (pa.timestamp("ns", tz="UTC"), pa.timestamp("us")),
        (pa.time32("s"), pa.time32("ms")),
        (pa.time64("ns"), pa.time64("us")),
        (pa.duration("s"), pa.duration("us")),
        (pa.dictionary(pa.int8(), pa.large_string()), pa.large_string()),
        (pa.string_view(), pa.string()),
        (pa.uuid(), pa.binary(16)),
    ],
)
def test_what_the_form_does_not_carry_reads_back_as_lances_default(written, read) -> None:
    assert arrow_type_from_json(json_type(written)) == read


def test_a_bare_decimal_precision_reads_with_scale_zero() -> None:
    assert arrow_type_from_json({"type": "decimal128", "length": 10}) == pa.decimal128(10, 0)


def test_an_extension_type_is_named_in_its_fields_metadata() -> None:
    field = arrow_schema_to_json(pa.schema([pa.field("id", pa.uuid(), metadata={"a": "b"})]))
    extension = {"ARROW:extension:name": "arrow.uuid", "ARROW:extension:metadata": ""}
    assert field.fields[0].metadata == {"a": "b", **extension}


@pytest.mark.parametrize(
    ("described", "why"),
    [
        ({"type": "interval"}, "data_type must be one of binary, bool"),
        ({}, "data_type must be one of binary, bool"),
        ({"type": "decimal128"}, "data_type 'decimal128' needs a positive length"),
        ({"type": "decimal128", "length": 40000}, "precision should be between 1 and 38"),
        ({"type": "fixed_size_binary", "length": 0},
         "data_type 'fixed_size_binary' needs a positive length"),
        ({"type": "list"}, "data_type must be one of binary, bool"),
        ({"type": "map", "fields": [{"name": "entries", "type": {"type": "struct", "fields": []}}]},
         "a map's entries are a key and a value"),
    ],
)
def test_what_is_not_a_type_of_the_form_is_refused(described: dict[str, Any], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        arrow_type_from_json(described)
