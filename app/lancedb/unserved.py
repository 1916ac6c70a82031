"""The calls of LanceDB's remote client this server does not serve, and why: each is answered
406 (code 0) naming the call and the reason, where a bare "no route" would leave the user
guessing. Their paths are LanceDB's own (not in rest.yaml).
"""

from __future__ import annotations

import re

# (path pattern below /v1/, what the client calls it, why it is not served)
_UNSERVED: tuple[tuple[str, str, str], ...] = (
    (r"table/[^/]+/page_cache/prewarm/?", "prewarm_data",
     "Lance keeps no page cache of a table's data to warm here (embedded LanceDB refuses "
     "prewarm_data too); prewarm_index loads an index"),
    (r"table/[^/]+/(flush_lsm|compact_lsm|get_lsm_stats|set_lsm_write_spec|"
     r"unset_lsm_write_spec|get_lsm_write_spec)/?", "the LSM write calls",
     "LanceDB Cloud's LSM write path is not part of the Lance REST namespace"),
    (r"table/[^/]+/function_errors/?", "function_errors",
     "this server runs no user functions"),
    (r"table/[^/]+/multipart_write/(create|complete|abort)/?", "multipart writes",
     "this server advertises a LanceDB server version without them"),
    (r"table/[^/]+/(fetch_blobs|blobs)/?.*", "blob fetches",
     "this server advertises a LanceDB server version without them"),
    (r"namespace/[^/]+/(view|secret|function)/list/?", "listing views, secrets or functions",
     "this server holds only namespaces and tables"),
    (r"namespace/[^/]+/materialized_view/list/?|materialized_view/[^/]+/drop/?",
     "listing and dropping materialized views",
     "no backend here keeps materialized views (CreateMaterializedView answers code 0)"),
    (r"(functions|jobs)/.*", "functions and jobs", "this server runs no user functions or jobs"),
)
_PATTERNS = tuple((re.compile(f"/v1/(?:{pattern})"), call, why) for pattern, call, why in _UNSERVED)


def unserved_reason(path: str) -> str | None:
    """Why the LanceDB call at `path` (below the root path) is not served, or None if it is
    not one of those calls."""
    for pattern, call, why in _PATTERNS:
        if pattern.fullmatch(path):
            return f"LanceDB's {call} is not served here: {why}"
    return None
