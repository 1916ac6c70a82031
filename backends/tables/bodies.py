"""Request bodies in the Arrow IPC stream format, as a backend's writes read them: whole
(`read_arrow_stream`, a body held in memory) or as they arrive (`StreamedRows`, a body the
server hands over as a file, `app.streamed_bodies`), and the schema checks both pass first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from lance_namespace import InvalidInputError, LanceNamespaceError

from backends.core.arrow_schema import unstorable_columns

# Lance (arrow-rs) panics on a buffer not aligned to its values, and its 128-bit values
# (decimals, month-day-nano intervals) need 16 bytes where a stream's buffers have 8: a body
# holding such a column is read into aligned memory; any other is read where it lies, its
# buffers aligned to their values where a stream's are not.
_ALIGNED = pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.At64Byte)
_IN_PLACE = pa.ipc.IpcReadOptions(ensure_alignment=pa.ipc.Alignment.DataTypeSpecific)


def _needs_16_bytes(kind: pa.DataType) -> bool:
    if pa.types.is_decimal(kind) or pa.types.is_interval(kind):
        return True
    if pa.types.is_dictionary(kind):
        return _needs_16_bytes(kind.value_type)
    return any(_needs_16_bytes(kind.field(index).type) for index in range(kind.num_fields))


def _needs_alignment(schema: pa.Schema) -> bool:
    return any(_needs_16_bytes(field.type) for field in schema)


def read_arrow_stream(data: bytes | None) -> pa.Table:
    """A request body in the Arrow IPC stream format, read whole (it is in memory already)."""
    if not data:
        raise InvalidInputError("the request has no Arrow IPC stream body")
    try:
        options = _ALIGNED if _needs_alignment(pa.ipc.open_stream(data).schema) else _IN_PLACE
        return pa.ipc.open_stream(data, options=options).read_all()
    except (pa.ArrowInvalid, OSError) as error:
        raise InvalidInputError(f"data is not an Arrow IPC stream: {error}") from None


def stream_has_rows(data: bytes | None) -> bool:
    """Whether the Arrow IPC stream `data` holds a row (a schema alone holds none); a body
    that is not a stream has rows for this: the operation reading it says what is wrong."""
    try:
        reader = pa.ipc.open_stream(data or b"", options=_ALIGNED)
        return any(batch.num_rows for batch in reader)
    except (pa.ArrowInvalid, OSError):
        return True


def _refuse_unstorable(schema: pa.Schema) -> None:
    refused = unstorable_columns(schema)
    if refused:
        raise InvalidInputError(
            f"Lance cannot store column{'s' if len(refused) > 1 else ''} {', '.join(refused)}: "
            "it stores no unions, intervals, list views, run-end encoded arrays or decimals "
            "narrower than 128 bits"
        )


def check_storable_stream(data: object) -> None:
    """Refuse a request body whose Arrow IPC stream has a column Lance cannot store, from its
    schema alone, before anything is written (Lance would fail mid-write with an internal
    error). A body that is not a stream is left to the operation, which says so; a streamed
    body is checked when it is opened (`StreamedRows`)."""
    if not isinstance(data, bytes | bytearray | memoryview) or not data:
        return
    try:
        schema = pa.ipc.open_stream(data).schema
    except (pa.ArrowInvalid, OSError):
        return
    _refuse_unstorable(schema)


class StreamedRows:
    """The rows of a body the server hands over as it arrives (`source.open()`: a reader of
    its batches; `source.failure`: the error reading it raised, if any), read batch by batch
    by the writer; `rows` counts what it read."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.rows = 0
        self._failure: LanceNamespaceError | None = None
        try:
            self._reader = source.open()
        except (pa.ArrowException, OSError) as error:
            raise self.failure_or(error) from None
        _refuse_unstorable(self._reader.schema)
        self._aligned = _needs_alignment(self._reader.schema)

    @property
    def schema(self) -> pa.Schema:
        return self._reader.schema

    def reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.schema, self._batches())

    def _batches(self) -> Iterator[pa.RecordBatch]:
        while True:
            try:
                batch = self._reader.read_next_batch()
                batch.validate(full=True)
            except StopIteration:
                return
            except (pa.ArrowException, OSError) as error:
                self._failure = self.failure_or(error)
                raise
            self.rows += batch.num_rows
            yield _realigned(batch) if self._aligned or _misaligned(batch) else batch

    @property
    def failed(self) -> bool:
        """Whether reading the body failed (the write failing then is the body's doing)."""
        return self._failure is not None or getattr(self.source, "failure", None) is not None

    def failure_or(self, error: BaseException) -> BaseException:
        """What to answer for `error`, raised while the rows were read or written: the error
        the body's reading raised (a limit, a client gone), else bad input."""
        failure = getattr(self.source, "failure", None)
        if isinstance(failure, LanceNamespaceError):
            return failure
        if self._failure is not None:
            return self._failure
        if isinstance(error, LanceNamespaceError):
            return error
        return InvalidInputError(f"data is not an Arrow IPC stream: {error}")


def _misaligned(batch: pa.RecordBatch) -> bool:
    """Whether a buffer of `batch` lies off the 8 bytes its values need (a stream whose
    writer did not align its buffers; children's buffers are listed with their parent's)."""
    return any(buffer is not None and buffer.address % 8
               for column in batch.columns for buffer in column.buffers())


def _realigned(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` copied into memory aligned for 128-bit values."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return pa.ipc.open_stream(sink.getvalue(), options=_ALIGNED).read_next_batch()


def arrow_rows(data: Any) -> pa.Table | StreamedRows:
    """The rows of a request body: read whole when it is bytes, as they arrive when the
    server hands it over as a file."""
    if data is None or isinstance(data, bytes | bytearray | memoryview):
        return read_arrow_stream(data)
    return StreamedRows(data)
