"""A metadata cache in front of a backend, shared in meaning by every worker of one server, and
the events it reports (`CacheEvents`: hits, misses, validations, evictions).

What is cached: the answers to DescribeTable, TableExists, ListTables, ListNamespaces and
DescribeNamespace (and their spec aliases), and CountTableRows where the backend stamps it
(`STAMPED_ONLY`), keyed by operation and every request field that can change the answer
(id, version, predicate, load_detailed_metadata, paging, identity, context...).

Why it is correct:
- Writes through this server: every operation that is not read-only bumps the write counters
  of what it may change (`write_scopes`: its table, its namespace's listing; a namespace; or,
  for what names no single id, everything), in a memory-mapped file all workers share, once
  the write has finished (and also when it failed: a failed write may have changed
  something). Every entry remembers the counters of what its answer depends on
  (`read_scopes`: the id, its listing, every enclosing namespace) and is dropped on the
  lookup that finds one of them moved, so an acknowledged write is seen at once by every
  worker, while answers about other tables stay. A read stores its answer only if none of
  its counters moved while it ran, so an answer read before a write is never stored after it.
- Changes made elsewhere: where the backend gives a stamper (`cache_stamper`, `backends.hooks`)
  every hit is validated against the storage (a local `dir` root: the modification times of
  the root, of the manifest's `_versions` directory and, for DescribeTable and CountTableRows,
  of the table's directory and its `_versions` directory). Anything else has no validator
  here and is not stored, unless the operator opts in to `metadata_cache_ttl` seconds of
  blindness (never a count: its stamp is the only bound).
- A request naming a tag, or a branch other than main, is never answered from the cache: a
  stamp watches the table's main versions, which a branch's commits and a tag's move leave
  as they were. Nor is a TableExists naming a version: its stamp is the catalog's alone,
  which a version's removal (`cleanup_old_versions`) leaves as it was.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from backends.core.operations import Subject, traits_of
from backends.hooks import Stamp, Stamper
from backends.tables.refs import MAIN_BRANCH

CACHED_OPERATIONS = frozenset({"DescribeTable", "TableExists", "ListTables", "ListNamespaces",
                               "DescribeNamespace", "CountTableRows"})
# Answers that depend on a table's data: stored only with the backend's stamp, whatever
# `metadata_cache_ttl` says (a time bound alone would hide other writers' rows).
STAMPED_ONLY = frozenset({"CountTableRows"})
# Context headers that differ on every request and never change an answer.
PER_REQUEST_CONTEXT = frozenset({"header.x-request-id", "header.traceparent", "header.tracestate"})
GENERATION_FILE = "metadata-generations"
# Write counters shared by the workers: slot 0 for writes that may change anything, the others
# for scopes, by hash (two scopes sharing a slot only invalidate each other more often).
SLOTS = 4096
EVERYTHING = ""
# File times come from a coarse kernel clock (one tick, at most 10 ms on Linux): a stamp is
# trusted only when the storage last changed this long before the read began.
CLOCK_MARGIN_NS = 50_000_000
_COUNTER = struct.Struct("=Q")
MISS = object()


class CacheEvents(Protocol):
    """Where a cache reports what it does (the server's metrics)."""

    def cache_lookup(self, operation_id: str, hit: bool) -> None: ...

    def cache_validation(self, operation_id: str, fresh: bool) -> None: ...

    # reason: "changed" (failed validation), "expired", "capacity" or "write" (a write through
    # this server may have changed what the entry depends on).
    def cache_eviction(self, reason: str, entries: int) -> None: ...


class _Unobserved:
    def cache_lookup(self, operation_id: str, hit: bool) -> None:
        pass

    def cache_validation(self, operation_id: str, fresh: bool) -> None:
        pass

    def cache_eviction(self, reason: str, entries: int) -> None:
        pass


class Generations:
    """Write counters every worker of one server shares: SLOTS of 8 bytes in a memory-mapped
    file. Without a file (one process) they live in anonymous memory."""

    def __init__(self, path: Path | None = None) -> None:
        self._file = None
        size = SLOTS * _COUNTER.size
        if path is None:
            self._map = mmap.mmap(-1, size)
            return
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        with _locked(descriptor):
            if os.fstat(descriptor).st_size < size:
                os.ftruncate(descriptor, size)
        self._file = descriptor
        self._map = mmap.mmap(descriptor, size)

    def read(self, slot: int) -> int:
        return _COUNTER.unpack_from(self._map, slot * _COUNTER.size)[0]

    def snapshot(self, slots: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(self.read(slot) for slot in slots)

    def bump(self, slots: tuple[int, ...]) -> None:
        if self._file is None:
            self._bump(slots)
            return
        with _locked(self._file):
            self._bump(slots)

    def _bump(self, slots: tuple[int, ...]) -> None:
        for slot in set(slots):
            _COUNTER.pack_into(self._map, slot * _COUNTER.size, self.read(slot) + 1)


def slot_of(scope: str) -> int:
    return 0 if scope == EVERYTHING else 1 + zlib.crc32(scope.encode()) % (SLOTS - 1)


def _joined(parts: list[str]) -> str:
    return "\x1f".join(parts)


def _request_id(fields: Mapping[str, Any]) -> list[str] | None:
    identifier = fields.get("id")
    if not isinstance(identifier, list) or not all(isinstance(p, str) for p in identifier):
        return None
    return identifier


def _enclosing(namespace: list[str]) -> list[str]:
    """The namespace and every namespace around it, up to the root."""
    return [f"namespace:{_joined(namespace[:depth])}" for depth in range(len(namespace) + 1)]


def read_scopes(operation_id: str, fields: Mapping[str, Any]) -> tuple[str, ...]:
    """What the answer to a cached read depends on."""
    identifier = _request_id(fields)
    if identifier is None:
        return (EVERYTHING,)
    if operation_id in ("DescribeTable", "TableExists", "CountTableRows") and identifier:
        return (EVERYTHING, *_enclosing(identifier[:-1]), f"table:{_joined(identifier)}")
    if operation_id == "ListTables":
        return (EVERYTHING, *_enclosing(identifier), f"tables:{_joined(identifier)}")
    if operation_id == "ListNamespaces":
        return (EVERYTHING, *_enclosing(identifier), f"namespaces:{_joined(identifier)}")
    if operation_id == "DescribeNamespace":
        return (EVERYTHING, *_enclosing(identifier))
    return (EVERYTHING,)


def write_scopes(operation_id: str, fields: Mapping[str, Any]) -> tuple[str, ...]:
    """What a write may have changed."""
    identifier = _request_id(fields)
    traits = traits_of(operation_id)
    if not identifier or traits.subject not in (Subject.TABLE, Subject.NAMESPACE):
        return (EVERYTHING,)
    if traits.subject is Subject.NAMESPACE:  # a drop takes the tables inside with it
        return (f"namespace:{_joined(identifier)}", f"namespaces:{_joined(identifier[:-1])}")
    scopes = [f"table:{_joined(identifier)}"]
    if traits.changes_listing:
        scopes.append(f"tables:{_joined(identifier[:-1])}")
    if operation_id == "RenameTable":
        name, target = fields.get("new_table_name"), fields.get("new_namespace_id")
        target = identifier[:-1] if target is None else target
        if not isinstance(name, str) or not isinstance(target, list):
            return (EVERYTHING,)
        scopes += [f"table:{_joined([*target, name])}", f"tables:{_joined(target)}"]
    return tuple(scopes)


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
    table_id: list[str] | None
    stored_at: float
    stamp: Stamp | None
    slots: tuple[int, ...]
    counters: tuple[int, ...]


@dataclass(frozen=True)
class PendingRead:
    """What a read must remember to store its answer safely."""

    key: bytes
    operation_id: str
    table_id: list[str] | None
    slots: tuple[int, ...]
    counters: tuple[int, ...]  # the slots' write counters when the read began
    started_ns: int


class MetadataCache:
    """Answers of read-only metadata operations; all methods run on the event loop thread."""

    def __init__(
        self,
        generations: Generations,
        ttl: float,
        validated_ttl: float,
        max_entries: int,
        stamper: Stamper | None = None,
        events: CacheEvents | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.generations = generations
        self._clock = clock  # seconds, monotonic: tests pass their own
        self.events = events or _Unobserved()
        self.ttl = ttl
        self.validated_ttl = validated_ttl
        self.max_entries = max_entries
        self.stamper = stamper
        self._entries: dict[bytes, _Entry] = {}

    def key(self, operation_id: str, fields: Mapping[str, Any],
            grants: str = "") -> bytes | None:
        """The entry key of a request, or None when its answer is not cached. `grants`, the
        caller's grants as text: an answer given under grants since changed (a shallow
        clone's source no longer readable) is not given again."""
        if operation_id not in CACHED_OPERATIONS or unwatched(operation_id, fields):
            return None
        context = fields.get("context")
        if context:
            fields = {**fields, "context": {
                k: v for k, v in context.items() if k.lower() not in PER_REQUEST_CONTEXT
            }}
        return orjson.dumps((operation_id, fields, grants), option=orjson.OPT_SORT_KEYS,
                            default=str)

    def lookup(self, key: bytes, operation_id: str) -> Any:
        """The cached answer, or MISS."""
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
        if self.generations.snapshot(entry.slots) != entry.counters:
            return "write"
        age = self._clock() - entry.stored_at
        if entry.stamp is None:
            return None if age <= self.ttl else "expired"
        if age > self.validated_ttl:
            return "expired"
        fresh = self.stamper(operation_id, entry.table_id, entry.answer) == entry.stamp
        self.events.cache_validation(operation_id, fresh)
        return None if fresh else "changed"

    def begin(self, key: bytes, operation_id: str, fields: Mapping[str, Any]) -> PendingRead:
        slots = tuple(slot_of(scope) for scope in read_scopes(operation_id, fields))
        counters = self.generations.snapshot(slots)
        return PendingRead(key, operation_id, _request_id(fields), slots, counters,
                           time.time_ns())

    def store(self, pending: PendingRead, answer: Any) -> None:
        if self.generations.snapshot(pending.slots) != pending.counters:
            return  # a write finished while this read ran: its answer may be older
        stamp = None
        if self.stamper is not None:
            stamp = self._trusted_stamp(pending, answer)
            if stamp is None:
                return  # the storage changed too recently to vouch for this answer
        elif self.ttl <= 0 or pending.operation_id in STAMPED_ONLY:
            return
        if len(self._entries) >= self.max_entries:
            del self._entries[next(iter(self._entries))]
            self.events.cache_eviction("capacity", 1)
        self._entries[pending.key] = _Entry(
            answer, pending.table_id, self._clock(), stamp, pending.slots, pending.counters
        )

    def invalidate(self, operation_id: str, fields: Mapping[str, Any]) -> None:
        """A write finished (or failed): every worker drops what it may have changed."""
        scopes = write_scopes(operation_id, fields)
        self.generations.bump(tuple(slot_of(scope) for scope in scopes))

    def _trusted_stamp(self, pending: PendingRead, answer: Any) -> Stamp | None:
        """The storage stamp, if the storage last changed well before the read began."""
        stamp = self.stamper(pending.operation_id, pending.table_id, answer)
        if stamp is None or newest_change(stamp) >= pending.started_ns - CLOCK_MARGIN_NS:
            return None
        return stamp


def unwatched(operation_id: str, fields: Mapping[str, Any]) -> bool:
    """Whether a request's answer depends on what no stamp watches (not cached: see the
    module's docstring): a tag, a branch other than main, a TableExists's version."""
    if fields.get("tag") is not None or fields.get("branch") not in (None, MAIN_BRANCH):
        return True
    return operation_id == "TableExists" and fields.get("version") is not None


def newest_change(stamp: Stamp) -> int:
    return max((time_ns for time_ns in stamp if time_ns is not None), default=0)
