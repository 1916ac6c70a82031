"""STS through boto3, the library of the `vending` extra: the client minting calls AssumeRole on.

Only a vendor that mints (`vending.role-arn`) imports this module, through
`backends.core.extras.VENDING`, so a server that does not mint runs without boto3.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoRegionError
from lance_namespace import ServiceUnavailableError

from backends.core.settings import ConfigurationError
from backends.vending.settings import VendingSettings

_STS_TIMEOUT_S = 10


class StsClient:
    """STS signed with the storage's own keys when given, else the default provider chain;
    its failures are one namespace error. Parameter validation is left to STS itself, which
    enforces the duration's bounds."""

    def __init__(
        self, settings: VendingSettings, storage: Mapping[str, str], region: str | None
    ) -> None:
        session = boto3.Session(
            aws_access_key_id=storage.get("aws_access_key_id"),
            aws_secret_access_key=storage.get("aws_secret_access_key"),
            aws_session_token=storage.get("aws_session_token"),
            region_name=region,
        )
        config = Config(connect_timeout=_STS_TIMEOUT_S, read_timeout=_STS_TIMEOUT_S,
                        retries={"mode": "standard"}, parameter_validation=False)
        try:
            self._client = session.client(
                "sts", endpoint_url=settings.sts_endpoint, config=config)
        except (NoRegionError, ValueError) as error:
            raise ConfigurationError(f"cannot build the STS client of vending: {error}") from error

    def assume_role(self, **request: Any) -> Mapping[str, Any]:
        try:
            return self._client.assume_role(**request)
        except (ClientError, BotoCoreError) as error:
            raise ServiceUnavailableError(f"cannot vend credentials: {_reason(error)}") from None


def _reason(error: Exception) -> str:
    if isinstance(error, ClientError):
        detail = error.response.get("Error", {})
        return f"STS answered {detail.get('Code', 'an error')}"
    return type(error).__name__
