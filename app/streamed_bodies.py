"""Arrow request bodies read by the backend as they arrive (`ArrowBodyStream`), for the
operations whose backend writes batch by batch: the body is never held whole, so a large
insert costs a worker about one batch of memory, not the body and what it decodes to.

The backend thread reads the stream; each read asks the event loop for the next piece of the
body (`BodyPieces`, about 1 MiB at a time, the client waiting meanwhile: TCP's own flow
control). The limits of `app.arrow_limits` are applied message by message, before a message is
decoded: the body's size, what its batches decode to (a compressed batch is measured from its
metadata), its rows, columns and nesting. A limit passed mid-stream fails the read, and so
the write, before anything is committed; the error the client gets is the limit's. What a
streamed body holds counts against `max_in_flight_body_bytes` as a whole body does: the
piece of it being read, and what its current message decodes to.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Iterator
from typing import TypeVar

import pyarrow as pa
from lance_namespace import InvalidInputError
from starlette.requests import Request

from app.arrow_limits import ArrowLimits, Tally, message_cost
from app.bodies import BodyLimits, body_late, body_too_large, refuse_declared_over
from app.errors import BodyTimeoutError, BodyTooLargeError

PIECE_BYTES = 1 << 20
# A buffer handed over without a copy starts where any value may (Lance's 128-bit ones).
_ALIGNMENT = 16
_T = TypeVar("_T")


def streamed_arrow_body(request: Request, limits: BodyLimits) -> ArrowBodyStream:
    """The request's Arrow body as a file the backend reads as it arrives; a declared length
    over the limit is refused at once."""
    refuse_declared_over(request, limits.max_bytes, "max_body_bytes")
    pieces = BodyPieces(request, limits, asyncio.get_running_loop())
    return ArrowBodyStream(pieces, limits.arrow)


class BodyPieces:
    """The request's body, a piece at a time, for a thread other than the event loop's."""

    def __init__(self, request: Request, limits: BodyLimits,
                 loop: asyncio.AbstractEventLoop) -> None:
        self._chunks = request.stream().__aiter__()
        self._limits = limits
        self._reservation = limits.reservation(request)
        self._loop = loop
        self._deadline = loop.time() + limits.read_timeout if limits.read_timeout else None
        self._size = 0
        self._held = 0
        self._decoded = 0
        self.done = False

    def hold_decoded(self, size: int) -> None:
        """Reserve what the next message decodes to, giving back what the previous one did
        (its batch is consumed once the next is asked for)."""
        self._reservation.give_back(self._decoded)
        self._decoded = 0
        self._reservation.add(size)
        self._decoded = size

    def next_piece(self) -> list[bytes]:
        """The next piece, as the chunks it arrived in (none at the end); called from a
        backend thread, once the previous piece was consumed."""
        if self.done:
            return []
        return asyncio.run_coroutine_threadsafe(self._gather(), self._loop).result()

    async def _gather(self) -> list[bytes]:
        self._reservation.give_back(self._held)  # the previous piece was consumed
        self._held = 0
        parts: list[bytes] = []
        gathered = 0
        try:
            with self._limits.deadlines.until(self._deadline):
                while gathered < PIECE_BYTES:
                    chunk = await anext(self._chunks, None)
                    if chunk is None:
                        self.done = True
                        break
                    self._size += len(chunk)
                    if self._size > self._limits.max_bytes:
                        raise body_too_large(self._limits.max_bytes, "max_body_bytes")
                    self._reservation.add(len(chunk))
                    self._held += len(chunk)
                    parts.append(chunk)
                    gathered += len(chunk)
        except TimeoutError:
            raise body_late(self._limits) from None
        return parts


class _BodyFile:
    """`BodyPieces` as a file for pyarrow's message reader, which reads a message's parts
    with one `read` each: a read is answered with one copy of what it asks for (a view of
    the chunk that holds it, where that is aligned for any value, without one), instead of
    joining the chunks into pieces and copying those into a buffered reader first."""

    def __init__(self, pieces: BodyPieces) -> None:
        self._pieces = pieces
        self._chunks: collections.deque[memoryview] = collections.deque()
        self._available = 0
        self.closed = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> memoryview | bytearray:
        while (size < 0 or self._available < size) and (chunks := self._pieces.next_piece()):
            self._chunks.extend(memoryview(chunk) for chunk in chunks)
            self._available += sum(len(chunk) for chunk in chunks)
        size = self._available if size < 0 else min(size, self._available)
        first = self._chunks[0] if self._chunks else memoryview(b"")
        if len(first) >= size and pa.py_buffer(first).address % _ALIGNMENT == 0:
            self._take(size)
            return first[:size]
        whole = bytearray(size)
        at = 0
        while at < size:
            chunk = self._chunks[0]
            count = min(len(chunk), size - at)
            whole[at:at + count] = chunk[:count]
            self._take(count)
            at += count
        return whole

    def _take(self, count: int) -> None:
        """Drop `count` bytes from the front of the first chunk."""
        self._available -= count
        if count == len(self._chunks[0]):
            self._chunks.popleft()
        else:
            self._chunks[0] = self._chunks[0][count:]


class ArrowBodyStream:
    """The Arrow IPC stream of the body, opened by the backend's thread (`open`): a reader of
    its batches, each decoded once its message is within `limits`, where the message lies
    (no copy). `failure` keeps the first error reading the body raised, so that the
    operation answers with it whatever its writer made of it."""

    def __init__(self, pieces: BodyPieces, limits: ArrowLimits) -> None:
        self._pieces = pieces
        self._limits = limits
        self.failure: BaseException | None = None

    def open(self) -> pa.RecordBatchReader:
        messages = self._checked(_messages(_BodyFile(self._pieces)))
        schema_message = next(messages, None)
        if schema_message is None:
            raise self._failed(InvalidInputError("the request has no Arrow IPC stream body"))
        schema = self._guarded(lambda: pa.ipc.read_schema(schema_message))
        if any(pa.types.is_dictionary(field.type) for field in schema):
            # Dictionaries are decoded by pyarrow's stream reader alone: read the rest whole.
            whole = b"".join([schema_message.serialize().to_pybytes(),
                              *(message.serialize().to_pybytes() for message in messages),
                              _END_OF_STREAM])
            return self._guarded(lambda: pa.ipc.open_stream(whole))
        batches = (self._guarded(lambda m=message: pa.ipc.read_record_batch(m, schema))
                   for message in messages)
        return pa.RecordBatchReader.from_batches(schema, batches)

    def _checked(self, messages: Iterator[pa.ipc.Message]) -> Iterator[pa.ipc.Message]:
        tally = Tally(self._limits)
        for index, message in enumerate(self._guarded_iter(messages)):
            cost = self._guarded(lambda m=message, i=index: message_cost(m, i, self._limits))
            self._guarded(lambda c=cost: tally.add(c.decoded_bytes, c.rows))
            self._guarded(lambda c=cost: self._pieces.hold_decoded(c.decoded_bytes))
            yield message

    def _guarded_iter(self, messages: Iterator[pa.ipc.Message]) -> Iterator[pa.ipc.Message]:
        while True:
            message = self._guarded(lambda: next(messages, None))
            if message is None:
                return
            yield message

    def _guarded(self, step: Callable[[], _T]) -> _T:
        try:
            return step()
        except BaseException as error:
            raise self._failed(error) from None

    def _failed(self, error: BaseException) -> BaseException:
        """The error to answer for `error`, kept as the body's failure."""
        if isinstance(error.__context__, BodyTooLargeError | BodyTimeoutError):
            error = error.__context__
        if isinstance(error, pa.ArrowException | OSError):
            error = InvalidInputError(f"request body is not an Arrow IPC stream: {error}")
        self.failure = self.failure or error
        return self.failure


# The end-of-stream marker of the IPC stream format: a continuation and a zero length.
_END_OF_STREAM = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def _messages(body: _BodyFile) -> Iterator[pa.ipc.Message]:
    return iter(pa.ipc.MessageReader.open_stream(body))
