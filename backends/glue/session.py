"""The boto3 session and clients built from Glue's settings (`backends.glue.settings`).

Credentials, in order of precedence: `assume_role_arn` (the base credentials for STS are the
static ones if given, else the default chain); static keys (+ `session_token`); otherwise
botocore's default provider chain.
"""

from __future__ import annotations

from typing import Any, Literal

import boto3
import botocore.session
from botocore.credentials import (
    CredentialProvider,
    CredentialResolver,
    DeferredRefreshableCredentials,
    RefreshableCredentials,
)
from botocore.exceptions import NoRegionError

from backends.core.settings import ConfigurationError
from backends.glue.settings import GlueSettings


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
