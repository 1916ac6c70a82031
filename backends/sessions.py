"""The Lance session a backend opens its tables with, and the operation that relies on it.

One `lance.Session` per worker process holds Lance's index and metadata caches for every table
the worker opens (`app.config.lance_session` sizes it). Without one, each request would open
its dataset with a cache of its own and load a vector index again for every search. The cache
never makes an answer stale: every request still resolves the table's latest version from
storage, and cached entries are keyed by the files they were read from.

PrewarmTableIndex (LanceDB's `prewarm_index`) loads an index into that session ahead of the
first search.

A session is renewed (`renew_lance_session`) once the versions its worker opened have filled
its metadata cache: Lance's caches admit a new entry only when it is read more often than the
one it would evict, so once a busy table's past versions fill the cache, the entries of its
new versions are kept out and every request reads them again (bench/README.md, Soak: the
later minutes at 0.62-0.75x the first, 1.06x with a fresh session each minute). The indexes
prewarmed are loaded into the new session before it serves.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

import lance

from backends.core.access import Reader, every_table
from backends.core.extensions import PrewarmTableIndexRequest, PrewarmTableIndexResponse
from backends.core.external import ExternalLocation
from backends.core.recent import keep_recent
from backends.tables import indexes
from backends.tables.datasets import TableLocation, open_dataset
from backends.tables.latest import LatestVersions

if TYPE_CHECKING:
    from lance import Session

    from backends.layouts import TableLayout

# What one version a worker opens adds to Lance's metadata cache (its manifest, its new data
# and deletion files' metadata), measured: about 45 KiB.
VERSION_CACHE_BYTES = 45 * 1024
# An index prewarmed: its table's location and storage options, and its name.
_Prewarmed = tuple[str, tuple[tuple[str, str], ...], str]
# The most prewarmed indexes loaded again into a renewed session (the latest prewarmed kept).
MOST_PREWARMED = 256


class SessionTables:
    """The session part of `MetadataNamespace` (which defines `open`)."""

    lance_session: Session | None = None
    latest_versions: LatestVersions | None = None
    open: Any
    locate: Any
    table_layout: Callable[[], TableLayout]
    # The indexes prewarmed, for a renewal (made by `use_lance_session`).
    _prewarmed: _PrewarmedIndexes | None = None
    # Where the operator lets tables of given namespaces keep data (`use_external_locations`).
    external_locations: tuple[ExternalLocation, ...] = ()
    # Whether the caller of the request being served may read a table (`reading_as`).
    _reader: Reader = staticmethod(every_table)

    def reading_as(self, reader: Reader) -> Self:
        """A view of this backend (sharing everything) that opens tables for a caller who
        may read what `reader` says: a shallow clone's sources are checked against it."""
        view = object.__new__(type(self))  # not `copy`: a plug-in's adapter has `__getattr__`
        view.__dict__.update(self.__dict__, _reader=reader)
        return view

    def use_external_locations(self, external: tuple[ExternalLocation, ...]) -> None:
        """Read a table's extra bases recorded in `external` as its own (the guard calls it
        once, with the locations it lets tables register in)."""
        self.external_locations = tuple(external)

    def use_lance_session(self, session: Session | None) -> None:
        """Open every table with `session` from now on, and remember the latest version of
        each local one (`backends.tables.latest`); the server calls it once, before serving."""
        self.lance_session = session
        self.latest_versions = None if session is None else LatestVersions()
        if self._prewarmed is None:
            self._prewarmed = _PrewarmedIndexes()

    def opened_table(
        self, table_id: list[str], location: str, storage_options: dict[str, str] | None = None,
        properties: dict[str, str] | None = None,
    ) -> TableLocation:
        """The table `table_id` at `location`, opened with this worker's session."""
        return TableLocation(
            id=list(table_id), location=location, storage_options=dict(storage_options or {}),
            properties=dict(properties or {}), session=self.lance_session,
            latest=self.latest_versions, may_read=self._reader, key=self.table_layout().key,
            external=self.external_locations,
        )

    def renew_lance_session(
        self, new_session: Callable[[], Session], metadata_cache_bytes: int
    ) -> bool:
        """Open every table with a new session from `new_session` when the versions opened
        since this one began would have filled a metadata cache of `metadata_cache_bytes`
        (see the module's docstring); whether it was renewed. The indexes prewarmed are
        loaded into the new one first; requests in flight finish with the old one."""
        latest = self.latest_versions
        if latest is None or latest.versions_seen * VERSION_CACHE_BYTES < metadata_cache_bytes:
            return False
        session = new_session()
        if self._prewarmed is not None:
            self._prewarmed.load_into(session)
        self.use_lance_session(session)
        return True

    def prewarm_table_index(self, request: PrewarmTableIndexRequest) -> PrewarmTableIndexResponse:
        table = self.locate(request)
        indexes.prewarm_index(open_dataset(table), request.index_name)
        if self._prewarmed is not None:
            self._prewarmed.remember(table, str(request.index_name))
        return PrewarmTableIndexResponse()


class _PrewarmedIndexes:
    """The indexes prewarmed in one worker (the latest `MOST_PREWARMED`), by their table's
    location and storage options and their name; safe to share between threads."""

    def __init__(self) -> None:
        self._indexes: OrderedDict[_Prewarmed, None] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, table: TableLocation, index_name: str) -> None:
        key = (table.location, tuple(sorted(table.storage_options.items())), index_name)
        with self._lock:
            keep_recent(self._indexes, key, None, MOST_PREWARMED)

    def load_into(self, session: Session) -> None:
        """Load each into `session`; one whose table was dropped or changed since is no
        longer prewarmed."""
        with self._lock:
            prewarmed = list(self._indexes)
        for key in prewarmed:
            location, options, index_name = key
            try:
                indexes.prewarm_index(lance.dataset(
                    location, storage_options=dict(options) or None, session=session),
                    index_name)
            except Exception:
                with self._lock:
                    self._indexes.pop(key, None)
