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
        # `bytes` the writer made, or a `pyarrow.Buffer` of a batch's own (immutable)
        # memory: kept as they are until `take` joins them, the one copy.
        self.parts.append(data)
        self.size += len(data)
        self.position += len(data)
        return len(data)

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
    """Rows of `schema` from `batches`, encoded as an Arrow IPC file when they are read.
    `started` reads and encodes the first chunk at once, in the backend's call: what fails in
    planning or in the first read is the call's error, answered with its code, not a cut-off
    answer; and an answer that ends within that chunk (a search's k rows) is `whole`, which
    the server sends as one body without streaming it."""

    def __init__(self, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> None:
        self.schema = schema
        self._encoded = self._encode(batches)
        self._head: bytes | None = None
        self._ended = False

    @classmethod
    def started(cls, reader: pa.RecordBatchReader) -> ArrowFileAnswer:
        answer = cls(reader.schema, iter(reader))
        answer._head = next(answer._encoded)
        return answer

    @classmethod
    def of_table(cls, table: pa.Table) -> ArrowFileAnswer:
        """Rows read already (held in memory): encoded at once, as `started` does."""
        return cls.started(table.to_reader())

    @property
    def whole(self) -> bytes | None:
        """The whole answer, when `started` read all of it within its first chunk."""
        return self._head if self._ended else None

    def _encode(self, batches: Iterator[pa.RecordBatch]) -> Iterator[bytes]:
        sink = _Collected()
        writer = pa.ipc.new_file(pa.PythonFile(sink, mode="w"), self.schema)
        for batch in batches:
            writer.write_batch(batch)
            if sink.size >= CHUNK_BYTES:
                yield sink.take()
        writer.close()
        self._ended = True
        yield sink.take()

    def chunks(self) -> Iterator[bytes]:
        """The answer's bytes, about `CHUNK_BYTES` at a time; each batch is read when the
        previous chunk has been taken."""
        if self._head is not None:
            yield self._head
        yield from self._encoded

    def to_bytes(self) -> bytes:
        """The whole answer at once (an in-process caller's `QueryTableResponse.data`)."""
        return b"".join(self.chunks())
