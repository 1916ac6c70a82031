"""A metadata cache in front of a backend, shared in meaning by every worker of one server, and
the events it reports (`CacheEvents`: hits, misses, validations, evictions).

What is cached: the answers to DescribeTable, TableExists, ListTables, ListNamespaces and
DescribeNamespace (and their spec aliases), keyed by operation and every request field that
can change the answer (id, version, load_detailed_metadata, paging, identity, context...).

Why it is correct:
- Writes through this server: every operation that is not read-only bumps one generation
  counter in a memory-mapped file all workers share, once the write has finished (and also
  when it failed: a failed write may have changed something). Each worker reads the counter
  on every lookup and drops its entries when the counter moved, so an acknowledged write is
  seen at once by every worker. A read stores its answer only if the generation did not move
  while it ran, so an answer read before a write can never be stored after it.
- Changes made elsewhere: on a local `dir` root every hit is validated against the storage
  (the modification times of the root, of the manifest's `_versions` directory and, for
  DescribeTable, of the table's `_versions` directory). Anything else has no validator here
  and is not stored, unless the operator opts in to `metadata_cache_ttl` seconds of blindness.
"""

from __future__ import annotations

import fcntl
import functools
import mmap
import os
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson
from lance_namespace import InvalidInputError

from backends.locations import resolve_stored

CACHED_OPERATIONS = frozenset(
    {"DescribeTable", "TableExists", "ListTables", "ListNamespaces", "DescribeNamespace"}
)
# Context headers that differ on every request and never change an answer.
PER_REQUEST_CONTEXT = frozenset({"header.x-request-id", "header.traceparent", "header.tracestate"})
GENERATION_FILE = "metadata-generation"
# File times come from a coarse kernel clock (one tick, at most 10 ms on Linux): a stamp is
# trusted only when the storage last changed this long before the read began.
CLOCK_MARGIN_NS = 50_000_000
_COUNTER = struct.Struct("=Q")
MISS = object()

# Modification times (ns) of what an answer depends on; None where a path does not exist.
Stamp = tuple[int | None, ...]
Stamper = Callable[[str, Any], Stamp]


class CacheEvents(Protocol):
    """Where a cache reports what it does (the server's metrics)."""

    def cache_lookup(self, operation_id: str, hit: bool) -> None: ...

    def cache_validation(self, operation_id: str, fresh: bool) -> None: ...

    # reason: "changed" (failed validation), "expired", "capacity" or "write" (whole cache).
    def cache_eviction(self, reason: str, entries: int) -> None: ...


class _Unobserved:
    def cache_lookup(self, operation_id: str, hit: bool) -> None:
        pass

    def cache_validation(self, operation_id: str, fresh: bool) -> None:
        pass

    def cache_eviction(self, reason: str, entries: int) -> None:
        pass


class Generation:
    """A counter every worker of one server shares: 8 bytes of a memory-mapped file.

    Without a file (one process) the counter lives in anonymous memory.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._file = None
        if path is None:
            self._map = mmap.mmap(-1, _COUNTER.size)
            return
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        with _locked(descriptor):
            if os.fstat(descriptor).st_size < _COUNTER.size:
                os.ftruncate(descriptor, _COUNTER.size)
        self._file = descriptor
        self._map = mmap.mmap(descriptor, _COUNTER.size)

    def read(self) -> int:
        return _COUNTER.unpack_from(self._map)[0]

    def bump(self) -> None:
        if self._file is None:
            _COUNTER.pack_into(self._map, 0, self.read() + 1)
            return
        with _locked(self._file):
            _COUNTER.pack_into(self._map, 0, self.read() + 1)


class _locked:
    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor

    def __enter__(self) -> None:
        fcntl.lockf(self.descriptor, fcntl.LOCK_EX)

    def __exit__(self, *_: object) -> None:
        fcntl.lockf(self.descriptor, fcntl.LOCK_UN)


@dataclass
class _Entry:
    answer: Any
    stored_at: float
    stamp: Stamp | None


@dataclass(frozen=True)
class PendingRead:
    """What a read must remember to store its answer safely."""

    key: bytes
    operation_id: str
    generation: int
    started_ns: int


class MetadataCache:
    """Answers of read-only metadata operations; all methods run on the event loop thread."""

    def __init__(
        self,
        generation: Generation,
        ttl: float,
        validated_ttl: float,
        max_entries: int,
        stamper: Stamper | None = None,
        events: CacheEvents | None = None,
    ) -> None:
        self.generation = generation
        self.events = events or _Unobserved()
        self.ttl = ttl
        self.validated_ttl = validated_ttl
        self.max_entries = max_entries
        self.stamper = stamper
        self._entries: dict[bytes, _Entry] = {}
        self._seen_generation = generation.read()

    def key(self, operation_id: str, fields: Mapping[str, Any]) -> bytes | None:
        """The entry key of a request, or None when its answer is not cached."""
        if operation_id not in CACHED_OPERATIONS:
            return None
        context = fields.get("context")
        if context:
            fields = {**fields, "context": {
                k: v for k, v in context.items() if k.lower() not in PER_REQUEST_CONTEXT
            }}
        return orjson.dumps((operation_id, fields), option=orjson.OPT_SORT_KEYS, default=str)

    def lookup(self, key: bytes, operation_id: str) -> Any:
        """The cached answer, or MISS."""
        self._follow_generation()
        entry = self._entries.get(key)
        if entry is None:
            self.events.cache_lookup(operation_id, hit=False)
            return MISS
        reason = self._stale_reason(entry, operation_id)
        if reason is not None:
            del self._entries[key]
            self.events.cache_eviction(reason, 1)
            self.events.cache_lookup(operation_id, hit=False)
            return MISS
        self.events.cache_lookup(operation_id, hit=True)
        return entry.answer

    def _stale_reason(self, entry: _Entry, operation_id: str) -> str | None:
        """Why `entry` may no longer be served, or None when it may."""
        age = time.monotonic() - entry.stored_at
        if entry.stamp is None:
            return None if age <= self.ttl else "expired"
        if age > self.validated_ttl:
            return "expired"
        fresh = self.stamper(operation_id, entry.answer) == entry.stamp
        self.events.cache_validation(operation_id, fresh)
        return None if fresh else "changed"

    def begin(self, key: bytes, operation_id: str) -> PendingRead:
        return PendingRead(key, operation_id, self.generation.read(), time.time_ns())

    def store(self, pending: PendingRead, answer: Any) -> None:
        if self.generation.read() != pending.generation:
            return  # a write finished while this read ran: its answer may be older
        self._follow_generation()
        stamp = None
        if self.stamper is not None:
            stamp = self._trusted_stamp(pending, answer)
            if stamp is None:
                return  # the storage changed too recently to vouch for this answer
        elif self.ttl <= 0:
            return
        if len(self._entries) >= self.max_entries:
            del self._entries[next(iter(self._entries))]
            self.events.cache_eviction("capacity", 1)
        self._entries[pending.key] = _Entry(answer, time.monotonic(), stamp)

    def invalidate(self) -> None:
        """A write finished (or failed): every worker drops every entry."""
        self.generation.bump()
        self._follow_generation()

    def _follow_generation(self) -> None:
        current = self.generation.read()
        if current != self._seen_generation:
            if self._entries:
                self.events.cache_eviction("write", len(self._entries))
            self._entries.clear()
            self._seen_generation = current

    def _trusted_stamp(self, pending: PendingRead, answer: Any) -> Stamp | None:
        """The storage stamp, if the storage last changed well before the read began."""
        stamp = self.stamper(pending.operation_id, answer)
        if newest_change(stamp) >= pending.started_ns - CLOCK_MARGIN_NS:
            return None
        return stamp


def newest_change(stamp: Stamp) -> int:
    return max((time_ns for time_ns in stamp if time_ns is not None), default=0)


def _modified_ns(path: Path) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


@functools.lru_cache(maxsize=4096)  # asked on every validated hit of a DescribeTable entry
def _local_path(location: str | None) -> Path | None:
    """Where Lance opens `location` on the local file system (`backends.locations`)."""
    if not location:
        return None
    try:
        place = resolve_stored(location)
    except InvalidInputError:
        return None
    return Path(place.uri) if place.scheme == "file" else None


def directory_stamper(root: Path) -> Stamper:
    """Stamps of a local `dir` root: what a change to a namespace, listing or table touches.

    A table version, a manifest version (create, drop, declare, register, namespaces) and a
    table or namespace directory all appear as a new file in a directory whose modification
    time the stamp holds.
    """
    root = root.absolute()
    watched = (root, root / "__manifest" / "_versions")

    def stamp(operation_id: str, answer: Any) -> Stamp:
        times = tuple(_modified_ns(path) for path in watched)
        if operation_id != "DescribeTable":
            return times
        table = _local_path(getattr(answer, "location", None))
        if table is None:
            return (*times, None, None)
        return (*times, _modified_ns(table), _modified_ns(table / "_versions"))

    return stamp
