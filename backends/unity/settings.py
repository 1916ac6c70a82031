"""The properties of the unity backend."""

from __future__ import annotations

from dataclasses import dataclass

from backends.core.settings import root_setting
from backends.rest_catalog.settings import (
    RestCatalogSettings,
    endpoint_setting,
    read_timeout_setting,
)


@dataclass(frozen=True, kw_only=True)
class UnitySettings(RestCatalogSettings):
    endpoint: str = endpoint_setting(
        "Unity Catalog server, e.g. `http://localhost:8080`. `/api/2.1/unity-catalog` is "
        "appended unless the endpoint already ends with it."
    )
    root: str | None = root_setting(
        "/tmp/lance", "Storage root for new tables: a table without an explicit location goes "
        "to `{root}/{catalog}/{schema}/{table}`.",
    )
    read_timeout_ms: int = read_timeout_setting(300_000)
