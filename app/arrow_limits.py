"""Limits on an Arrow IPC stream request body, checked before any of its data is decoded.

A compressed stream can decode to thousands of times its size, so its cost is read from the
messages' metadata first: the rows of each record batch, and the decoded size of each buffer
(a compressed buffer starts with its uncompressed length). Only when the whole stream is within
the limits, and its decoded bytes are reserved, is it decoded, one batch at a time, to reject
corrupt data before a backend sees it. Both passes are meant to run on a worker thread.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from lance_namespace import InvalidInputError

from app.errors import BodyTooLargeError

# MessageHeader union members of the Arrow format (format/Message.fbs).
_SCHEMA, _DICTIONARY_BATCH, _RECORD_BATCH = 1, 2, 3
# Vtable slots: Message(version, header_type, header, bodyLength), RecordBatch(length, nodes,
# buffers, compression), DictionaryBatch(id, data), Schema(endianness, fields),
# Field(name, nullable, type_type, type, dictionary, children).
_MESSAGE_HEADER_TYPE, _MESSAGE_HEADER = 1, 2
_BATCH_LENGTH, _BATCH_BUFFERS, _BATCH_COMPRESSION = 0, 2, 3
_DICTIONARY_DATA = 1
_SCHEMA_FIELDS = 1
_FIELD_CHILDREN = 5
_UNCOMPRESSED = -1  # a compressed stream's buffer prefix for a buffer stored as it is


@dataclass(frozen=True)
class ArrowLimits:
    """What one Arrow request body may decode to."""

    max_bytes: int
    max_rows: int
    max_columns: int
    max_depth: int


@dataclass(frozen=True)
class StreamCost:
    """What decoding a stream allocates: its buffers' decoded bytes, and its rows."""

    decoded_bytes: int
    rows: int


class _Malformed(Exception):
    """Metadata that points outside its buffer."""


_U8, _U16, _I32, _U32, _I64 = (struct.Struct(f) for f in ("<B", "<H", "<i", "<I", "<q"))
_SPAN = struct.Struct("<qq")  # struct Buffer { offset: long; length: long; }
# Batches with more buffers than this are summed with numpy; fewer cost less in plain Python.
_VECTORIZED_FROM = 256


def _read(data: memoryview, position: int, field: struct.Struct) -> int:
    if position < 0 or position + field.size > len(data):
        raise _Malformed
    return field.unpack_from(data, position)[0]


class _Table:
    """One flatbuffers table of a message's metadata, every read checked against its bounds."""

    def __init__(self, data: memoryview, position: int) -> None:
        self.data = data
        self.position = position
        self.vtable = position - _read(data, position, _I32)
        self.vtable_size = _read(data, self.vtable, _U16)

    @classmethod
    def root(cls, data: memoryview) -> _Table:
        return cls(data, _read(data, 0, _U32))

    def _field(self, slot: int) -> int | None:
        entry = 4 + 2 * slot
        if entry + 2 > self.vtable_size:
            return None
        offset = _read(self.data, self.vtable + entry, _U16)
        return self.position + offset if offset else None

    def scalar(self, slot: int, field: struct.Struct) -> int:
        position = self._field(slot)
        return 0 if position is None else _read(self.data, position, field)

    def table(self, slot: int) -> _Table | None:
        position = self._field(slot)
        if position is None:
            return None
        return _Table(self.data, position + _read(self.data, position, _U32))

    def vector(self, slot: int, element_size: int) -> tuple[int, int]:
        """Where the vector's elements start, and how many there are (0 when absent)."""
        position = self._field(slot)
        if position is None:
            return 0, 0
        start = position + _read(self.data, position, _U32)
        count = _read(self.data, start, _U32)
        if start + 4 + count * element_size > len(self.data):
            raise _Malformed
        return start + 4, count

    def tables(self, slot: int) -> Iterator[_Table]:
        start, count = self.vector(slot, 4)
        for index in range(count):
            element = start + 4 * index
            yield _Table(self.data, element + _read(self.data, element, _U32))


def _check_schema(schema: _Table, limits: ArrowLimits) -> None:
    """Counts every field (nested ones too) and its depth, stopping at the first limit: a
    table's fields are counted before any of them is read."""
    pending = [(schema, _SCHEMA_FIELDS, 0)]
    columns = 0
    while pending:
        table, slot, depth = pending.pop()
        _, count = table.vector(slot, 4)
        columns += count
        if columns > limits.max_columns:
            raise InvalidInputError(
                f"the Arrow schema has more than {limits.max_columns} columns (nested fields "
                "count too); the limit is max_arrow_columns"
            )
        if count and depth + 1 > limits.max_depth:
            raise InvalidInputError(
                f"the Arrow schema nests deeper than {limits.max_depth} levels; the limit is "
                "max_nesting_depth"
            )
        pending.extend((field, _FIELD_CHILDREN, depth + 1) for field in table.tables(slot))


def _capped_sum(values: np.ndarray, cap: int) -> int:
    """The sum of `values`, each counted as at most `cap`: exact, and never wrapping around."""
    capped = np.minimum(values, cap)
    if len(capped) * cap < 2**63:
        return int(capped.sum())
    return sum(capped.tolist())


def _buffer_size(body: memoryview, offset: int, length: int, compressed: bool) -> int:
    if offset < 0 or length < 0 or offset + length > len(body):
        raise _Malformed
    if not compressed or length == 0:
        return length
    if length < 8:
        raise _Malformed
    # A stored buffer of a compressed body starts with its decoded length.
    decoded = _I64.unpack_from(body, offset)[0]
    if decoded < _UNCOMPRESSED:
        raise _Malformed
    return length - 8 if decoded == _UNCOMPRESSED else decoded


def _buffer_sizes_vectorized(
    spans: np.ndarray, body: memoryview, compressed: bool, cap: int
) -> int:
    """`_buffer_size` of every span, summed, for a batch with very many buffers."""
    offsets, lengths = spans[:, 0], spans[:, 1]
    if (offsets < 0).any() or (lengths < 0).any() or (offsets > len(body) - lengths).any():
        raise _Malformed
    stored = lengths > 0
    if not compressed or not stored.any():
        return _capped_sum(lengths, cap)
    if (lengths[stored] < 8).any():
        raise _Malformed
    starts = offsets[stored]
    prefixes = np.frombuffer(body, np.uint8)[starts[:, None] + np.arange(8)].copy()
    decoded = prefixes.view("<i8").ravel()
    if (decoded < _UNCOMPRESSED).any():
        raise _Malformed
    kept_as_is = decoded == _UNCOMPRESSED
    return _capped_sum(np.where(kept_as_is, lengths[stored] - 8, decoded), cap)


def _decoded_bytes(batch: _Table, body: pa.Buffer | None, cap: int) -> int:
    """The bytes the batch's buffers take once decoded (decompressed); a buffer larger than
    `cap` counts as `cap`."""
    start, count = batch.vector(_BATCH_BUFFERS, _SPAN.size)
    view = memoryview(b"" if body is None else body)
    compressed = batch.table(_BATCH_COMPRESSION) is not None
    if count > _VECTORIZED_FROM:
        spans = np.frombuffer(batch.data, "<i8", 2 * count, start).reshape(count, 2)
        return _buffer_sizes_vectorized(spans, view, compressed, cap)
    spans = batch.data[start:start + _SPAN.size * count]
    return sum(min(_buffer_size(view, offset, length, compressed), cap)
               for offset, length in _SPAN.iter_unpack(spans))


def _record_batch(header_type: int, header: _Table | None) -> _Table | None:
    if header is None:
        raise _Malformed
    if header_type == _DICTIONARY_BATCH:
        return header.table(_DICTIONARY_DATA)
    return header


class Tally:
    """The running cost of a stream, refused as soon as it passes a limit."""

    def __init__(self, limits: ArrowLimits) -> None:
        self.limits = limits
        self.decoded = 0
        self.rows = 0

    def add(self, decoded: int, rows: int) -> None:
        self.decoded += decoded
        self.rows += rows
        if self.decoded > self.limits.max_bytes:
            raise BodyTooLargeError(
                f"the Arrow IPC stream decodes (decompressed) to more than "
                f"{self.limits.max_bytes} bytes; the limit is max_body_bytes"
            )
        if self.rows > self.limits.max_rows:
            raise BodyTooLargeError(
                f"the Arrow IPC stream has more than {self.limits.max_rows} rows; the limit is "
                "max_arrow_rows"
            )


def message_cost(message: pa.ipc.Message, index: int, limits: ArrowLimits) -> StreamCost:
    """What decoding the `index`-th message of a stream allocates, from its metadata (its
    schema checked against `limits` when it is the first); malformed metadata is an input
    error, a batch decoding past the byte limit a `BodyTooLargeError`."""
    try:
        root = _Table.root(memoryview(message.metadata))
        header_type = root.scalar(_MESSAGE_HEADER_TYPE, _U8)
        header = root.table(_MESSAGE_HEADER)
        if (index == 0) != (header_type == _SCHEMA):
            raise InvalidInputError("request body is not an Arrow IPC stream: it must start "
                                    "with one schema message")
        if header_type == _SCHEMA:
            if header is None:
                raise _Malformed
            _check_schema(header, limits)
        elif header_type in (_DICTIONARY_BATCH, _RECORD_BATCH):
            batch = _record_batch(header_type, header)
            if batch is not None:
                rows = batch.scalar(_BATCH_LENGTH, _I64) if header_type == _RECORD_BATCH else 0
                decoded = _decoded_bytes(batch, message.body, limits.max_bytes + 1)
                Tally(limits).add(decoded, max(rows, 0))
                return StreamCost(decoded, max(rows, 0))
    except _Malformed:
        raise InvalidInputError(
            "request body is not an Arrow IPC stream: its message metadata is malformed"
        ) from None
    return StreamCost(0, 0)


def _stream_cost(buffer: pa.Buffer, limits: ArrowLimits) -> StreamCost:
    tally = Tally(limits)
    for index, message in enumerate(pa.ipc.MessageReader.open_stream(buffer)):
        cost = message_cost(message, index, limits)
        tally.add(cost.decoded_bytes, cost.rows)
    return StreamCost(tally.decoded, tally.rows)


def stream_cost(body: bytes, limits: ArrowLimits) -> StreamCost:
    """The stream's cost from its metadata alone (no buffer is decompressed), or the first
    limit it passes as an error; malformed metadata is an input error."""
    if not body:
        raise InvalidInputError("request body must be an Arrow IPC stream, got no bytes")
    try:
        return _stream_cost(pa.py_buffer(body), limits)
    except (pa.ArrowException, OSError) as error:
        raise InvalidInputError(f"request body is not an Arrow IPC stream: {error}") from None


def decode_stream(body: bytes, cost: StreamCost) -> None:
    """Decode and validate every batch, one at a time, and drop it; any error is input's."""
    rows = 0
    try:
        with pa.ipc.open_stream(pa.py_buffer(body)) as reader:
            for batch in reader:
                batch.validate(full=True)
                rows += batch.num_rows
    except (pa.ArrowException, OSError) as error:
        raise InvalidInputError(f"request body is not an Arrow IPC stream: {error}") from None
    if rows != cost.rows:
        raise InvalidInputError("request body is not an Arrow IPC stream: its batches do not "
                                "match their metadata")


def check_arrow_body(body: bytes, limits: ArrowLimits, reserve: Callable[[int], None]) -> bytes:
    """`body`, once it is known to be a complete Arrow IPC stream within `limits`; `reserve`
    is given its decoded size before anything is decoded."""
    cost = stream_cost(body, limits)
    reserve(cost.decoded_bytes)
    decode_stream(body, cost)
    return body
