"""A table with a column of every Arrow type Lance stores, each holding a value and a null."""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

WHEN = datetime.datetime(2024, 2, 29, 12, 30, 45, 123456)
POINT = {"x": 1, "tags": ["a", "b"]}
POINT_TYPE = pa.struct([("x", pa.int32()), ("tags", pa.list_(pa.string()))])

# (column, Arrow type, a value)
COLUMNS: list[tuple[str, pa.DataType, Any]] = [
    ("bool", pa.bool_(), True),
    *((name, getattr(pa, name)(), 7) for name in ("int8", "int16", "int32", "int64")),
    *((name, getattr(pa, name)(), 7) for name in ("uint8", "uint16", "uint32", "uint64")),
    ("float16", pa.float16(), np.float16(1.5)),
    ("float32", pa.float32(), 1.5),
    ("float64", pa.float64(), 1.5),
    # Two decimal128 columns in a row: an IPC stream aligns buffers to 8 bytes and each takes
    # 40, so one of them is off the 16 bytes Lance needs, whatever the stream's start.
    ("decimal128", pa.decimal128(10, 2), Decimal("12345678.91")),
    ("decimal128_whole", pa.decimal128(38, 0), Decimal(10**37)),
    ("decimal256", pa.decimal256(40, 5), Decimal("12345678901234567890123456789012345.67891")),
    ("utf8", pa.string(), "text"),
    ("large_utf8", pa.large_string(), "text"),
    ("binary", pa.binary(), b"\x00\x01"),
    ("large_binary", pa.large_binary(), b"\x00\x01"),
    ("fixed_binary", pa.binary(4), b"abcd"),
    ("date32", pa.date32(), WHEN.date()),
    ("date64", pa.date64(), WHEN.date()),
    *(
        (f"timestamp_{unit}_{(zone or 'naive').split('/')[-1]}", pa.timestamp(unit, tz=zone), WHEN)
        for unit in ("s", "ms", "us", "ns")
        for zone in (None, "UTC", "America/New_York")
    ),
    ("time32_s", pa.time32("s"), WHEN.time().replace(microsecond=0)),
    ("time32_ms", pa.time32("ms"), WHEN.time().replace(microsecond=123000)),
    ("time64_us", pa.time64("us"), WHEN.time()),
    ("time64_ns", pa.time64("ns"), WHEN.time()),
    ("duration", pa.duration("ms"), datetime.timedelta(seconds=90)),
    ("list", pa.list_(pa.int64()), [1, None, 3]),
    ("large_list", pa.large_list(pa.string()), ["a", None]),
    ("vector", pa.list_(pa.float32(), 3), [0.5, 1.0, 1.5]),
    ("struct", POINT_TYPE, POINT),
    ("map", pa.map_(pa.string(), pa.int64()), [("k", 1)]),
    ("dictionary", pa.dictionary(pa.int32(), pa.string()), "repeated"),
    ("uuid", pa.uuid(), uuid.UUID(int=1).bytes),
    ("json", pa.json_(), '{"a":1}'),  # in the normal form Lance keeps JSON in
    ("tensor", pa.fixed_shape_tensor(pa.float32(), [2, 2]), [1.0, 2.0, 3.0, 4.0]),
    (
        "nested",
        pa.struct([("points", pa.large_list(POINT_TYPE)), ("pair", pa.list_(pa.int8(), 2))]),
        {"points": [POINT, None], "pair": [1, 2]},
    ),
]


def every_type_table() -> pa.Table:
    """Every column of COLUMNS, a non-nullable one with field metadata, and schema metadata."""
    fields = [pa.field(name, data_type) for name, data_type, _ in COLUMNS]
    fields.append(pa.field("required", pa.int64(), nullable=False, metadata={"unit": "m"}))
    columns = [pa.array([value, None], data_type) for _, data_type, value in COLUMNS]
    columns.append(pa.array([1, 2], pa.int64()))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata={"origin": "test"}))
