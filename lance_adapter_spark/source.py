"""The PySpark data source `lance`: tables addressed through a Lance namespace."""

from __future__ import annotations

import functools

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceWriter
from pyspark.sql.types import StructType

from lance_adapter_spark.options import LanceOptions, parse_options
from lance_adapter_spark.read import (
    LanceReader,
    PinnedTable,
    UnfilteredLanceReader,
    pin_table,
    read_schema,
)


class LanceDataSource(DataSource):
    """`spark.read.format("lance")` / `df.write.format("lance")` (docs/spark.md)."""

    @classmethod
    def name(cls) -> str:
        return "lance"

    pinned: PinnedTable | None = None

    @functools.cached_property
    def parsed(self) -> LanceOptions:
        """The options, parsed once (kept when the source is pickled for the tasks)."""
        return parse_options(self.options)

    def _pin(self) -> PinnedTable:
        # Pinned when the DataFrame is loaded; the instance is pickled afterwards, so
        # planning and every task of every job on this DataFrame read the same version.
        if self.pinned is None:
            self.pinned = pin_table(self.parsed)
        return self.pinned

    def schema(self) -> StructType:
        columns = [c.strip() for c in self.options.get("columns", "").split(",") if c.strip()]
        return read_schema(self._pin(), columns)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = self.parsed
        reader_class = LanceReader if options.pushdown else UnfilteredLanceReader
        return reader_class(self._pin(), schema, options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        # Imported here: reads never need the write side or the namespace client.
        from lance_adapter_spark.write import LanceWriter, plan_write

        return LanceWriter(plan_write(self.parsed, schema, overwrite))
