"""Table-scoped temporary credentials: relayed from a catalog that vends them (Unity, Iceberg
REST) or minted with STS AssumeRole, cached until shortly before they expire, and handed out as
the storage options Lance's object store reads.

Minting needs boto3, the `vending` extra: `backends.vending.sts` is imported only when a vendor
with a role is built, and `check_vending` asks for it before the server listens."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from backends.core.extras import VENDING
from backends.core.names import joined_id
from backends.core.properties import storage_options
from backends.core.settings import ConfigurationError
from backends.vending.policy import TablePrefix, session_policy
from backends.vending.settings import READ, VendingSettings

logger = logging.getLogger("lance_adapter.vending")

# A vend is reused while more than this share of its lifetime is left (at most _MAX_MARGIN_MS
# before expiry), so clients refreshing near expiry get fresh credentials, not the same ones.
_MARGIN_SHARE = 0.25
_MAX_MARGIN_MS = 5 * 60 * 1000
# What needs the `vending` extra, as its missing-extra error names it.
_MINTING = "credential vending with vending.role-arn"


MINTED = "minted"
RELAYED = "relayed"
CACHED = "cached"


@dataclass(frozen=True)
class VendRecord:
    """What the audit log and the metrics see of one vend: never the secret."""

    table: str
    identity: str | None
    access: str
    expires_at_millis: int | None
    source: str  # MINTED, RELAYED or CACHED


@dataclass(frozen=True)
class S3Credentials:
    """Temporary S3 credentials as STS or a catalog gives them; `region` and `endpoint` only
    when the catalog names them."""

    access_key_id: str
    secret_access_key: str
    session_token: str | None
    expires_at_millis: int | None
    region: str | None = None
    endpoint: str | None = None


@dataclass(frozen=True)
class VendedCredentials:
    """Temporary credentials of one table and access level, as Lance storage options."""

    storage_options: Mapping[str, str]
    expires_at_millis: int | None
    reuse_until_millis: int
    access: str


@runtime_checkable
class RelaysCredentials(Protocol):
    """A backend whose catalog vends credentials itself (Unity, Iceberg REST): the vendor asks
    it first. None: the catalog vends nothing for this table (then STS, when configured)."""

    def relayed_credentials(
        self, table_id: Sequence[str], access: str, caller_token: str | None
    ) -> S3Credentials | None: ...


@runtime_checkable
class ScopesVending(Protocol):
    """A backend that judges what keys for a table may cover (the guard,
    `backends.guard.GuardedNamespace`): whether all of its location reaches only its data,
    and the extra bases recorded as its own (a multi-base table's)."""

    def vendable(self, table_id: Sequence[str], location: str) -> bool: ...

    def extra_bases(self, table_id: Sequence[str], location: str) -> list[str]: ...


VendListener = Callable[[VendRecord], None]
# At most this many extra bases are covered by one vend (STS limits a session policy's size).
MOST_VENDED_BASES = 4


class CredentialVendor:
    """One per server: relays the catalog's credentials or mints through STS, caches per
    table and access, audits."""

    def __init__(
        self, settings: VendingSettings, storage: Mapping[str, str], sts: Any = None,
        clock: Callable[[], float] = time.time, relay: RelaysCredentials | None = None,
        scope: ScopesVending | None = None,
        policy: Callable[..., dict[str, Any]] = session_policy,
    ) -> None:
        self.settings = settings
        self._policy = policy  # the session policy a minted key is confined by
        self.region = settings.region or storage.get("aws_region") or storage.get("region")
        self.endpoint = settings.s3_endpoint or storage.get("aws_endpoint")
        if sts is None and settings.role_arn:
            sts = _sts_module().StsClient(settings, storage, self.region)
        self._sts = sts
        self._relay = relay
        # The guard's judgement of what a table's keys may cover (`ScopesVending`).
        self._scope = scope
        self._clock = clock
        self._cache: dict[Hashable, VendedCredentials] = {}
        self._locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()
        self._listeners: list[VendListener] = []

    def for_table(self, table_id: Sequence[str]) -> CredentialVendor:
        """The vendor of the table `table_id`: this one, for every table of its backend."""
        return self

    def asked(self, vend_credentials: bool | None) -> bool:
        """Whether a request's `vend_credentials` asks for credentials."""
        if vend_credentials is None:
            return self.settings.unasked
        return bool(vend_credentials)

    def add_listener(self, listener: VendListener) -> None:
        """Called after every vend (the app counts them in its metrics)."""
        self._listeners.append(listener)

    def vend(
        self, location: str, identity: str | None, table_id: Sequence[str],
        caller_token: str | None = None, may_write: bool = True,
    ) -> VendedCredentials | None:
        """Credentials for the table `table_id` at `location` with `identity`'s access: the
        catalog's own when the backend relays them, else minted for an S3 location when a
        role is configured; None when there is nothing to vend. `caller_token` is the caller's
        bearer token, which a backend forwarding it sends to the catalog. A caller who may
        not write the table (`may_write` false) gets read keys whatever its vending access."""
        access = self.settings.access_of(identity) if may_write else READ
        vended, source = self._relayed(table_id, access, caller_token)
        if vended is None:
            vended, source = self._minted(table_id, location, access)
        if vended is not None:
            record = VendRecord(joined_id(table_id), identity, access, vended.expires_at_millis,
                                source)
            self._audit(record)
        return vended

    def _relayed(
        self, table_id: Sequence[str], access: str, caller_token: str | None
    ) -> tuple[VendedCredentials | None, str]:
        relay = self._relay
        if relay is None:
            return None, RELAYED
        def ask() -> VendedCredentials | None:
            relayed = relay.relayed_credentials(list(table_id), access, caller_token)
            return None if relayed is None else self._lasting(relayed, access)

        return self._cached_or_made((RELAYED, tuple(table_id), access, caller_token), RELAYED, ask)

    def _minted(
        self, table_id: Sequence[str], location: str, access: str
    ) -> tuple[VendedCredentials | None, str]:
        prefix = TablePrefix.of(location)
        if prefix is None or self._sts is None:
            return None, MINTED
        bases = self._bases(table_id, location)
        if bases is None:
            return None, MINTED
        return self._cached_or_made(
            (MINTED, prefix, bases, access), MINTED, lambda: self._mint(prefix, access, bases))

    def _bases(self, table_id: Sequence[str], location: str) -> tuple[TablePrefix, ...] | None:
        """The extra bases keys for the table must cover too; None when no keys may be
        vended (its location is not its own alone, or a base is not one S3 prefix, or there
        are more than a session policy holds)."""
        if self._scope is None:
            return ()
        if not self._scope.vendable(table_id, location):
            return None
        bases = [TablePrefix.of(base) for base in self._scope.extra_bases(table_id, location)]
        if len(bases) > MOST_VENDED_BASES or None in bases:
            logger.warning("no keys vended for table %s: its extra bases are not %d S3 "
                           "prefixes at most", joined_id(table_id), MOST_VENDED_BASES)
            return None
        return tuple(base for base in bases if base is not None)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _cached_or_made(
        self, key: Hashable, source: str, make: Callable[[], VendedCredentials | None]
    ) -> tuple[VendedCredentials | None, str]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # a burst of requests for one table waits for one STS / catalog call
            cached = self._cache.get(key)
            if cached is not None and self._now_ms() < cached.reuse_until_millis:
                return cached, CACHED
            vended = make()
            with self._guard:
                self._forget_expired()
                if vended is not None and vended.expires_at_millis is not None:
                    self._cache[key] = vended
            return vended, source

    def _forget_expired(self) -> None:
        now = self._now_ms()
        expired = [key for key, vended in self._cache.items()
                   if (vended.expires_at_millis or 0) <= now]
        for key in expired:
            del self._cache[key]
            self._locks.pop(key, None)

    def _mint(self, prefix: TablePrefix, access: str,
              bases: tuple[TablePrefix, ...]) -> VendedCredentials:
        policy = self._policy(prefix, access, self.region, bases)
        answer = self._sts.assume_role(
            RoleArn=self.settings.role_arn,
            RoleSessionName=self.settings.session_name,
            DurationSeconds=max(1, self.settings.duration_ms // 1000),
            Policy=json.dumps(policy, separators=(",", ":")),
        )
        credentials = answer["Credentials"]
        minted = S3Credentials(
            credentials["AccessKeyId"], credentials["SecretAccessKey"],
            credentials["SessionToken"],
            int(_as_utc(credentials["Expiration"]).timestamp() * 1000),
        )
        return self._lasting(minted, access)

    def _lasting(self, credentials: S3Credentials, access: str) -> VendedCredentials:
        """`credentials` as Lance storage options, reusable until shortly before expiry
        (never reused when they name no expiry)."""
        expires = credentials.expires_at_millis
        reuse_until = 0
        if expires is not None:
            margin = min(_MAX_MARGIN_MS, int(max(0, expires - self._now_ms()) * _MARGIN_SHARE))
            reuse_until = expires - margin
        return VendedCredentials(self._options(credentials), expires, reuse_until, access)

    def _options(self, credentials: S3Credentials) -> dict[str, str]:
        """The keys Lance's object store reads; region and endpoint: the catalog's, else the
        vending settings' and the storage's (an explicit `vending.s3-endpoint` first)."""
        options = {
            "aws_access_key_id": credentials.access_key_id,
            "aws_secret_access_key": credentials.secret_access_key,
        }
        if credentials.session_token:
            options["aws_session_token"] = credentials.session_token
        if credentials.expires_at_millis is not None:
            options["expires_at_millis"] = str(credentials.expires_at_millis)
        region = credentials.region or self.region
        endpoint = self.settings.s3_endpoint or credentials.endpoint or self.endpoint
        if region:
            options["aws_region"] = region
        if endpoint:
            options["aws_endpoint"] = endpoint
            options["allow_http"] = str(endpoint.startswith("http://")).lower()
        return options

    def _audit(self, record: VendRecord) -> None:
        expiry = "no expiry"
        if record.expires_at_millis is not None:
            expiry = datetime.fromtimestamp(record.expires_at_millis / 1000, UTC).isoformat()
        logger.info(
            "vended %s credentials for table %s to %s until %s (%s)",
            record.access, record.table, record.identity or "an unnamed caller", expiry,
            record.source,
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


def credential_vendor(
    properties: Mapping[str, str], backend: object = None
) -> CredentialVendor | None:
    """The vendor `vending.*` configures, or None when vending is off (the default). A
    `backend` whose catalog vends (`RelaysCredentials`) is asked first; without one, minting
    needs `vending.role-arn`."""
    settings = VendingSettings.from_backend_properties(properties)
    if not settings.enabled:
        return None
    relay = backend if isinstance(backend, RelaysCredentials) else None
    scope = backend if isinstance(backend, ScopesVending) else None
    if relay is None and not settings.role_arn:
        raise ConfigurationError(
            "vending.enabled needs vending.role-arn: this backend relays no catalog's credentials"
        )
    return CredentialVendor(
        settings, storage_options(properties), relay=relay,
        scope=scope,
    )


def check_vending(properties: Mapping[str, str]) -> VendingSettings:
    """The `vending.*` settings as the vendor reads them; when they mint, boto3 (the `vending`
    extra) must be installed too. Start-up and `config` ask before the server listens."""
    settings = VendingSettings.from_backend_properties(properties)
    if settings.enabled and settings.role_arn:
        _sts_module()
    return settings


def _sts_module() -> ModuleType:
    return VENDING.load("backends.vending.sts", _MINTING)


def _as_utc(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))

