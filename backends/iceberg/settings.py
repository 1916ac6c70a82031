"""The properties of the iceberg backend."""

from __future__ import annotations

from dataclasses import dataclass

from backends.core.settings import ConfigurationError, root_setting, setting
from backends.rest_catalog.settings import RestCatalogSettings, endpoint_setting


@dataclass(frozen=True, kw_only=True)
class IcebergSettings(RestCatalogSettings):
    endpoint: str = endpoint_setting(
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
