"""Partial aggregates computed in the read task: the pruning rule turns a grouped
`count`, `min`, `max`, `sum` or `avg` over a scan of the `lance` source into a read of
partial aggregates (columns named AGGREGATE_COLUMN_PREFIX + function + ":" + source) per
group of the query's grouping columns, which Spark then merges across tasks.

Spark 4 hands every row a Python source reads to the JVM one by one; a grouped
aggregate over a Parquet table reads its columns in place. Sending one row per group
and task instead of one per table row is what keeps such queries as fast as Parquet.
The partial values follow Spark's semantics, NaN included (`max` is NaN where a group
holds one; `min` only where all its values are NaN): docs/spark.md, "Aggregates".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lance_adapter_spark.options import LanceSourceError

# lance_adapter_spark/jvm/PruneLanceColumns.java's AGGREGATE_PREFIX. Never a table's column.
AGGREGATE_COLUMN_PREFIX = "__lance_aggregate:"
# The source of a count of every row, `count(*)`.
ALL_ROWS = "*"
FUNCTIONS = ("count", "sum", "min", "max")
# Rows are grouped once this much of their input has been read (or the task's rows end):
# a task holds at most this much input at a time, and sends one row per group per chunk.
PARTIAL_AGGREGATE_INPUT_BYTES = 64 << 20


@dataclass(frozen=True)
class PartialAggregate:
    """One partial aggregate the rule asks the read for: `function` of the column (or vector
    element column) `source`, per group, in one task's rows."""

    function: str
    source: str

    def arrow_aggregation(self) -> tuple[str | list[str], str]:
        """What pyarrow's group_by computes for it (the NaN flag `max` needs aside)."""
        if self.source == ALL_ROWS:
            return [], "count_all"
        return self.source, self.function

    def result_name(self) -> str:
        return "count_all" if self.source == ALL_ROWS else f"{self.source}_{self.function}"


def partial_aggregate(name: str) -> PartialAggregate | None:
    """The partial aggregate a column named by the pruning rule stands for; None for any
    other name."""
    if not name.startswith(AGGREGATE_COLUMN_PREFIX):
        return None
    function, separator, source = name[len(AGGREGATE_COLUMN_PREFIX) :].partition(":")
    if not separator or function not in FUNCTIONS or not source:
        return None
    if source == ALL_ROWS and function != "count":
        return None
    return PartialAggregate(function, source)


class PartialAggregation:
    """The partial aggregates of one read: its output columns are the grouping columns
    (`keys`) and the partial aggregates (`partials`), in the order of `output`."""

    def __init__(self, output: pa.Schema, partials: dict[str, PartialAggregate],
                 chunk_bytes: int = PARTIAL_AGGREGATE_INPUT_BYTES) -> None:
        self.output = output
        self.partials = partials
        self.keys = [name for name in output.names if name not in partials]
        self.chunk_bytes = chunk_bytes  # input grouped at a time (Spark merges the partials)

    def sources(self) -> list[str]:
        """The columns (or vector elements) the partial aggregates are computed from."""
        used = (partial.source for partial in self.partials.values())
        return list(dict.fromkeys(source for source in used if source != ALL_ROWS))

    def check_types(self, input_schema: pa.Schema) -> None:
        """Raise unless each partial aggregate applies to its source's type (the rule asks
        only for these: sums of floating point, minimums and maximums of numbers)."""
        for name, partial in self.partials.items():
            if partial.function == "count":
                continue
            source_type = input_schema.field(partial.source).type
            numeric = pa.types.is_integer(source_type) or pa.types.is_floating(source_type)
            if not numeric or (partial.function == "sum" and not pa.types.is_floating(source_type)):
                raise LanceSourceError(
                    f"column '{name}' cannot be read: {partial.function} of {source_type}"
                )

    def aggregated(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """One batch of partial aggregates per chunk of about `chunk_bytes` of `batches`
        (holding the keys and sources, as Spark types them)."""
        chunk: list[pa.RecordBatch] = []
        held = 0
        for batch in batches:
            chunk.append(batch)
            held += batch.nbytes
            if held >= self.chunk_bytes:
                yield self._grouped(pa.Table.from_batches(chunk))
                chunk, held = [], 0
        if chunk:
            yield self._grouped(pa.Table.from_batches(chunk))

    def _grouped(self, rows: pa.Table) -> pa.RecordBatch:
        nan_flags = {
            partial.source: f"__nan:{partial.source}"
            for partial in self.partials.values()
            if partial.function == "max"
            and pa.types.is_floating(rows.schema.field(partial.source).type)
        }
        for source, flag in nan_flags.items():
            rows = rows.append_column(flag, pc.is_nan(rows.column(source)))
        aggregations = {p.result_name(): p.arrow_aggregation() for p in self.partials.values()}
        aggregations.update({f"{flag}_any": (flag, "any") for flag in nan_flags.values()})
        grouped = rows.group_by(self.keys, use_threads=False).aggregate(list(aggregations.values()))
        columns = []
        for name in self.output.names:
            partial = self.partials.get(name)
            if partial is None:
                columns.append(grouped.column(name))
                continue
            values = grouped.column(partial.result_name())
            if partial.function == "max" and partial.source in nan_flags:
                holds_nan = pc.fill_null(grouped.column(f"{nan_flags[partial.source]}_any"), False)
                values = pc.if_else(holds_nan, pa.scalar(float("nan"), values.type), values)
            columns.append(values)
        arrays = [
            column.combine_chunks().cast(field.type)
            for column, field in zip(columns, self.output, strict=True)
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=self.output)
