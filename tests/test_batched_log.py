"""The log handler of `lance-adapter serve` writes the access log's lines in batches, off the
logging caller: they wait at most its interval; a warning, another logger's line, a full
queue, a flush and close write at once, in order, losing none."""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator

import orjson
import pytest

from app.batched_log import BatchedStreamHandler, direct_sink
from app.observability import ACCESS_LOGGER, JsonFormatter

BATCHED = "tests.batched_log.access"


class Watched(io.StringIO):
    """A stream that counts its writes and says when one happened."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.written = threading.Event()

    def write(self, text: str) -> int:
        self.writes += 1
        self.written.set()
        return super().write(text)


def _logger(handler: logging.Handler) -> Iterator[logging.Logger]:
    """The logger whose lines `handler` batches."""
    logger = logging.getLogger(BATCHED)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    handler.setFormatter(logging.Formatter("%(message)s"))
    try:
        yield logger
    finally:
        logger.removeHandler(handler)
        handler.close()


@pytest.fixture
def stream() -> Watched:
    return Watched()


@pytest.fixture
def slow(stream: Watched) -> Iterator[logging.Logger]:
    """A handler whose thread would not write within the test: what is written, the
    caller's side wrote."""
    yield from _logger(BatchedStreamHandler(stream, interval=3600, most=4, batched=BATCHED))


def test_info_lines_wait_and_a_warning_writes_them_in_order_in_one_write(
        slow: logging.Logger, stream: Watched) -> None:
    slow.info("one")
    slow.info("two")
    assert stream.getvalue() == ""
    slow.warning("three")
    assert stream.getvalue() == "one\ntwo\nthree\n"
    assert stream.writes == 1


def test_a_full_queue_is_written_by_the_caller(slow: logging.Logger, stream: Watched) -> None:
    for line in range(9):
        slow.info("line %d", line)
    assert stream.getvalue().splitlines() == [f"line {line}" for line in range(8)]
    assert stream.writes == 2


def test_close_writes_what_is_queued(stream: Watched) -> None:
    handler = BatchedStreamHandler(stream, interval=3600, batched=BATCHED)
    for logger in _logger(handler):
        logger.info("last words")
        handler.close()
        assert stream.getvalue() == "last words\n"


def test_the_handler_thread_writes_queued_lines_within_its_interval(stream: Watched) -> None:
    handler = BatchedStreamHandler(stream, interval=0.01, batched=BATCHED)
    for logger in _logger(handler):
        with handler.lock:  # both queued before the thread can write
            logger.info("a")
            logger.info("b")
        assert stream.written.wait(timeout=10)
        assert stream.getvalue() == "a\nb\n"


def test_a_line_of_another_logger_is_written_at_once_after_the_queued_ones(
        slow: logging.Logger, stream: Watched) -> None:
    slow.info("queued")
    other = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1,
                              "Finished server process", None, None)
    slow.handlers[0].handle(other)
    assert stream.getvalue() == "queued\nFinished server process\n"


def test_a_closed_stream_never_fails_the_caller(slow: logging.Logger, stream: Watched,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logging, "raiseExceptions", False)  # logging's own report, silenced
    stream.close()
    slow.warning("to a closed stream")  # written at once: fails, reported, not raised


def test_an_access_line_queued_directly_is_the_line_its_record_would_give(
    stream: Watched,
) -> None:
    """The access log's line goes to the handler without a LogRecord where nothing stands
    between (`direct_sink`), and reads as the record's line would; with a filter on the
    logger, or a second handler, the record goes through logging as before."""
    name = "tests.batched_log.direct"
    logger = logging.getLogger(name)
    logger.propagate = False
    handler = BatchedStreamHandler(stream, interval=3600, batched=name)
    saved, logger.handlers = logger.handlers, [handler]
    try:
        assert direct_sink(logger) is handler
        formatter = JsonFormatter()
        access = {"method": "POST", "path": "/v1/table/t/describe", "status": 200, "code": None}
        handler.queue_line(formatter.access_line(access))
        record = logging.LogRecord(ACCESS_LOGGER.name, logging.INFO, __file__, 1, "request",
                                   None, None)
        record.access = access
        handler.flush()
        direct = orjson.loads(stream.getvalue())
        through_logging = orjson.loads(formatter.format(record))
        assert direct.pop("ts")[:16] == through_logging.pop("ts")[:16]  # to the minute
        assert direct == through_logging

        logger.addHandler(logging.StreamHandler(io.StringIO()))
        assert direct_sink(logger) is None
        logger.handlers = [handler]
        logger.addFilter(lambda record: True)
        assert direct_sink(logger) is None
    finally:
        logger.filters.clear()
        logger.handlers = saved
        handler.close()
