"""What pylance's native `DirectoryNamespace` table operations ignore without a word, so that
a request asking for it is served by the generic operation (`MetadataNamespace`'s, pylance on
the opened dataset) instead: a branch (natively every operation acts on main), a field of this
server's extensions (`backends.core.extensions`), a vector query's offset (natively taken
inside its k nearest), a query's aliased columns (natively in no set order) and a query of
several vectors (natively all but the first are ignored).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from backends.core.extensions import extension_fields
from backends.tables.reads import query_vectors


def natively_ignored(request: Any) -> bool:
    """Whether the native operation would ignore part of `request`."""
    if getattr(request, "branch", None) or extension_fields(request):
        return True
    query = getattr(request, "query", None)
    if isinstance(query, BaseModel):  # ExplainTableQueryPlan's inner query
        if extension_fields(query):
            return True
    else:
        query = request
    if not hasattr(query, "vector"):
        return False
    if getattr(query.columns, "column_aliases", None):
        return True
    vectors = query_vectors(query)
    return len(vectors) > 1 or (bool(query.offset) and bool(vectors))
