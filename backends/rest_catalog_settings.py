"""The properties of the REST catalog backends (Unity Catalog, Iceberg REST), parsed and
validated once. The client settings keep their old keys (`connect_timeout`, `read_timeout`,
`max_retries`, in the same units) as deprecated aliases."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from backends.properties import ConfigurationError
from backends.settings import (
    Alias,
    BackendSettings,
    connect_timeout_ms,
    max_retries,
    read_timeout_ms,
    root_setting,
    setting,
    storage_settings,
)


def _endpoint(doc: str) -> Any:
    return setting("endpoint", doc=doc, required=True)


def _read_timeout_ms(default: int) -> Any:
    return read_timeout_ms(default, Alias("read_timeout", int))


@dataclass(frozen=True, kw_only=True)
class RestCatalogSettings(BackendSettings):
    """What every REST catalog backend reads; a backend redeclares a field to change its
    default or documentation."""

    endpoint: str = _endpoint("The catalog's URL.")
    auth_token: str | None = setting(
        "auth_token", None, "Bearer token sent as `Authorization: Bearer <token>` on every call.",
        secret=True,
    )
    root: str | None = root_setting(None)
    connect_timeout_ms: int = connect_timeout_ms(10_000, Alias("connect_timeout", int))
    read_timeout_ms: int = _read_timeout_ms(30_000)
    max_retries: int = max_retries(3, Alias("max_retries", int))
    forward_caller_token: bool = setting(
        "forward_caller_token", False, "Send the caller's bearer token (the request's "
        "`identity.auth_token`, e.g. from the adapter's `auth_mode: forward`) to the catalog "
        "instead of the configured credentials; requests without one use the configured ones.",
    )
    storage: Mapping[str, str] = storage_settings()


@dataclass(frozen=True, kw_only=True)
class UnitySettings(RestCatalogSettings):
    endpoint: str = _endpoint(
        "Unity Catalog server, e.g. `http://localhost:8080`. `/api/2.1/unity-catalog` is "
        "appended unless the endpoint already ends with it."
    )
    root: str | None = root_setting(
        "/tmp/lance", "Storage root for new tables: a table without an explicit location goes "
        "to `{root}/{catalog}/{schema}/{table}`.",
    )
    read_timeout_ms: int = _read_timeout_ms(300_000)


@dataclass(frozen=True, kw_only=True)
class IcebergSettings(RestCatalogSettings):
    endpoint: str = _endpoint(
        "Catalog URL, e.g. `http://localhost:8181`; must start with `http://` or `https://`. "
        "API paths are `{endpoint}/v1/...`."
    )
    credential: str | None = setting(
        "credential", None, "`client_id:client_secret` for the OAuth2 client-credentials flow "
        "(token from `{endpoint}/v1/oauth/tokens`, scope `catalog`). Use either `auth_token` "
        "or `credential`, not both.",
        secret=True,
    )
    root: str | None = root_setting(
        None, "Storage root for new tables: `{root}/{warehouse}/{namespace…}/{table}`. "
        "Unset: the working directory.",
    )
    warehouses: tuple[str, ...] = setting(
        "warehouses", (), "Comma-separated warehouses that ListAllTables covers (the protocol "
        "cannot list warehouses).",
    )

    def check(self) -> None:
        if not self.endpoint.startswith(("http://", "https://")):
            raise ConfigurationError("endpoint must start with http:// or https://")
        if self.auth_token and self.credential:
            raise ConfigurationError("set only one of auth_token and credential")
