"""How many malloc arenas glibc gives a server process (the setting `malloc_arenas`).

glibc gives each thread that allocates under contention an arena of its own, up to eight per
CPU, and hands little of a freed arena back to the system. A worker's backend threads and
Lance's own threads allocate and free Arrow and Lance buffers of every size, so with the
default its resident memory kept growing under a steady load (bench/README.md, Soak: about
8 MiB a minute with Lance's caches bounded small); with two arenas it levelled off. Set with
mallopt's M_ARENA_MAX as `lance-adapter serve` starts (the one worker, or the supervisor),
and given to the workers a supervisor starts as `MALLOC_ARENA_MAX` (`app.workers`), which
glibc reads before anything allocates (a mallopt there, after the imports, held less well:
bench/README.md, Soak, run D); 0 keeps glibc's default. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

logger = logging.getLogger("lance_adapter")
_M_ARENA_MAX = -8  # glibc's malloc.h


def limit_malloc_arenas(count: int) -> bool:
    """Whether glibc took `count` as its arena limit (False: not glibc, or 0 asked)."""
    if count <= 0:
        return False
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):
        mallopt = None
    if mallopt is None:
        logger.info("malloc_arenas is not applied: the C library is not glibc")
        return False
    return bool(mallopt(_M_ARENA_MAX, count))
