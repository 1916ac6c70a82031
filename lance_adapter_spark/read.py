"""The read side of the `lance` data source: one input partition per fragment group.

Read tasks unpickle the reader, so this module imports neither the namespace client
nor the write side: a task only opens the table version the driver pinned.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from lance_adapter_spark.aggregates import PartialAggregation, partial_aggregate
from lance_adapter_spark.filters import combine, to_lance_sql
from lance_adapter_spark.options import DEFAULT_ROWS_PER_PARTITION, LanceOptions, LanceSourceError
from lance_adapter_spark.schema import (
    arrow_type_for,
    check_no_null_elements,
    conform_read_batch,
    spark_schema_for,
)
from lance_adapter_spark.shared_storage import refuse_unshared_local_storage

# Spark counts a batch's rows in an int; a read of no columns stays far below that.
MAX_ROWS_PER_EMPTY_BATCH = 1 << 24
# What one task of an aggregated read scans at most (Spark's spark.sql.files.maxPartitionBytes
# for files): such a task sends Spark a row per group whatever it reads, so its cost is
# the task more than the rows, and fewer, larger tasks are faster.
AGGREGATED_BYTES_PER_PARTITION = 128 << 20
# The width assumed for a value of variable width (a string, a list) when sizing a task.
VARIABLE_VALUE_BYTES = 32
# The one column of a read that counts rows (ROWS_COLUMN of
# lance_adapter_spark/jvm/PruneLanceColumns.java): one row, the table's row count
# (TableRowCount). Never a table's own column.
ROW_COUNT_COLUMN = "__lance_fragment_rows"
# The columns of a read that each hold one element of a vector column
# (ELEMENT_PREFIX of lance_adapter_spark/jvm/PruneLanceColumns.java), named
# "<prefix><index>:<column>": the index from 0, or from the end when negative. Never a
# table's own column.
ELEMENT_COLUMN_PREFIX = "__lance_element:"


@dataclass(frozen=True)
class PinnedTable:
    """One version of one table: every task of a read sees exactly this."""

    location: str
    version: int
    storage_options: dict[str, str] | None
    schema: pa.Schema
    # The version opened, once per process: on the driver the open that pinned it; in a task,
    # the first `open`. Never pickled (each task opens its own).
    _dataset: lance.LanceDataset | None = field(default=None, compare=False, repr=False)

    def open(self) -> lance.LanceDataset:
        if self._dataset is None:
            object.__setattr__(self, "_dataset", lance.dataset(
                self.location, version=self.version, storage_options=self.storage_options))
        return self._dataset

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_dataset": None}


def pin_table(options: LanceOptions) -> PinnedTable:
    """Fix the table version the read will use, asking the namespace where the table is
    unless the options already carry a pinned location and version (see `pinned_options`)."""
    if options.location and options.version is not None:
        return _open_pinned(options, options.location, options.version, None)
    described = describe_natively(options)
    if described is not None:
        try:
            return _open_pinned(options, *described)
        except LanceSourceError:
            pass  # e.g. declared without data yet: the namespace client's path says so
    from lance_adapter_spark.tables import require_table

    state = require_table(options)
    version = options.version if options.version is not None else state.version
    return _open_pinned(options, state.location, version, state.storage_options)


def describe_natively(
    options: LanceOptions,
) -> tuple[str, int | None, dict[str, str] | None] | None:
    """DescribeTable through pylance's native REST client: the table's location, the
    version to read and its storage options.

    The Python namespace client (`lance_namespace`, a generated client with hundreds of
    models) costs about 0.5-0.8 s to import, which a fresh session's `load()` pays in a
    Python process of its own; this path imports nothing beyond pylance. None when it does
    not apply (`impl`) or fails: the caller then asks through the namespace client,
    whose errors carry the clear messages.
    """
    if not options.uri:
        return None
    try:
        from lance.lance import PyRestNamespace

        client = PyRestNamespace(context_provider=None, uri=options.uri)
        answer = client.describe_table({"id": options.table_id})
    except Exception:
        return None
    location = answer.get("location") if isinstance(answer, dict) else None
    if not location:
        return None
    return location, options.version, answer.get("storage_options") or None


def pinned_options(pinned: PinnedTable) -> dict[str, str]:
    """Options that let planning and read tasks open `pinned` without calling the namespace.

    Only for tables without storage options: those may hold credentials, which must not
    travel as plain Spark options (they show in plans and logs).
    """
    if pinned.storage_options:
        return {"version": str(pinned.version)}
    return {"version": str(pinned.version), "pinned_location": pinned.location}


def _open_pinned(
    options: LanceOptions, location: str, version: int | None, storage: dict[str, str] | None
) -> PinnedTable:
    refuse_unshared_local_storage(location, options.table_name, options.shared_storage)
    try:
        dataset = lance.dataset(location, version=version, storage_options=storage)
    except (ValueError, OSError) as error:
        raise LanceSourceError(
            f"version {version} of table '{options.table_name}' cannot be opened: {error}"
        ) from error
    return PinnedTable(location, dataset.version, storage, dataset.schema, dataset)


def read_schema(pinned: PinnedTable, columns: list[str] | None) -> StructType:
    """The Spark schema of the table, restricted to `columns` when given; only the
    columns read are converted, so a column left out can never fail the read."""
    if not columns:
        return spark_schema_for(pinned.schema)
    check_columns(pinned, columns)
    return spark_schema_for(pa.schema([pinned.schema.field(name) for name in columns]))


def check_columns(pinned: PinnedTable, columns: Iterable[str]) -> None:
    names = pinned.schema.names
    for column in columns:
        if column in names:
            continue
        element = vector_element(column)
        if element is None:
            raise LanceSourceError(
                f"column '{column}' is not in the table (columns: {', '.join(names)})"
            )
        element.check(pinned.schema)


@dataclass(frozen=True)
class VectorElement:
    """One element of a fixed-size list column, which the pruning rule reads in place of
    the whole column when a query uses nothing else of it (`vector_element`)."""

    column: str
    index: int

    def check(self, table_schema: pa.Schema) -> None:
        """Raise unless the table's `column` is a fixed-size list holding `index`: the
        rule relies on that to keep the plan it would otherwise have."""
        if self.column not in table_schema.names:
            raise LanceSourceError(f"column '{self.column}' is not in the table")
        arrow_type = table_schema.field(self.column).type
        if not pa.types.is_fixed_size_list(arrow_type):
            raise LanceSourceError(f"column '{self.column}' is not a fixed-size list")
        if not -arrow_type.list_size <= self.index < arrow_type.list_size:
            raise LanceSourceError(
                f"column '{self.column}' holds {arrow_type.list_size} elements, "
                f"not one at index {self.index}"
            )

    def taken_from(self, vector: pa.Array, element_type: pa.DataType) -> pa.Array:
        """The element of each vector (null for a null vector), as `element_type`. The
        rule reads elements only of arrays without null elements: a null one is an error
        here as in a read of the whole column."""
        check_no_null_elements(self.column, vector, element_type)
        return pc.list_element(vector, self.index % vector.type.list_size)


def vector_element(name: str) -> VectorElement | None:
    """The vector element a column named by the pruning rule stands for; None for any
    other name."""
    if not name.startswith(ELEMENT_COLUMN_PREFIX):
        return None
    index, separator, column = name[len(ELEMENT_COLUMN_PREFIX) :].partition(":")
    if not separator or not column or not index.lstrip("-").isdigit():
        return None
    return VectorElement(column, int(index))


class FragmentGroup(InputPartition):
    """The fragment ids one Spark task reads."""

    def __init__(self, fragment_ids: list[int]) -> None:
        super().__init__(fragment_ids)
        self.fragment_ids = fragment_ids


class TableRowCount(InputPartition):
    """The one partition of an unfiltered row count: the pinned version's rows, counted from
    fragment metadata while planning. The pruning rule reads `rows` from the pickled
    partition (ROW_COUNT_PARTITION of lance_adapter_spark/jvm/PruneLanceColumns.java) and
    answers the count without a task; when a task reads it instead, it yields that one number."""

    def __init__(self, rows: int) -> None:
        super().__init__(rows)
        self.rows = rows


def group_fragments(row_counts: list[tuple[int, int]], rows_per_partition: int) -> list[list[int]]:
    """Consecutive fragments packed into groups of at most `rows_per_partition` rows;
    a fragment larger than that is a group of its own."""
    groups: list[list[int]] = []
    current: list[int] = []
    current_rows = 0
    for fragment_id, rows in row_counts:
        if current and current_rows + rows > rows_per_partition:
            groups.append(current)
            current, current_rows = [], 0
        current.append(fragment_id)
        current_rows += rows
    if current:
        groups.append(current)
    return groups


def value_bytes(arrow_type: pa.DataType) -> int:
    """The bytes one value of `arrow_type` takes, VARIABLE_VALUE_BYTES where that varies."""
    if pa.types.is_fixed_size_list(arrow_type):
        return arrow_type.list_size * value_bytes(arrow_type.value_type)
    if pa.types.is_struct(arrow_type):
        return sum(value_bytes(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    try:
        return max(arrow_type.bit_width // 8, 1)
    except ValueError:  # no fixed width
        return VARIABLE_VALUE_BYTES


def counts_rows(pinned: PinnedTable, schema: StructType) -> bool:
    """Whether a read of `schema` is the row count that column pruning asks for."""
    return schema.fieldNames() == [ROW_COUNT_COLUMN] and ROW_COUNT_COLUMN not in pinned.schema.names


class UnfilteredLanceReader(DataSourceReader):
    """Scans the pinned table version for the requested columns; Spark does all filtering.

    With column pruning (`lance_adapter_spark.pruning`) the columns are those the query
    uses: none, or the row-count column, for a count, which is then planned as one
    TableRowCount and reads no column data; single elements of vectors; or the grouping
    columns and partial aggregates of a grouped aggregate, which each task then computes
    from the columns they need (`lance_adapter_spark.aggregates`)."""

    def __init__(self, pinned: PinnedTable, schema: StructType, options: LanceOptions) -> None:
        self.counting = counts_rows(pinned, schema)
        self.pinned = pinned
        self.schema = schema
        self.options = options
        self.pushed: list[str] = []
        partials = {
            name: partial
            for name in schema.fieldNames()
            if name not in pinned.schema.names and (partial := partial_aggregate(name))
        }
        output = to_arrow_schema(schema, timezone="UTC")
        self.aggregation = PartialAggregation(output, partials) if partials else None
        scanned = self.aggregation.keys + self.aggregation.sources() if partials else schema.names
        if not self.counting:
            check_columns(pinned, scanned)
        self.elements = {
            name: element
            for name in scanned
            if name not in pinned.schema.names and (element := vector_element(name))
        }
        # What the scan reads, as Spark types it: the output itself unless aggregating.
        self.input_schema = self._aggregated_input(scanned, output) if partials else output
        if self.aggregation:
            self.aggregation.check_types(self.input_schema)
        # The table's columns the scan reads (a vector whole for its elements).
        self.table_columns = list(dict.fromkeys(
            element.column if (element := self.elements.get(name)) else name
            for name in self.input_schema.names
        ))

    def _aggregated_input(self, scanned: list[str], output: pa.Schema) -> pa.Schema:
        fields = []
        for name in scanned:
            if name in output.names:
                fields.append(output.field(name))
                continue
            element = self.elements.get(name)
            column = element.column if element else name
            spark_type = read_schema(self.pinned, [column])[0].dataType
            if element:
                spark_type = spark_type.elementType
            fields.append(pa.field(name, arrow_type_for(name, spark_type)))
        return pa.schema(fields)

    def partitions(self) -> list[InputPartition]:
        dataset = self.pinned.open()
        if self.counting:  # metadata alone, or the pushed filters' columns
            return [TableRowCount(dataset.count_rows(combine(self.pushed)))]
        fragments = dataset.get_fragments()
        counts = [(fragment.fragment_id, fragment.count_rows()) for fragment in fragments]
        groups = group_fragments(counts, self._rows_per_partition())
        return [FragmentGroup(ids) for ids in groups] or [FragmentGroup([])]

    def _rows_per_partition(self) -> int:
        """The `rows_per_partition` option; without it, for an aggregated read as many rows as
        AGGREGATED_BYTES_PER_PARTITION of its scanned columns hold, if more than the default."""
        if self.options.rows_per_partition is not None:
            return self.options.rows_per_partition
        if not self.aggregation:
            return DEFAULT_ROWS_PER_PARTITION
        fields = (self.pinned.schema.field(name) for name in self.table_columns)
        return aggregated_rows_per_partition(sum(value_bytes(field.type) for field in fields))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, TableRowCount):
            rows = pa.array([partition.rows], pa.int64())
            yield pa.RecordBatch.from_arrays([rows], schema=to_arrow_schema(self.schema))
            return
        if not isinstance(partition, FragmentGroup) or not partition.fragment_ids:
            return
        dataset = self.pinned.open()
        if not self.schema.fields:
            yield from self._row_counts(dataset, partition.fragment_ids)
            return
        scanner = dataset.scanner(
            columns=self.table_columns,
            filter=combine(self.pushed),
            fragments=[dataset.get_fragment(i) for i in partition.fragment_ids],
            batch_size=self.options.batch_size,
        )
        batches = (
            conform_read_batch(self._with_elements(batch, self.input_schema), self.input_schema)
            for batch in scanner.to_batches()
            if batch.num_rows
        )
        yield from self.aggregation.aggregated(batches) if self.aggregation else batches

    def _with_elements(self, batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
        """`batch` with the vector elements the read asks for as columns of their own."""
        if not self.elements:
            return batch
        columns = dict(zip(batch.schema.names, batch.columns, strict=True))
        for name, element in self.elements.items():
            vector = batch.column(element.column)
            columns[name] = element.taken_from(vector, target.field(name).type)
        return pa.RecordBatch.from_pydict(columns)

    def _row_counts(
        self, dataset: lance.LanceDataset, fragment_ids: list[int]
    ) -> Iterator[pa.RecordBatch]:
        """A read of no columns (what a query that uses none, such as `SELECT 1 FROM t`,
        reads once pruned): batches of no columns and as many rows as the fragments hold,
        from their metadata (or counted on the pushed filters' columns alone)."""
        condition = combine(self.pushed)
        for fragment_id in fragment_ids:
            rows = dataset.get_fragment(fragment_id).count_rows(condition)
            while rows > 0:
                taken = min(rows, MAX_ROWS_PER_EMPTY_BATCH)
                yield pa.RecordBatch.from_struct_array(pa.nulls(taken, pa.struct([])))
                rows -= taken


class LanceReader(UnfilteredLanceReader):
    """Also evaluates in Lance the filters Spark offers that Lance evaluates exactly alike."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        for spark_filter in filters:
            sql = to_lance_sql(spark_filter, self.schema)
            if sql is None:
                yield spark_filter
            else:
                self.pushed.append(sql)


def aggregated_rows_per_partition(
    row_bytes: int, default_rows: int = DEFAULT_ROWS_PER_PARTITION,
    partition_bytes: int = AGGREGATED_BYTES_PER_PARTITION,
) -> int:
    """Rows per task of an aggregated read whose scanned columns take `row_bytes` a row: as
    many as `partition_bytes` hold, and never fewer than a plain read's `default_rows`."""
    return max(default_rows, partition_bytes // max(row_bytes, 1))
