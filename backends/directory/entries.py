"""The catalog entries of a local `dir` root's tables (what `describe_table_entry` answers),
remembered while nothing they are read from changed: the root's manifest at the same version
(checked as `backends.tables.latest` checks a table's), or still absent, and the root
directory unmodified (a root table's `<name>.lance` directory, which the native lookup also
finds by listing).

Every data-path request locates its table first. The native lookup reads the manifest table
each time (0.7 ms, more as the manifest holds more tables); the check costs four `stat`
calls. Every change the server makes to an entry (create, declare, register, deregister,
drop, rename) commits a manifest version, and so does any other writer of the manifest: a
remembered entry is never staler than the manifest. Lookups that fail are not remembered.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path

from lance_namespace import DescribeTableResponse

from backends.core.recent import keep_recent
from backends.directory.orphans import MANIFEST_DIRECTORY
from backends.tables.latest import LatestVersions


class RememberedEntries:
    """The entries of the tables under a local `root`, at most `capacity` of them (the least
    recently asked forgotten first); safe to share between threads."""

    def __init__(self, root: Path, latest: LatestVersions, capacity: int = 4096) -> None:
        self._root = root
        self._manifest = str(root / MANIFEST_DIRECTORY)
        self._latest = latest
        self._capacity = capacity
        self._entries: OrderedDict[tuple[str, ...], tuple[Hashable, DescribeTableResponse]] = (
            OrderedDict())
        self._lock = threading.Lock()

    def entry(
        self, table_id: list[str], look_up: Callable[[], DescribeTableResponse]
    ) -> DescribeTableResponse:
        """The table's entry: remembered, or `look_up`'s (remembered if nothing changed)."""
        state = self._state()  # before the lookup: a change meanwhile makes it stale
        if state is None:
            return look_up()
        key = tuple(table_id)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
        if hit is not None and hit[0] == state:
            return hit[1].model_copy(deep=True)
        found = look_up()
        with self._lock:
            keep_recent(self._entries, key, (state, found.model_copy(deep=True)),
                        self._capacity)
        return found

    def remembered(self, table_id: list[str]) -> DescribeTableResponse | None:
        """The table's entry if it is remembered and still current, without looking it up
        (a few `stat` calls: the metadata cache asks on the event loop)."""
        state = self._state()
        with self._lock:
            hit = self._entries.get(tuple(table_id))
        return None if hit is None or state is None or hit[0] != state else hit[1]

    def _state(self) -> Hashable | None:
        manifest: Hashable = "no manifest yet"  # root tables found by their directories alone
        if os.path.lexists(self._manifest):
            manifest = self._latest.state(self._manifest)
            if manifest is None:  # there, but not read: nothing is remembered
                return None
        try:
            return manifest, os.stat(self._root).st_mtime_ns
        except OSError:
            return None
