"""Glue's settings: every property the Glue backend reads, parsed and checked once
(`GlueSettings`); the boto3 session and clients built from them are `backends.glue.session`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from botocore.config import Config

from backends.core.settings import (
    Alias,
    BackendSettings,
    ConfigurationError,
    connect_timeout_ms,
    max_retries,
    pool_size,
    read_timeout_ms,
    root_setting,
    setting,
    storage_settings,
)

HIERARCHY_CATALOGS = "catalogs"
HIERARCHY_DATABASES = "databases"
DEFAULT_SESSION_NAME = "lance-namespace-adapter"
MAX_ROLE_DURATION_SEC = 43200


@dataclass(frozen=True, kw_only=True)
class GlueSettings(BackendSettings):
    """Every property the Glue backend reads, parsed and checked once."""

    catalog_id: str | None = setting(
        "catalog_id", None, "Catalog ID of the starting (root) catalog, e.g. `123456789012` or "
        "a child catalog `123456789012:sales`. Unset: Glue's default catalog of the caller; in "
        "`hierarchy=catalogs` the account ID is read once from STS `GetCallerIdentity` when a "
        "child catalog ID has to be built.",
    )
    endpoint: str | None = setting(
        "endpoint", None, "Custom Glue endpoint for API-compatible metastores, e.g. "
        "`http://127.0.0.1:5000`. Unset: AWS.",
    )
    sts_endpoint: str | None = setting(
        "sts_endpoint", None, "Custom STS endpoint (AssumeRole, GetCallerIdentity). Unset: AWS.",
    )
    region: str | None = setting(
        "region", None, "Region of all Glue calls. Unset: `AWS_REGION`, `AWS_DEFAULT_REGION` or "
        "the config file; no region anywhere is a configuration error.",
    )
    hierarchy: str = setting(
        "hierarchy", HIERARCHY_CATALOGS, "`catalogs`: glue.md's catalog hierarchy. "
        "`databases`: single-catalog mode, the namespaces are the databases of `catalog_id` "
        "only and no catalog API is called (for Glue-compatible metastores without catalogs).",
        choices=(HIERARCHY_CATALOGS, HIERARCHY_DATABASES),
    )
    root: str | None = root_setting(
        None, "Storage root of tables declared without a location: "
        "`{root}/{namespace parts…}/{table}.lance`, or `{LocationUri}/{table}.lance` in a "
        "database with a `LocationUri`. Unset: the current directory.",
    )
    storage: Mapping[str, str] = storage_settings()
    access_key_id: str | None = setting(
        "access_key_id", None, "Static credentials, with `secret_access_key`.", secret=True
    )
    secret_access_key: str | None = setting(
        "secret_access_key", None, "Static credentials, with `access_key_id`.", secret=True
    )
    session_token: str | None = setting(
        "session_token", None, "Session token of temporary credentials (needs the two keys).",
        secret=True,
    )
    assume_role_arn: str | None = setting(
        "assume_role_arn", None, "Role to assume through STS; Glue calls are signed with the "
        "role's credentials, fetched on first use and again before they expire.",
    )
    assume_role_region: str | None = setting(
        "assume_role_region", None, "Region of the STS client. Unset: `region`."
    )
    assume_role_external_id: str | None = setting(
        "assume_role_external_id", None, "`ExternalId` of the AssumeRole call."
    )
    assume_role_session_name: str = setting(
        "assume_role_session_name", DEFAULT_SESSION_NAME, "`RoleSessionName`."
    )
    assume_role_timeout_sec: int = setting(
        "assume_role_timeout_sec", 3600, "`DurationSeconds` of the role session, up to "
        f"{MAX_ROLE_DURATION_SEC} (botocore refreshes 15 minutes ahead, so with 900 every call "
        "gets fresh credentials).", unit="s", minimum=900,
    )
    connect_timeout_ms: int = connect_timeout_ms(
        5000, Alias.seconds("client.connect_timeout_sec")
    )
    read_timeout_ms: int = read_timeout_ms(30000, Alias.seconds("client.read_timeout_sec"))
    max_retries: int = max_retries(2, Alias.attempts("client.max_attempts"))
    pool_size: int = pool_size(10, Alias("client.max_pool_connections", int))

    def check(self) -> None:
        if bool(self.access_key_id) != bool(self.secret_access_key):
            raise ConfigurationError("access_key_id and secret_access_key must be set together")
        if self.session_token and not self.access_key_id:
            raise ConfigurationError("session_token needs access_key_id and secret_access_key")
        if self.assume_role_timeout_sec > MAX_ROLE_DURATION_SEC:
            raise ConfigurationError(
                f"property 'assume_role_timeout_sec' must be at most {MAX_ROLE_DURATION_SEC}, "
                f"got {self.assume_role_timeout_sec}"
            )

    @property
    def catalogs_enabled(self) -> bool:
        return self.hierarchy == HIERARCHY_CATALOGS

    def client_config(self, region: str | None) -> Config:
        """Bounded botocore clients: timeouts, `standard` retries and the pool size."""
        return Config(
            region_name=region,
            connect_timeout=self.connect_timeout_ms / 1000,
            read_timeout=self.read_timeout_ms / 1000,
            retries={"total_max_attempts": self.max_retries + 1, "mode": "standard"},
            max_pool_connections=self.pool_size,
        )
