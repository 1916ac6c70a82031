"""Rows answered in the Arrow IPC file format as they are read: `ArrowFileAnswer`, what a
backend gives for QueryTable, which the server writes to the client chunk by chunk, so that
its memory does not grow with the answer's size.

The file format ends with a footer that indexes every batch; it is written last, after the
final batch. An answer cut off half-way (the storage failing mid-scan) therefore never parses
as a shorter, wrong answer: the client's reader finds no footer and fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

# Encoded batches are handed to the connection in chunks of about this size: few enough hand-offs
# to the event loop, small enough to keep a worker's memory flat.
CHUNK_BYTES = 1 << 20


class _Collected:
    """A write-only file that keeps what is written, for the IPC writer to write into."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.position = 0
        self.closed = False

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.parts.append(chunk)
        self.size += len(chunk)
        self.position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        return None

    def close(self) -> None:
        self.closed = True

    def take(self) -> bytes:
        taken = b"".join(self.parts)
        self.parts, self.size = [], 0
        return taken


class ArrowFileAnswer:
    """Rows of `schema` from `batches`, encoded as an Arrow IPC file when they are read. The
    first batch is read at once (`started`), so that what fails in planning or in the first
    read is the call's error, answered with its code, not a cut-off answer."""

    def __init__(self, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
        self.schema = schema
        self._batches = batches

    @classmethod
    def started(cls, reader: pa.RecordBatchReader) -> ArrowFileAnswer:
        batches = iter(reader)
        first = next(batches, None)
        return cls(reader.schema, _prepended(first, batches))

    @classmethod
    def of_table(cls, table: pa.Table) -> ArrowFileAnswer:
        return cls(table.schema, iter(table.to_batches()))

    def chunks(self, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
        """The answer's bytes, about `chunk_bytes` at a time; each batch is read when the
        previous chunk has been taken."""
        sink = _Collected()
        writer = pa.ipc.new_file(pa.PythonFile(sink, mode="w"), self.schema)
        for batch in self._batches:
            writer.write_batch(batch)
            if sink.size >= chunk_bytes:
                yield sink.take()
        writer.close()
        yield sink.take()

    def to_bytes(self) -> bytes:
        """The whole answer at once (an in-process caller's `QueryTableResponse.data`)."""
        return b"".join(self.chunks())


def _prepended(first: pa.RecordBatch | None,
               rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    if first is not None:
        yield first
        yield from rest
