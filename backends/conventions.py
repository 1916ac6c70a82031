"""Conventions the catalog backends share: how a catalog marks a Lance table, where the
storage root is (made absolute), how locations are joined below it, and how a Lance table at
a location is opened or required. (Request modes are parsed in `backends.modes`.)"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import lance
from lance import LanceDataset
from lance_namespace import InvalidInputError

TABLE_TYPE_KEY = "table_type"
LANCE_TABLE_TYPE = "lance"
EXTERNAL_TABLE = "EXTERNAL_TABLE"


def has_lance_table_type(parameters: Mapping[str, Any] | None) -> bool:
    """True when the catalog parameters hold `table_type=lance` (key and value in any case)."""
    for key, value in (parameters or {}).items():
        if key.lower() == TABLE_TYPE_KEY:
            return isinstance(value, str) and value.lower() == LANCE_TABLE_TYPE
    return False


def storage_root(root: str | None) -> str:
    """A storage root without a trailing slash; unset means the working directory and a
    local path is made absolute (a catalog must not resolve it against its own directory)."""
    if not root:
        return os.getcwd()
    if "://" in root:
        return root.rstrip("/")
    return os.path.abspath(os.path.expanduser(root))


def join_location(base: str, *names: str) -> str:
    return "/".join([base.rstrip("/"), *names])


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
