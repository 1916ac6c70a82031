"""The properties every REST catalog backend (Unity Catalog, Iceberg REST) reads, parsed and
validated once; each backend's settings class (`backends.unity.settings`,
`backends.iceberg.settings`) extends them. The client settings keep their old keys
(`connect_timeout`, `read_timeout`, `max_retries`, in the same units) as deprecated aliases."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from backends.core.settings import (
    Alias,
    BackendSettings,
    connect_timeout_ms,
    max_retries,
    read_timeout_ms,
    root_setting,
    setting,
    storage_settings,
)


def endpoint_setting(doc: str) -> Any:
    return setting("endpoint", doc=doc, required=True)


def read_timeout_setting(default: int) -> Any:
    return read_timeout_ms(default, Alias("read_timeout", int))


@dataclass(frozen=True, kw_only=True)
class RestCatalogSettings(BackendSettings):
    """What every REST catalog backend reads; a backend redeclares a field to change its
    default or documentation."""

    endpoint: str = endpoint_setting("The catalog's URL.")
    auth_token: str | None = setting(
        "auth_token", None, "Bearer token sent as `Authorization: Bearer <token>` on every call.",
        secret=True,
    )
    root: str | None = root_setting(None)
    connect_timeout_ms: int = connect_timeout_ms(10_000, Alias("connect_timeout", int))
    read_timeout_ms: int = read_timeout_setting(30_000)
    max_retries: int = max_retries(3, Alias("max_retries", int))
    forward_caller_token: bool = setting(
        "forward_caller_token", False, "Send the caller's bearer token (the request's "
        "`identity.auth_token`, e.g. from the adapter's `auth_mode: forward`) to the catalog "
        "instead of the configured credentials; requests without one use the configured ones.",
    )
    storage: Mapping[str, str] = storage_settings()
