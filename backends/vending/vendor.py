"""Minting table-scoped temporary credentials with STS AssumeRole, cached until shortly before
they expire, and handing them out as the storage options Lance's object store reads."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoRegionError
from lance_namespace import ServiceUnavailableError

from backends.properties import ConfigurationError, storage_options
from backends.vending.policy import TablePrefix, session_policy
from backends.vending.settings import VendingSettings

logger = logging.getLogger("lance_adapter.vending")

# A vend is reused while more than this share of its lifetime is left (at most _MAX_MARGIN_MS
# before expiry), so clients refreshing near expiry get fresh credentials, not the same ones.
_MARGIN_SHARE = 0.25
_MAX_MARGIN_MS = 5 * 60 * 1000
_STS_TIMEOUT_S = 10


@dataclass(frozen=True)
class VendRecord:
    """What the audit log and the metrics see of one vend: never the secret."""

    table: str
    identity: str | None
    access: str
    expires_at_millis: int
    minted: bool


@dataclass(frozen=True)
class VendedCredentials:
    """Temporary credentials of one table and access level, as Lance storage options."""

    storage_options: Mapping[str, str]
    expires_at_millis: int
    reuse_until_millis: int
    access: str


VendListener = Callable[[VendRecord], None]


class CredentialVendor:
    """One per server: mints through STS, caches per (table prefix, access), audits."""

    def __init__(
        self, settings: VendingSettings, storage: Mapping[str, str], sts: Any = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.region = settings.region or storage.get("aws_region") or storage.get("region")
        self.endpoint = settings.s3_endpoint or storage.get("aws_endpoint")
        self._sts = sts if sts is not None else _sts_client(settings, storage, self.region)
        self._clock = clock
        self._cache: dict[tuple[TablePrefix, str], VendedCredentials] = {}
        self._locks: dict[tuple[TablePrefix, str], threading.Lock] = {}
        self._guard = threading.Lock()
        self._listeners: list[VendListener] = []

    def asked(self, vend_credentials: bool | None) -> bool:
        """Whether a request's `vend_credentials` asks for credentials."""
        if vend_credentials is None:
            return self.settings.unasked
        return bool(vend_credentials)

    def add_listener(self, listener: VendListener) -> None:
        """Called after every vend (the app counts them in its metrics)."""
        self._listeners.append(listener)

    def vend(self, location: str, identity: str | None, table: str) -> VendedCredentials | None:
        """Credentials for the table at `location` with `identity`'s access; None when the
        location is not on S3 (nothing to vend)."""
        prefix = TablePrefix.of(location)
        if prefix is None:
            return None
        access = self.settings.access_of(identity)
        vended, minted = self._cached_or_minted((prefix, access))
        self._audit(VendRecord(table, identity, access, vended.expires_at_millis, minted))
        return vended

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _cached_or_minted(self, key: tuple[TablePrefix, str]) -> tuple[VendedCredentials, bool]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # a burst of requests for one table waits for one STS call
            cached = self._cache.get(key)
            if cached is not None and self._now_ms() < cached.reuse_until_millis:
                return cached, False
            vended = self._mint(*key)
            with self._guard:
                self._forget_expired()
                self._cache[key] = vended
            return vended, True

    def _forget_expired(self) -> None:
        now = self._now_ms()
        for key in [k for k, v in self._cache.items() if v.expires_at_millis <= now]:
            del self._cache[key]

    def _mint(self, prefix: TablePrefix, access: str) -> VendedCredentials:
        policy = session_policy(prefix, access, self.region)
        try:
            answer = self._sts.assume_role(
                RoleArn=self.settings.role_arn,
                RoleSessionName=self.settings.session_name,
                DurationSeconds=max(1, self.settings.duration_ms // 1000),
                Policy=json.dumps(policy, separators=(",", ":")),
            )
        except (ClientError, BotoCoreError) as error:
            raise ServiceUnavailableError(f"cannot vend credentials: {_reason(error)}") from None
        credentials = answer["Credentials"]
        expires = int(_as_utc(credentials["Expiration"]).timestamp() * 1000)
        lifetime = max(0, expires - self._now_ms())
        margin = min(_MAX_MARGIN_MS, int(lifetime * _MARGIN_SHARE))
        return VendedCredentials(
            self._options(credentials, expires), expires, expires - margin, access
        )

    def _options(self, credentials: Mapping[str, Any], expires: int) -> dict[str, str]:
        options = {
            "aws_access_key_id": credentials["AccessKeyId"],
            "aws_secret_access_key": credentials["SecretAccessKey"],
            "aws_session_token": credentials["SessionToken"],
            "expires_at_millis": str(expires),
        }
        if self.region:
            options["aws_region"] = self.region
        if self.endpoint:
            options["aws_endpoint"] = self.endpoint
            options["allow_http"] = str(self.endpoint.startswith("http://")).lower()
        return options

    def _audit(self, record: VendRecord) -> None:
        expiry = datetime.fromtimestamp(record.expires_at_millis / 1000, UTC).isoformat()
        logger.info(
            "vended %s credentials for table %s to %s until %s (%s)",
            record.access, record.table, record.identity or "an unnamed caller", expiry,
            "minted" if record.minted else "cached",
        )
        for listener in self._listeners:
            listener(record)


def with_vended(answer: Any, vended: VendedCredentials | None) -> Any:
    """A copy of `answer` (already without the server's credentials) carrying `vended`.

    A copy: the backend's answer may be held by the metadata cache and must stay clean."""
    if vended is None:
        return answer
    options = {**(answer.storage_options or {}), **vended.storage_options}
    return answer.model_copy(update={"storage_options": options})


def credential_vendor(properties: Mapping[str, str]) -> CredentialVendor | None:
    """The vendor `vending.*` configures, or None when vending is off (the default)."""
    settings = VendingSettings.from_backend_properties(properties)
    if not settings.enabled:
        return None
    return CredentialVendor(settings, storage_options(properties))


def _sts_client(settings: VendingSettings, storage: Mapping[str, str], region: str | None) -> Any:
    """STS signed with the storage's own keys when given, else the default provider chain.
    Parameter validation is left to STS itself, which enforces the duration's bounds."""
    session = boto3.Session(
        aws_access_key_id=storage.get("aws_access_key_id"),
        aws_secret_access_key=storage.get("aws_secret_access_key"),
        aws_session_token=storage.get("aws_session_token"),
        region_name=region,
    )
    config = Config(connect_timeout=_STS_TIMEOUT_S, read_timeout=_STS_TIMEOUT_S,
                    retries={"mode": "standard"}, parameter_validation=False)
    try:
        return session.client("sts", endpoint_url=settings.sts_endpoint, config=config)
    except (NoRegionError, ValueError) as error:
        raise ConfigurationError(f"cannot build the STS client of vending: {error}") from error


def _as_utc(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _reason(error: Exception) -> str:
    if isinstance(error, ClientError):
        detail = error.response.get("Error", {})
        return f"STS answered {detail.get('Code', 'an error')}"
    return type(error).__name__
