"""The `vending.*` properties: opt-in credential vending, read by every backend alike."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from backends.core.settings import BackendSettings, ConfigurationError, setting

VENDING_PREFIX = "vending."
READ = "read"
READ_WRITE = "read-write"
ACCESS_LEVELS = (READ, READ_WRITE)
IDENTITY_ACCESS_PREFIX = "vending.access."
DEFAULT_SESSION_NAME = "lance-namespace-adapter-vend"


@dataclass(frozen=True, kw_only=True)
class VendingSettings(BackendSettings):
    """What `vending.*` turns on; the rest of a backend's properties are not read here."""

    enabled: bool = setting(
        "vending.enabled", False, "Answer DescribeTable and DeclareTable of tables on S3 with "
        "temporary credentials scoped to the table, when the request asks "
        "(`vend_credentials: true`; see `vending.unasked`).",
    )
    unasked: bool = setting(
        "vending.unasked", False, "Also vend when a request leaves `vend_credentials` unset, "
        "as pylance 14 and LanceDB do; off, only a request that asks "
        "(`vend_credentials: true`) gets credentials.",
    )
    role_arn: str | None = setting(
        "vending.role-arn", None, "The IAM role to assume; it must allow the S3 actions on the "
        "tables' bucket. Required when vending is enabled, except on `unity` and `iceberg`, "
        "which relay the catalog's own credentials first (and mint only with a role).",
    )
    duration_ms: int = setting(
        "vending.duration-ms", 3_600_000, "How long vended credentials live (`DurationSeconds` "
        "of AssumeRole). AWS accepts 900 s up to the role's maximum session duration.",
        unit="ms", minimum=1000,
    )
    access: str = setting(
        "vending.access", READ, "The access a caller gets by default.", choices=ACCESS_LEVELS,
    )
    identity_access: Mapping[str, str] = setting(
        IDENTITY_ACCESS_PREFIX, {}, "The access of one identity, e.g. "
        "`vending.access.etl=read-write`; identities are named in `auth_tokens_file` "
        "(`<identity> <token>` lines).",
    )
    sts_endpoint: str | None = setting(
        "vending.sts-endpoint", None, "Custom STS endpoint. Unset: AWS.",
    )
    region: str | None = setting(
        "vending.region", None, "Region of the STS client and the `aws_region` answered. Unset: "
        "`storage.aws_region`; with neither, the AWS default region and no `aws_region`.",
    )
    s3_endpoint: str | None = setting(
        "vending.s3-endpoint", None, "The S3 endpoint answered to clients as `aws_endpoint` "
        "(with `allow_http` for an `http://` one). Unset: the storage's own `aws_endpoint`.",
    )
    session_name: str = setting(
        "vending.session-name", DEFAULT_SESSION_NAME, "`RoleSessionName` of AssumeRole.",
    )

    @classmethod
    def from_backend_properties(cls, properties: Mapping[str, str]) -> VendingSettings:
        own = {key: value for key, value in properties.items() if key.startswith(VENDING_PREFIX)}
        return cls.from_properties(own)

    @classmethod
    def known_keys(cls) -> set[str]:
        """Only its own keys: a misspelt `vending.` key is warned about."""
        return {declared.key for _, declared in cls.declared()}

    def check(self) -> None:
        for identity, access in self.identity_access.items():
            if access.lower() not in ACCESS_LEVELS:
                raise ConfigurationError(
                    f"property '{IDENTITY_ACCESS_PREFIX}{identity}' must be one of "
                    f"{', '.join(ACCESS_LEVELS)}, got {access!r}"
                )

    def access_of(self, identity: str | None) -> str:
        """The access of `identity` (None: an unnamed caller): its own, else the default."""
        if identity is not None and identity in self.identity_access:
            return self.identity_access[identity].lower()
        return self.access
