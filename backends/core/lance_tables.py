"""What makes something a Lance table: the marker a catalog entry carries (`table_type=lance`),
and Lance data at a location, opened or required; and the marker of a table declared without
data (lance-namespace-impls' `empty_table=true`), which the first write of rows settles."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import lance
from lance import LanceDataset
from lance_namespace import InvalidInputError

TABLE_TYPE_KEY = "table_type"
LANCE_TABLE_TYPE = "lance"
EXTERNAL_TABLE = "EXTERNAL_TABLE"
EMPTY_TABLE_KEY = "empty_table"


def has_lance_table_type(parameters: Mapping[str, Any] | None) -> bool:
    """True when the catalog parameters hold `table_type=lance` (key and value in any case)."""
    for key, value in (parameters or {}).items():
        if key.lower() == TABLE_TYPE_KEY:
            return isinstance(value, str) and value.lower() == LANCE_TABLE_TYPE
    return False


def settled_parameters(parameters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The catalog parameters of a table that now has data, when its `empty_table` flag (key
    and value in any case) still says `true`; None when nothing is to change."""
    stale = [
        key for key, value in (parameters or {}).items()
        if key.lower() == EMPTY_TABLE_KEY and str(value).lower() == "true"
    ]
    if not stale:
        return None
    return {**(parameters or {}), **dict.fromkeys(stale, "false")}


def open_lance_table(location: str, options: Mapping[str, str] | None) -> LanceDataset | None:
    """The Lance table at `location`, or None when there is none (yet)."""
    try:
        return lance.dataset(location, storage_options=dict(options or {}) or None)
    except (OSError, ValueError, RuntimeError):
        return None


def require_lance_table(location: str, options: Mapping[str, str] | None) -> LanceDataset:
    """The Lance table at `location`; RegisterTable adopts existing data, so none is 13."""
    dataset = open_lance_table(location, options)
    if dataset is None:
        raise InvalidInputError(f"no Lance table at {location}")
    return dataset
