"""The HTTP protocol `lance-adapter serve` runs: uvicorn's own, with a bound on each request head.

uvicorn bounds the time between requests (`timeout_keep_alive`) but not the time a request's
head takes: a connection that sends nothing, or part of a head, stays open for ever, and with
httptools a head of any size is buffered. Here the wait for a head (from the connection's
opening, or from the first byte of the next request on a kept-alive connection) ends after
`header_read_timeout` with a 408 (no answer if nothing was sent), and a head past
`max_header_bytes` is answered 431; either way the connection is closed. The limits are the
served application's settings (its `state.settings`).

A connection is closed by first closing only the server's side (`LingeringTransport`), so that a
client refused while it still sends reads its answer rather than a reset.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Any, NamedTuple

import h11
from lance_namespace import LanceNamespaceError
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.deadlines import Deadline, Deadlines
from app.errors import HeadTimeoutError, HeadTooLargeError, raw_error_answer
from app.settings import Settings

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # uvicorn without httptools serves with h11
    HttpToolsProtocol = None

logger = logging.getLogger("lance_adapter")
# Seconds a refused connection is read (and what arrives dropped) before it is closed.
LINGER_SECONDS = 2.0
# The most bytes one read of a connection delivers (asyncio's and uvloop's transports).
MAX_READ_BYTES = 256 * 1024
# Writes at least this large are sent at once rather than gathered with the next ones.
COALESCE_BYTES = 64 * 1024


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The uvicorn settings that run this protocol. h11 refuses a head past its own limit, with a
    plain 400: it is set past what this protocol lets through (the limit and one more read)."""
    return {"http": BoundedHeadProtocol,
            "h11_max_incomplete_event_size": settings.max_header_bytes + MAX_READ_BYTES}


class HeadLimits(NamedTuple):
    timeout: float
    max_bytes: int
    deadlines: Deadlines


def head_limits(app: Any) -> HeadLimits:
    """The limits in the settings of the served app, and its deadlines, found through
    uvicorn's wrappers."""
    for _ in range(16):
        state = getattr(app, "state", None)
        settings = getattr(state, "settings", None)
        if isinstance(settings, Settings):
            return HeadLimits(settings.header_read_timeout, settings.max_header_bytes,
                              getattr(state, "deadlines", None) or Deadlines())
        app = getattr(app, "app", None)
    defaults = Settings()
    return HeadLimits(defaults.header_read_timeout, defaults.max_header_bytes, Deadlines())


class LingeringTransport:
    """A connection's transport, except that closing it first closes only the server's side and
    drops what the client still sends, for at most LINGER_SECONDS. A client refused while it
    still sends (a body or head past a limit, a declared length too large) then reads the answer
    instead of a reset, which a plain close with unread bytes causes."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._closing = False
        self._pending: list[bytes] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def write(self, data: bytes) -> None:
        """What is written in one turn of the event loop (an answer's head and its body) is
        sent at once, at the end of the turn: with Nagle's algorithm off each write would be
        a packet of its own and a wake-up of the client."""
        if len(data) >= COALESCE_BYTES:
            self._flush()
            self._transport.write(data)
            return
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(data)

    def _flush(self) -> None:
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        if not self._transport.is_closing():
            self._transport.write(data)

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._closing or self._transport.is_closing()

    def close(self) -> None:
        self._flush()
        if self._closing:
            return
        self._closing = True
        if self._transport.is_closing() or not self._transport.can_write_eof():
            self._transport.close()
            return
        self._transport.resume_reading()  # a body's reading may be paused: drain it too
        self._transport.write_eof()  # after what is still to be written
        # The client's own close ends the wait sooner: uvicorn's protocols close on EOF.
        self._loop.call_later(LINGER_SECONDS, self._transport.close)


def _send_without_delay(transport: asyncio.Transport) -> None:
    """Turn off Nagle's algorithm. uvicorn opens the listening socket `lance-adapter serve`
    hands it (`fd=`) as a Unix socket, so the event loop leaves Nagle on for its TCP
    connections, and an answer written in two parts then waits for the client's delayed
    acknowledgement: about 40 ms on every request of a kept-alive connection."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return
    with contextlib.suppress(OSError):  # a real Unix socket has no such option
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class HeadDeadline:
    """Mixed in before a uvicorn HTTP protocol (which tells it when a head begins and ends): the
    head's deadline and size limit, and a lingering close."""

    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    app: Any

    def __init__(self, *arguments: Any, **options: Any) -> None:
        super().__init__(*arguments, **options)
        self.head_limits = head_limits(self.app)
        self._head_deadline: Deadline | None = None
        self._head_started = False
        self._head_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:
        _send_without_delay(transport)
        lingering = LingeringTransport(transport, self.loop)
        super().connection_made(lingering)  # type: ignore[misc, arg-type]
        self._await_head()

    def _await_head(self) -> None:
        """A head is due: the deadline runs from now, unless it runs already."""
        if self._head_deadline is None and self.head_limits.timeout > 0:
            self._head_deadline = self.head_limits.deadlines.at(
                self.loop.time() + self.head_limits.timeout, self._head_late)

    def _head_begun(self) -> None:
        self._await_head()
        self._head_started = True

    def _head_ended(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.clear()
            self._head_deadline = None
        self._head_started = False
        self._head_bytes = 0

    def _after_data(self) -> None:
        """Called after each chunk is parsed, for protocols that learn of heads only then."""

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return  # a closed or lingering connection: nothing it sends is read
        super().data_received(data)  # type: ignore[misc]
        self._after_data()
        if self._head_started and not self.transport.is_closing():
            self._head_bytes += len(data)
            if self._head_bytes > self.head_limits.max_bytes:
                self._refuse(HeadTooLargeError(
                    f"request head is larger than {self.head_limits.max_bytes} bytes; the "
                    "limit is max_header_bytes"
                ))

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_ended()
        super().connection_lost(exc)  # type: ignore[misc]

    def _head_late(self) -> None:
        self._head_deadline = None
        if self.transport.is_closing():
            return
        if not self._head_started:
            self.transport.close()  # nothing was asked, so nothing is answered
            return
        self._refuse(HeadTimeoutError(
            f"request head did not arrive within {self.head_limits.timeout:g} seconds"
        ))

    def _refuse(self, error: LanceNamespaceError) -> None:
        logger.debug("closing a connection: %s", error)
        self._head_ended()
        self.transport.write(raw_error_answer(error))
        self.transport.close()


class H11HeadProtocol(HeadDeadline, H11Protocol):
    """uvicorn's h11 protocol with the head deadline; h11 is idle until a head is complete."""

    def _after_data(self) -> None:
        if self.conn.their_state is not h11.IDLE:
            self._head_ended()
        elif self.conn.trailing_data[0]:
            self._head_begun()


if HttpToolsProtocol is not None:

    class HttpToolsHeadProtocol(HeadDeadline, HttpToolsProtocol):
        """uvicorn's httptools protocol with the head deadline, from the parser's callbacks."""

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._head_begun()

        def on_headers_complete(self) -> None:
            self._head_ended()
            super().on_headers_complete()

    BoundedHeadProtocol: type[asyncio.Protocol] = HttpToolsHeadProtocol
else:
    BoundedHeadProtocol = H11HeadProtocol
