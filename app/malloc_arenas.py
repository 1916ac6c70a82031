"""glibc's malloc in the server's processes: how many arenas it gives a process (the setting
`malloc_arenas`), and the memory freed since that each worker hands back to the system
(`MemoryTrimmer`, every `malloc_trim_interval` seconds).

glibc gives each thread that allocates under contention an arena of its own, up to eight per
CPU, and hands little of a freed arena back to the system. A worker's backend threads and
Lance's own threads allocate and free Arrow and Lance buffers of every size, so with the
default its resident memory kept growing under a steady load (bench/README.md, Soak: about
8 MiB a minute with Lance's caches bounded small); with two arenas it levelled off. Set with
mallopt's M_ARENA_MAX as `lance-adapter serve` starts (the one worker, or the supervisor),
and given to the workers a supervisor starts as `MALLOC_ARENA_MAX` (`app.workers`), which
glibc reads before anything allocates (a mallopt there, after the imports, held less well:
bench/README.md, Soak, run D); 0 keeps glibc's default. Elsewhere than glibc it does nothing.

Even with two arenas, glibc keeps what a large write, a compaction or a scan freed in the
middle of its heap, so a worker's resident memory follows the largest work it has done. A
table that grows makes each compaction of it larger: in-process, 4,800 appends with a
compaction every 600 grew a process by 19 MiB, by 3 MiB with a `malloc_trim` after each
compaction. A worker's trimmer calls it every `malloc_trim_interval` seconds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from collections.abc import Callable

from app.periodic import PeriodicThread

logger = logging.getLogger("lance_adapter")
_M_ARENA_MAX = -8  # glibc's malloc.h


def _glibc_function(name: str) -> Callable[..., int] | None:
    """glibc's function `name`; None where the C library is not glibc."""
    library = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(library), name) if library else None
    except (OSError, AttributeError):
        return None


def limit_malloc_arenas(count: int) -> bool:
    """Whether glibc took `count` as its arena limit (False: not glibc, or 0 asked)."""
    if count <= 0:
        return False
    mallopt = _glibc_function("mallopt")
    if mallopt is None:
        logger.info("malloc_arenas is not applied: the C library is not glibc")
        return False
    return bool(mallopt(_M_ARENA_MAX, count))


class MemoryTrimmer(PeriodicThread):
    """A thread handing the memory malloc holds free back to the system (`malloc_trim`) every
    `interval` seconds, until stopped; nothing where the C library is not glibc or the
    interval is 0."""

    name = "malloc-trim"

    def __init__(self, interval: float) -> None:
        super().__init__(interval)
        self.trims = 0
        self._trim = _glibc_function("malloc_trim") if interval > 0 else None

    def active(self) -> bool:
        return self._trim is not None

    def tick(self) -> None:
        self.trim()

    def trim(self) -> bool:
        """Trim now; whether malloc gave memory back."""
        if self._trim is None:
            return False
        self.trims += 1
        return bool(self._trim(0))
