"""Bounded memories of the most recently used entries: `keep_recent` puts an entry in an
`OrderedDict` as the most recent and forgets the least recent beyond a capacity. The caller
holds whatever lock guards the dictionary."""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def keep_recent(entries: OrderedDict[K, V], key: K, value: V, capacity: int) -> None:
    """`entries[key] = value` as the most recent entry, at most `capacity` kept."""
    entries[key] = value
    entries.move_to_end(key)
    while len(entries) > capacity:
        entries.popitem(last=False)
