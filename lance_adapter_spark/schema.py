"""Type mapping between Spark schemas and the Arrow schemas of Lance tables.

Spark ships Arrow batches whose exact types depend on session settings (time zone,
large variable-width types), so every batch is cast to one target schema before Lance
sees it, and every batch read from Lance is cast to exactly what Spark expects.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T

from lance_adapter_spark.options import LanceSourceError

# Spark keeps timestamps as microseconds since the epoch in UTC.
SPARK_TIMESTAMP = pa.timestamp("us", tz="UTC")
SPARK_TIMESTAMP_NTZ = pa.timestamp("us")

_PRIMITIVE_TO_ARROW: dict[type[T.DataType], pa.DataType] = {
    T.BooleanType: pa.bool_(),
    T.ByteType: pa.int8(),
    T.ShortType: pa.int16(),
    T.IntegerType: pa.int32(),
    T.LongType: pa.int64(),
    T.FloatType: pa.float32(),
    T.DoubleType: pa.float64(),
    T.StringType: pa.utf8(),
    T.BinaryType: pa.binary(),
    T.DateType: pa.date32(),
    T.TimestampType: SPARK_TIMESTAMP,
    T.TimestampNTZType: SPARK_TIMESTAMP_NTZ,
}


def unsupported_type_error(column: str, data_type: object) -> LanceSourceError:
    type_name = data_type.simpleString() if isinstance(data_type, T.DataType) else str(data_type)
    return LanceSourceError(
        f"column '{column}' has type {type_name}, which the lance data source does not "
        "support (use primitives, decimal, date, timestamp, string, binary, array, struct or map)"
    )


def arrow_type_for(column: str, data_type: T.DataType) -> pa.DataType:
    """The Arrow type a Lance table stores for a Spark type; `column` names it in errors."""
    for spark_class, arrow_type in _PRIMITIVE_TO_ARROW.items():
        if type(data_type) is spark_class:
            return arrow_type
    if isinstance(data_type, T.DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    if isinstance(data_type, T.ArrayType):
        element = arrow_type_for(column, data_type.elementType)
        return pa.list_(pa.field("element", element, data_type.containsNull))
    if isinstance(data_type, T.MapType):
        key = arrow_type_for(column, data_type.keyType)
        value = arrow_type_for(column, data_type.valueType)
        return pa.map_(
            pa.field("key", key, False), pa.field("value", value, data_type.valueContainsNull)
        )
    if isinstance(data_type, T.StructType):
        return pa.struct([arrow_field_for(f, f"{column}.{f.name}") for f in data_type.fields])
    raise unsupported_type_error(column, data_type)


def arrow_field_for(spark_field: T.StructField, column: str | None = None) -> pa.Field:
    arrow_type = arrow_type_for(column or spark_field.name, spark_field.dataType)
    return pa.field(spark_field.name, arrow_type, spark_field.nullable)


def is_float_array(data_type: T.DataType) -> bool:
    return isinstance(data_type, T.ArrayType) and isinstance(
        data_type.elementType, T.FloatType | T.DoubleType
    )


def vector_type(column: str, data_type: T.DataType, dimension: int) -> pa.DataType:
    """A fixed-size list type for an array<float>/array<double> column named as a vector."""
    if not is_float_array(data_type):
        raise LanceSourceError(
            f"vector column '{column}' must be array<float> or array<double>, "
            f"got {data_type.simpleString()}"
        )
    element = arrow_type_for(column, data_type.elementType)
    return pa.list_(pa.field("item", element, data_type.containsNull), dimension)


def lance_schema_for(spark_schema: T.StructType, vectors: dict[str, int]) -> pa.Schema:
    """The Arrow schema of a new Lance table written from `spark_schema`."""
    unknown = sorted(set(vectors) - set(spark_schema.fieldNames()))
    if unknown:
        raise LanceSourceError(f"vector column '{unknown[0]}' is not a column of the DataFrame")
    fields = []
    for spark_field in spark_schema.fields:
        if spark_field.name in vectors:
            arrow_type = vector_type(
                spark_field.name, spark_field.dataType, vectors[spark_field.name]
            )
            fields.append(pa.field(spark_field.name, arrow_type, spark_field.nullable))
        else:
            fields.append(arrow_field_for(spark_field))
    return pa.schema(fields)


# Arrow types Spark has no exact match for, read as the nearest type holding every value.
_WIDENED_ON_READ: dict[pa.DataType, T.DataType] = {
    pa.uint8(): T.ShortType(),
    pa.uint16(): T.IntegerType(),
    pa.uint32(): T.LongType(),
    pa.uint64(): T.DecimalType(20, 0),
    pa.float16(): T.FloatType(),
    pa.date64(): T.DateType(),
}


def time_of_day_type() -> T.DataType:
    """Spark's TIME type where this Spark has one (4.1+), else microseconds as bigint."""
    time_type = getattr(T, "TimeType", None)
    return time_type(6) if time_type else T.LongType()


def spark_type_for(column: str, arrow_type: pa.DataType) -> T.DataType:
    """The Spark type a Lance column is read as (docs/spark.md, Types).

    Fixed-size lists of floats (vectors) become arrays with non-null elements: Spark
    copies those into its rows without a null check per element, which makes reads of
    vector columns much faster; a null element is reported when it is read.
    """
    for spark_class, known in _PRIMITIVE_TO_ARROW.items():
        if arrow_type == known and spark_class not in (T.TimestampType, T.TimestampNTZType):
            return spark_class()
    if arrow_type in _WIDENED_ON_READ:
        return _WIDENED_ON_READ[arrow_type]
    if pa.types.is_dictionary(arrow_type):
        return spark_type_for(column, arrow_type.value_type)
    if pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type):
        return T.StringType()
    if pa.types.is_large_binary(arrow_type) or pa.types.is_fixed_size_binary(arrow_type):
        return T.BinaryType()
    if pa.types.is_timestamp(arrow_type):
        return T.TimestampType() if arrow_type.tz else T.TimestampNTZType()
    if pa.types.is_time(arrow_type):
        return time_of_day_type()
    if pa.types.is_decimal128(arrow_type):
        return T.DecimalType(arrow_type.precision, arrow_type.scale)
    if pa.types.is_map(arrow_type):
        return T.MapType(
            spark_type_for(column, arrow_type.key_type),
            spark_type_for(column, arrow_type.item_type),
            arrow_type.item_field.nullable,
        )
    if pa.types.is_fixed_size_list(arrow_type) and pa.types.is_floating(arrow_type.value_type):
        return T.ArrayType(spark_type_for(column, arrow_type.value_type), False)
    if (
        pa.types.is_list(arrow_type)
        or pa.types.is_large_list(arrow_type)
        or pa.types.is_fixed_size_list(arrow_type)
    ):
        element = spark_type_for(column, arrow_type.value_type)
        return T.ArrayType(element, arrow_type.value_field.nullable)
    if pa.types.is_struct(arrow_type):
        return T.StructType([spark_field_for(f, f"{column}.{f.name}") for f in arrow_type])
    raise unsupported_type_error(column, arrow_type)


def spark_field_for(arrow_field: pa.Field, column: str | None = None) -> T.StructField:
    data_type = spark_type_for(column or arrow_field.name, arrow_field.type)
    return T.StructField(arrow_field.name, data_type, arrow_field.nullable)


def spark_schema_for(arrow_schema: pa.Schema) -> T.StructType:
    return T.StructType([spark_field_for(f) for f in arrow_schema])


def vector_dimensions(arrow_schema: pa.Schema) -> dict[str, int]:
    """The fixed-size list columns of a table and their sizes."""
    return {f.name: f.type.list_size for f in arrow_schema if pa.types.is_fixed_size_list(f.type)}


def check_append_schema(spark_schema: T.StructType, table_schema: pa.Schema) -> None:
    """Raise a LanceSourceError naming the first column that cannot be appended as is."""
    table_columns = {f.name: f for f in table_schema}
    spark_columns = set(spark_schema.fieldNames())
    for spark_field in spark_schema.fields:
        table_field = table_columns.get(spark_field.name)
        if table_field is None:
            raise LanceSourceError(
                f"schema mismatch on append: column '{spark_field.name}' is not in the table "
                f"(table columns: {', '.join(table_columns)})"
            )
        expected = spark_type_for(spark_field.name, table_field.type)
        if not _same_spark_type(spark_field.dataType, expected):
            raise LanceSourceError(
                f"schema mismatch on append: column '{spark_field.name}' is "
                f"{spark_field.dataType.simpleString()} in the DataFrame but "
                f"{expected.simpleString()} in the table"
            )
    missing = [name for name in table_columns if name not in spark_columns]
    if missing:
        raise LanceSourceError(
            f"schema mismatch on append: column '{missing[0]}' of the table is missing "
            "from the DataFrame"
        )


def _same_spark_type(left: T.DataType, right: T.DataType) -> bool:
    """Equal types, ignoring nullability of nested elements (Spark often relaxes it)."""
    return _without_nullability(left) == _without_nullability(right)


def _without_nullability(data_type: T.DataType) -> T.DataType:
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(_without_nullability(data_type.elementType), True)
    if isinstance(data_type, T.MapType):
        return T.MapType(
            _without_nullability(data_type.keyType), _without_nullability(data_type.valueType), True
        )
    if isinstance(data_type, T.StructType):
        return T.StructType(
            [T.StructField(f.name, _without_nullability(f.dataType), True) for f in data_type]
        )
    return data_type


def conform_write_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """Cast a batch from Spark to the table's schema `target`, matching columns by name.

    Decimal columns whose buffers are not 16-byte aligned are copied: Arrow IPC from the
    JVM aligns to 8 bytes, and Lance refuses decimal128 buffers aligned so.
    """
    columns = []
    for target_field in target:
        column = batch.column(target_field.name)
        if not target_field.nullable and column.null_count:
            raise LanceSourceError(
                f"column '{target_field.name}' is not nullable in the table, but the "
                f"DataFrame has {column.null_count} null(s) in it in this batch; "
                "filter or fill the nulls first"
            )
        columns.append(_aligned(_cast_column(target_field, column)))
    return pa.RecordBatch.from_arrays(columns, schema=target)


def conform_read_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """Cast a batch read from Lance to the Arrow schema Spark expects, by column name."""
    columns = []
    for target_field in target:
        column = batch.column(target_field.name)
        _check_no_null_elements(target_field, column)
        columns.append(_cast_read_column(target_field, column))
    return pa.RecordBatch.from_arrays(columns, schema=target)


def _check_no_null_elements(target_field: pa.Field, column: pa.Array) -> None:
    if pa.types.is_fixed_size_list(column.type) and not target_field.type.value_field.nullable:
        check_no_null_elements(target_field.name, column, target_field.type.value_type)


def check_no_null_elements(name: str, vector: pa.Array, element_type: pa.DataType) -> None:
    """Raise when the fixed-size list column `name`, read as an array of `element_type`
    without null elements (`spark_type_for`), holds a null element."""
    if vector.flatten().null_count:
        raise LanceSourceError(
            f"vector column '{name}' has a null element, which Spark reads as "
            f"array<{element_type}> without nulls; to read it anyway give "
            "the read a schema whose array allows nulls, e.g. .schema('v ARRAY<FLOAT>')"
        )


def _cast_read_column(target_field: pa.Field, column: pa.Array) -> pa.Array:
    if column.type == target_field.type:
        return column
    if pa.types.is_time(column.type) and pa.types.is_int64(target_field.type):
        column = column.cast(pa.time64("us"), safe=False)  # Spark without TIME: microseconds
    try:
        return column.cast(target_field.type)
    except pa.ArrowInvalid:
        if not _holds_instants(column.type):
            raise
    # Digits below Spark's microsecond (or a date64 past midnight) are truncated toward
    # zero, as pyspark does when it converts nanosecond timestamps.
    return column.cast(target_field.type, safe=False)


def _holds_instants(arrow_type: pa.DataType) -> bool:
    if pa.types.is_timestamp(arrow_type) or pa.types.is_time(arrow_type):
        return True
    if pa.types.is_date64(arrow_type):
        return True
    if pa.types.is_dictionary(arrow_type):
        return _holds_instants(arrow_type.value_type)
    return any(_holds_instants(arrow_type.field(i).type) for i in range(arrow_type.num_fields))


def _aligned(column: pa.Array) -> pa.Array:
    if not _has_decimal(column.type):
        return column
    if all(buffer is None or buffer.address % 16 == 0 for buffer in column.buffers()):
        return column
    return pa.concat_arrays([column])


def _has_decimal(arrow_type: pa.DataType) -> bool:
    if pa.types.is_decimal(arrow_type):
        return True
    return any(_has_decimal(arrow_type.field(i).type) for i in range(arrow_type.num_fields))


def _cast_column(target_field: pa.Field, column: pa.Array) -> pa.Array:
    if column.type == target_field.type:
        return column
    if pa.types.is_fixed_size_list(target_field.type) and not pa.types.is_fixed_size_list(
        column.type
    ):
        _check_vector_lengths(target_field, column)
    try:
        return column.cast(target_field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise LanceSourceError(
            f"column '{target_field.name}' cannot be converted from {column.type} to "
            f"{target_field.type}: {error}"
        ) from error


def _check_vector_lengths(target_field: pa.Field, column: pa.Array) -> None:
    lengths = column.value_lengths().drop_null()
    dimension = target_field.type.list_size
    if len(lengths) and pc.any(pc.not_equal(lengths, dimension)).as_py():
        raise LanceSourceError(
            f"vector column '{target_field.name}' has a row whose length is not {dimension}"
        )
