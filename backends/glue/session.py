"""Glue's settings, and the boto3 session and clients built from them.

Credentials, in order of precedence: `assume_role_arn` (the base credentials for STS are the
static ones if given, else the default chain); static keys (+ `session_token`); otherwise
botocore's default provider chain.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import boto3
import botocore.session
from botocore.config import Config
from botocore.credentials import (
    CredentialProvider,
    CredentialResolver,
    DeferredRefreshableCredentials,
    RefreshableCredentials,
)
from botocore.exceptions import NoRegionError

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


def aws_client(
    session: boto3.Session,
    service: Literal["glue", "sts"],
    settings: GlueSettings,
    region: str | None,
) -> Any:
    """A bounded Glue or STS client, at the configured endpoint when there is one."""
    endpoint = settings.endpoint if service == "glue" else settings.sts_endpoint
    try:
        return session.client(
            service, endpoint_url=endpoint, config=settings.client_config(region)
        )
    except (NoRegionError, ValueError) as error:
        raise ConfigurationError(f"cannot build the {service} client: {error}") from error


def session_region(settings: GlueSettings, session: boto3.Session) -> str:
    region = settings.region or session.region_name
    if not region:
        raise ConfigurationError("no AWS region: set the 'region' property or AWS_REGION")
    return region


def build_session(settings: GlueSettings) -> boto3.Session:
    """Static or session credentials when given, else the default provider chain; signed
    with the assumed role's refreshing credentials when `assume_role_arn` is set."""
    base = boto3.Session(
        aws_access_key_id=settings.access_key_id,
        aws_secret_access_key=settings.secret_access_key,
        aws_session_token=settings.session_token,
        region_name=settings.region,
    )
    if not settings.assume_role_arn:
        return base
    credentials = assume_role_credentials(base, settings)
    core = botocore.session.get_session()
    core.register_component(
        "credential_provider", CredentialResolver([_FixedCredentialProvider(credentials)])
    )
    return boto3.Session(botocore_session=core, region_name=settings.region or base.region_name)


def assume_role_credentials(
    base: boto3.Session, settings: GlueSettings
) -> RefreshableCredentials:
    """Credentials of `assume_role_arn`, fetched again through STS before they expire."""
    request = {
        "RoleArn": settings.assume_role_arn,
        "RoleSessionName": settings.assume_role_session_name,
        "DurationSeconds": settings.assume_role_timeout_sec,
    }
    if settings.assume_role_external_id:
        request["ExternalId"] = settings.assume_role_external_id
    region = settings.assume_role_region or settings.region or base.region_name
    sts = aws_client(base, "sts", settings, region)

    def fetch() -> dict[str, str]:
        credentials = sts.assume_role(**request)["Credentials"]
        return {
            "access_key": credentials["AccessKeyId"],
            "secret_key": credentials["SecretAccessKey"],
            "token": credentials["SessionToken"],
            "expiry_time": credentials["Expiration"].isoformat(),
        }

    # Fetched on first use, so a slow or failing STS surfaces per request (mapped by
    # glue_errors around the Glue call) instead of preventing the adapter from starting.
    return DeferredRefreshableCredentials(refresh_using=fetch, method="assume-role")


class _FixedCredentialProvider(CredentialProvider):
    """Hands botocore one credentials object (here: refreshable assumed-role credentials)."""

    METHOD = "assume-role"

    def __init__(self, credentials: RefreshableCredentials) -> None:
        super().__init__()
        self._credentials = credentials

    def load(self) -> RefreshableCredentials:
        return self._credentials
