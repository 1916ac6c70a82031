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
from backends.hive.client import Kerberos, MetastoreAddress, Timeouts

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
    kerberos: bool = setting(
        "kerberos", False, "Authenticate to the metastore with Kerberos (SASL/GSSAPI), as a "
        "metastore with `hive.metastore.sasl.enabled` requires. Needs the `kerberos` extra.",
        aliases=(Alias("hive.kerberos-authentication"),),
    )
    kerberos_service_name: str = setting(
        "kerberos.service-name", "hive", "The first part of the metastore's service principal "
        "(`<service-name>/<host of the uri>@<realm>`, as in `hive.metastore.kerberos.principal`).",
        aliases=(Alias("hive.kerberos-service-name"),),
    )
    kerberos_principal: str | None = setting(
        "kerberos.principal", None, "The server's own principal (e.g. `lance-adapter@CORP.EXAMPLE`)"
        ". Unset: the one the client keytab (`KRB5_CLIENT_KTNAME`) or the ticket cache holds "
        "first.",
    )
    storage: Mapping[str, str] = storage_settings()

    def check(self) -> None:
        if self.kerberos_principal and not self.kerberos:
            raise ConfigurationError("property 'kerberos.principal' needs 'kerberos=true'")
        if not self.uri:
            raise ConfigurationError("property 'uri' must name at least one metastore")
        self.addresses()

    def kerberos_auth(self) -> Kerberos | None:
        """How connections authenticate: None for a metastore without SASL."""
        if not self.kerberos:
            return None
        return Kerberos(self.kerberos_service_name, self.kerberos_principal)

    def addresses(self) -> list[MetastoreAddress]:
        return [MetastoreAddress.parse(uri) for uri in self.uri]

    @property
    def timeouts(self) -> Timeouts:
        return Timeouts(self.connect_timeout_ms, self.read_timeout_ms)
