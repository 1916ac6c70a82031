"""The properties of the Hive backends, parsed and validated once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from backends.core.settings import (
    Alias,
    BackendSettings,
    ConfigurationError,
    connect_timeout_ms,
    pool_size,
    read_timeout_ms,
    root_setting,
    setting,
    storage_settings,
)
from backends.hive.client import MetastoreAddress, Timeouts

DEFAULT_URI = "thrift://localhost:9083"


@dataclass(frozen=True, kw_only=True)
class HiveSettings(BackendSettings):
    uri: tuple[str, ...] = setting(
        "uri", (DEFAULT_URI,), "Metastore Thrift URI; several, comma-separated, are tried in "
        "order for each new connection, starting with the one that last worked (failover).",
    )
    root: str | None = root_setting(
        None, "Storage root of the lakehouse; default locations of databases, catalogs and "
        "tables are under it. A relative path is made absolute. Unset: the working directory.",
    )
    owner: str | None = setting(
        "owner", None, "Owner recorded on the databases and tables the backend creates (unless "
        "`database.owner` is given). Unset: the OS user.",
    )
    pool_size: int = pool_size(3)
    connect_timeout_ms: int = connect_timeout_ms(10_000, Alias.seconds("client.connect-timeout"))
    read_timeout_ms: int = read_timeout_ms(60_000, Alias.seconds("client.read-timeout"))
    storage: Mapping[str, str] = storage_settings()

    def check(self) -> None:
        if not self.uri:
            raise ConfigurationError("property 'uri' must name at least one metastore")
        self.addresses()

    def addresses(self) -> list[MetastoreAddress]:
        return [MetastoreAddress.parse(uri) for uri in self.uri]

    @property
    def timeouts(self) -> Timeouts:
        return Timeouts(self.connect_timeout_ms, self.read_timeout_ms)
