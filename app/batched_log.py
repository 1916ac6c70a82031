"""The log handler of `lance-adapter serve`: lines written in batches by a thread of its own.

One write and flush per line cost the event loop a system call per request (the access log
line). Here a line is formatted where it is logged (the request id is read there) and queued;
the handler's thread writes what is queued every `interval` seconds in one write. Only the
access log's lines wait so: any other line is written at once, with everything queued before
it (the lines keep their order, and the last ones before a crash are out); so is a queue that
reached `most` lines (a stalled reader slows the server down rather than grow its memory).
uvicorn logs its last lines ("Finished server process") after the last request ends, so a
server stopped normally writes every access line, even though it then ends by re-raising the
signal (no `atexit`); `flush()` and `close()` write what is queued too.
"""

from __future__ import annotations

import logging
import threading
from typing import TextIO


class BatchedStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A `StreamHandler` writing its lines in batches (see the module's docstring)."""

    def __init__(
        self, stream: TextIO | None = None, interval: float = 0.05, most: int = 1024,
        batched: str = "lance_adapter.access",
    ) -> None:
        super().__init__(stream)
        self._batched = batched  # the logger whose info lines wait
        self._interval = interval
        self._most = most
        self._queued: list[str] = []
        self._stopping = threading.Event()
        self._writer = threading.Thread(target=self._write_batches, name="log-writer",
                                        daemon=True)
        self._writer.start()

    def emit(self, record: logging.LogRecord) -> None:
        """Called under the handler's lock (`Handler.handle`)."""
        try:
            self._queued.append(self.format(record))
            if (record.name != self._batched or record.levelno >= logging.WARNING
                    or len(self._queued) >= self._most):
                self.flush()
        except Exception:  # as `StreamHandler.emit` does: logging never fails the caller
            self.handleError(record)

    def queue_line(self, line: str) -> None:
        """Queue an access line formatted by its caller (`direct_sink`), as `emit` queues
        the line of an access record."""
        with self.lock:  # type: ignore[union-attr]
            self._queued.append(line)
            if len(self._queued) >= self._most:
                self.flush()

    def flush(self) -> None:
        """Write what is queued. Under the handler's lock (re-entered from `emit`): lines
        queued meanwhile wait, so no batch overtakes another."""
        with self.lock:  # type: ignore[union-attr]
            if self._queued:
                lines, self._queued = self._queued, []
                self.stream.write(self.terminator.join(lines) + self.terminator)
                self.stream.flush()

    def _write_batches(self) -> None:
        while not self._stopping.wait(self._interval):
            try:
                self.flush()
            except Exception:  # a closed or broken stream: the next flush reports it
                continue

    def close(self) -> None:
        self._stopping.set()
        self._writer.join(timeout=5)
        try:
            self.flush()
        finally:
            super().close()


def direct_sink(logger: logging.Logger) -> BatchedStreamHandler | None:
    """The one handler `logger`'s info lines reach, when it is a `BatchedStreamHandler`
    queueing that logger's lines and nothing (no filter, no other handler) stands between:
    then a line may be queued to it directly, without a `LogRecord` (the access log, once per
    request). None otherwise (a test's capturing handler, an operator's configuration)."""
    handlers: list[logging.Handler] = []
    current: logging.Logger | None = logger
    while current is not None:
        if current.filters or current.disabled:
            return None
        handlers.extend(current.handlers)
        current = current.parent if current.propagate else None  # type: ignore[assignment]
    if len(handlers) != 1 or not isinstance(handlers[0], BatchedStreamHandler):
        return None
    handler = handlers[0]
    if handler.filters or handler.level > logging.INFO or handler._batched != logger.name:
        return None
    return handler
