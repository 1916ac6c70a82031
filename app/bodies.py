"""Request bodies read within limits (`BodyLimits`): their size, as sent and, before they are
decoded, what they decode to (`app.arrow_limits` for Arrow streams); the time they take; and
the bytes one process holds for all of them, reserved as bytes arrive, never from a declared
length (`Reservation`, given back by `release_body`).
"""

from __future__ import annotations

import asyncio
import functools
import io
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson
from lance_namespace import InvalidInputError
from starlette.requests import Request

from app.arrow_limits import ArrowLimits, check_arrow_body
from app.deadlines import Deadlines
from app.errors import BodiesInFlightError, BodyTimeoutError, BodyTooLargeError
from app.serving_settings import usable_cpus
from app.settings import Settings

# What decoded JSON costs at most: per byte of the body (measured: 20 for a list of floats, 24
# for a list of two-letter strings), and per object or array (an object with a key: 184).
JSON_BYTE_COST = 24
JSON_CONTAINER_COST = 256
# JSON bodies from this size on are decoded on a worker thread.
JSON_THREAD_FROM = 64 * 1024


class Reservation:
    """The body bytes one request holds: added as they arrive (and before they are decoded),
    given back all at once when the request ends."""

    def __init__(self, limits: BodyLimits) -> None:
        self.limits = limits
        self.held = 0
        self.released = False

    def add(self, size: int) -> None:
        limits = self.limits
        with limits.lock:
            if self.released:
                raise InvalidInputError("the request ended before its body was read")
            if limits.in_flight + size > limits.max_in_flight:
                raise BodiesInFlightError(
                    f"the server is holding {limits.max_in_flight} bytes of request bodies; "
                    "retry later"
                )
            limits.in_flight += size
            self.held += size

    def give_back(self, size: int) -> None:
        """Give back `size` of the bytes held (a streamed body's piece, consumed)."""
        with self.limits.lock:
            size = min(size, self.held)
            self.limits.in_flight -= size
            self.held -= size

    def release(self) -> None:
        with self.limits.lock:
            if not self.released:
                self.limits.in_flight -= self.held
                self.held = 0
                self.released = True


@dataclass
class BodyLimits:
    """How large, deep, slow and many request bodies one server process accepts.

    `in_flight` counts the bytes every request holds: its body as it arrives, what its JSON
    may decode to, and what its Arrow stream decodes to; `release_body` gives them back.
    """

    max_bytes: int
    max_json_bytes: int
    max_json_containers: int
    max_depth: int
    read_timeout: float
    max_in_flight: int
    arrow: ArrowLimits
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # Decoding runs here, off the event loop: CPU-bound, so one thread per usable CPU.
    checks: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(usable_cpus(), "body-check"), repr=False
    )
    # Where `read_timeout` is kept (the server's one `Deadlines`).
    deadlines: Deadlines = field(default_factory=Deadlines, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings, deadlines: Deadlines | None = None) -> BodyLimits:
        arrow = ArrowLimits(settings.max_body_bytes, settings.max_arrow_rows,
                            settings.max_arrow_columns, settings.max_nesting_depth)
        return cls(settings.max_body_bytes,
                   min(settings.max_json_body_bytes, settings.max_body_bytes),
                   settings.max_json_containers, settings.max_nesting_depth,
                   settings.body_read_timeout, settings.max_in_flight_body_bytes, arrow,
                   deadlines=deadlines or Deadlines())

    def reservation(self, request: Request) -> Reservation:
        """The request's reservation, made on first use."""
        reservation = request.scope.get(RESERVATION_KEY)
        if reservation is None:
            reservation = request.scope[RESERVATION_KEY] = Reservation(self)
        return reservation


RESERVATION_KEY = "lance_adapter.body_reservation"


def release_body(request: Request) -> None:
    """Give back the bytes `request` reserved; safe to call more than once."""
    reservation: Reservation | None = request.scope.pop(RESERVATION_KEY, None)
    if reservation is not None:
        reservation.release()


def declared_length(request: Request) -> int | None:
    """The body's length as its head declares it (None: not declared, or not a number)."""
    declared = request.headers.get("content-length")
    return int(declared) if declared is not None and declared.isdigit() else None


def refuse_declared_over(request: Request, max_bytes: int, setting: str) -> None:
    """A declared length over the limit is refused at once; a smaller one reserves nothing."""
    declared = declared_length(request)
    if declared is not None and declared > max_bytes:
        raise BodyTooLargeError(
            f"request body is larger than {max_bytes} bytes; the limit is {setting}"
        )


async def read_body(
    request: Request, limits: BodyLimits, max_bytes: int, setting: str = "max_body_bytes"
) -> bytes:
    """The whole body, within `max_bytes`, the deadline and the in-flight limit.

    Bytes are reserved as they arrive, and stay reserved until `release_body(request)`.
    """
    refuse_declared_over(request, max_bytes, setting)
    reservation = limits.reservation(request)
    # BytesIO hands over its buffer as the body: no copy of the whole, which would hold the
    # GIL (and so the event loop) for as long as it takes.
    buffer = io.BytesIO()
    size = 0
    try:
        with limits.deadlines.within(limits.read_timeout):
            async for chunk in request.stream():
                if size + len(chunk) > max_bytes:
                    raise body_too_large(max_bytes, setting)
                reservation.add(len(chunk))
                buffer.write(chunk)
                size += len(chunk)
    except TimeoutError:
        raise body_late(limits) from None
    return buffer.getvalue()


def body_too_large(max_bytes: int, setting: str) -> BodyTooLargeError:
    return BodyTooLargeError(
        f"request body is larger than {max_bytes} bytes; the limit is {setting}")


def body_late(limits: BodyLimits) -> BodyTimeoutError:
    return BodyTimeoutError(
        f"request body did not arrive within {limits.read_timeout:g} seconds")


def json_containers(body: bytes, max_containers: int) -> int:
    """How many objects and arrays `body` holds at most (its opening brackets, strings' too).

    Each is a garbage-collected object: a body of a million small ones would hold the GIL, and
    so the event loop, for a second while it is decoded (a million floats take 10 ms).
    """
    containers = body.count(b"{") + body.count(b"[")
    if containers > max_containers:
        raise InvalidInputError(
            f"request body has more than {max_containers} JSON objects and arrays; the limit "
            "is max_json_containers"
        )
    return containers


def _nests_deeper(value: Any, max_depth: int) -> bool:
    values, depths = [value], [1]
    while values:
        item, depth = values.pop(), depths.pop()
        if depth > max_depth:
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list)):
                values.append(child)
                depths.append(depth + 1)
    return False


def parse_json_object(body: bytes, max_depth: int, brackets: int) -> dict[str, Any]:
    """The JSON object `body`; `brackets` is its count of `{` and `[` (`json_containers`)."""
    if not body or body.isspace():
        return {}
    try:
        value = orjson.loads(body)  # refuses nesting deeper than 1024 levels
    except orjson.JSONDecodeError as error:
        raise InvalidInputError(f"request body is not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise InvalidInputError("request body must be a JSON object")
    # Fewer brackets than the limit cannot nest deeper: most bodies are not walked.
    if brackets > max_depth and _nests_deeper(value, max_depth):
        raise InvalidInputError(
            f"request body nests deeper than {max_depth} levels; the limit is max_nesting_depth"
        )
    return value


async def _off_the_loop(limits: BodyLimits, function: Any, *arguments: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(
        limits.checks, functools.partial(function, *arguments)
    )


async def read_json_body(request: Request, limits: BodyLimits) -> dict[str, Any]:
    """The JSON object of the body, its decoded size reserved before it is decoded."""
    body = await read_body(request, limits, limits.max_json_bytes, "max_json_body_bytes")
    containers = json_containers(body, limits.max_json_containers)
    limits.reservation(request).add(JSON_BYTE_COST * len(body) + JSON_CONTAINER_COST * containers)
    if len(body) < JSON_THREAD_FROM:
        return parse_json_object(body, limits.max_depth, containers)
    return await _off_the_loop(limits, parse_json_object, body, limits.max_depth, containers)


async def read_arrow_body(request: Request, limits: BodyLimits) -> bytes:
    """The Arrow IPC stream of the body, checked (see `app.arrow_limits`) on a worker thread."""
    body = await read_body(request, limits, limits.max_bytes)
    reserve = limits.reservation(request).add
    return await _off_the_loop(limits, check_arrow_body, body, limits.arrow, reserve)


async def skip_body(request: Request, limits: BodyLimits) -> None:
    """Read (and drop) the body of an operation that takes none, within the JSON limit."""
    await read_body(request, limits, limits.max_json_bytes, "max_json_body_bytes")
