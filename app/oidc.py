"""OpenID Connect bearer tokens (`auth_mode: oidc`): JWTs issued by the company's identity
provider, checked in the server against the keys the issuer publishes.

- `IssuerKeys`: the issuer's signing keys, found through its discovery document
  (`<issuer>/.well-known/openid-configuration`, whose `issuer` must be the configured one) and
  its `jwks_uri`; kept for `oidc_keys_max_age` seconds, fetched again sooner when a token names
  a key not among them (a rotation). Fetches are rate-limited: one per `oidc_keys_min_refresh`
  seconds, with one more kept in hand so that a rotation right after a fetch is seen at once;
  tokens naming made-up keys cannot make the server hammer the provider. One fetch at a time.
- `TokenVerifier`: one token's checks, in this order: its header's `alg` on the allow-list
  (`none` and the HMAC algorithms are never accepted: a public key is no shared secret), the
  key its `kid` names (of the algorithm's key type, meant for signatures), the signature, `iss`,
  `aud`, then `exp`, `nbf` and `iat` against the verifier's clock with `oidc_clock_skew`, then
  the required scopes. A token that passed is remembered until it expires (a bounded cache),
  so a client's repeated requests cost a dictionary lookup.

A failed check is `UnauthenticatedError` (401 / code 16) naming what failed, never quoting the
token; an issuer that cannot be reached is `ServiceUnavailableError` (503 / code 17): the
caller may retry, and is not told its token is bad.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
from lance_namespace import ServiceUnavailableError, UnauthenticatedError

from app.settings import Settings

# The key type each accepted algorithm family signs with (RFC 7518).
_KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
_HTTP_TIMEOUT = httpx.Timeout(5.0)
_MAX_DOCUMENT_BYTES = 1 << 20
_CACHED_TOKENS = 4096
_BURST = 2.0


@dataclass(frozen=True)
class Caller:
    """Who a valid token names: the identity claim's value and the groups claim's."""

    identity: str
    groups: tuple[str, ...]
    token: str
    expires: float


def _refused(reason: str) -> UnauthenticatedError:
    return UnauthenticatedError(f"invalid credential: {reason}")


class IssuerKeys:
    """The issuer's published signing keys, by `kid`."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self.issuer = settings.oidc_issuer.rstrip("/")
        self.max_age = settings.oidc_keys_max_age
        self.min_refresh = settings.oidc_keys_min_refresh
        self.clock = clock
        self.keys: dict[str, dict[str, Any]] = {}
        self.fetched_at: float | None = None
        self.fetches = 0
        # The rate limit, a token bucket: fetches allowed now, refilled one per min_refresh.
        self._allowance = _BURST
        self._counted_at = clock()
        self._lock = asyncio.Lock()

    async def key(self, kid: str) -> dict[str, Any]:
        """The JWK named `kid`; fetched again when missing or old (rate-limited)."""
        if kid not in self.keys or self._old():
            async with self._lock:
                if (kid not in self.keys or self._old()) and self._may_fetch():
                    await self._fetch()
        found = self.keys.get(kid)
        if found is None and self.fetched_at is None:  # no key known yet: the issuer's fault
            raise ServiceUnavailableError(
                "the identity provider's keys have not been fetched yet; retry shortly")
        if found is None:
            raise _refused("the token is signed with a key the issuer does not publish")
        return found

    def _old(self) -> bool:
        return self.fetched_at is None or self.clock() - self.fetched_at > self.max_age

    def _may_fetch(self) -> bool:
        now = self.clock()
        if self.min_refresh > 0:
            regained = (now - self._counted_at) / self.min_refresh
            self._allowance = min(_BURST, self._allowance + regained)
        else:
            self._allowance = _BURST
        self._counted_at = now
        if self._allowance < 1:
            return False
        self._allowance -= 1
        return True

    async def _fetch(self) -> None:
        self.fetches += 1
        try:
            discovery = await self._document(f"{self.issuer}/.well-known/openid-configuration")
            if str(discovery.get("issuer", "")).rstrip("/") != self.issuer:
                raise ValueError("its discovery document names another issuer")
            keys = (await self._document(str(discovery["jwks_uri"]))).get("keys")
            if not isinstance(keys, list):
                raise ValueError("its key set holds no `keys` list")
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as error:
            if self.keys:  # keep serving the keys known so far while the issuer is away
                return
            raise ServiceUnavailableError(
                f"the identity provider's keys cannot be fetched: {_reason(error)}") from None
        self.keys = {str(key["kid"]): key for key in keys
                     if isinstance(key, dict) and "kid" in key}
        self.fetched_at = self.clock()

    async def _document(self, url: str) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=_HTTP_TIMEOUT) as client, client.stream(
                "GET", url) as answer:
            answer.raise_for_status()
            body = bytearray()
            async for chunk in answer.aiter_bytes():
                body += chunk
                if len(body) > _MAX_DOCUMENT_BYTES:
                    raise ValueError(f"{url} answered more than 1 MiB")
        document = json.loads(body)
        if not isinstance(document, dict):
            raise ValueError(f"{url} did not answer a JSON object")
        return document


def _reason(error: BaseException) -> str:
    if isinstance(error, httpx.HTTPStatusError):
        return f"{error.request.url} answered {error.response.status_code}"
    if isinstance(error, httpx.HTTPError):
        return f"{type(error).__name__} reaching the issuer"
    return str(error)


class TokenVerifier:
    """Checks bearer JWTs against one issuer, audience and algorithm list."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time,
                 keys: IssuerKeys | None = None) -> None:
        self.settings = settings
        self.issuer = settings.oidc_issuer.rstrip("/")
        self.algorithms = tuple(settings.oidc_algorithms)
        self.scopes = frozenset(settings.oidc_required_scopes)
        self.clock = clock
        self.keys = keys or IssuerKeys(settings)
        self._passed: OrderedDict[bytes, Caller] = OrderedDict()

    async def verify(self, token: bytes) -> Caller:
        digest = hashlib.sha256(token).digest()
        cached = self._passed.get(digest)
        if cached is not None and self.clock() < cached.expires + self.settings.oidc_clock_skew:
            return cached
        caller = await self._checked(token.decode("latin-1"))
        self._passed[digest] = caller
        if len(self._passed) > _CACHED_TOKENS:
            self._passed.popitem(last=False)
        return caller

    async def _checked(self, token: str) -> Caller:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise _refused("the bearer token is not a JWT") from None
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            raise _refused(f"tokens signed with {str(algorithm)[:16]!r} are not accepted "
                           f"(oidc_algorithms: {', '.join(self.algorithms)})")
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise _refused("the token's header names no key (`kid`)")
        key = _usable(await self.keys.key(kid), algorithm)
        claims = self._signed_claims(token, key, algorithm)
        self._check_times(claims)
        self._check_scopes(claims)
        return Caller(self._identity(claims), _groups(claims, self.settings.oidc_groups_claim),
                      token, float(claims["exp"]))

    def _signed_claims(self, token: str, key: Any, algorithm: str) -> dict[str, Any]:
        try:
            return jwt.decode(
                token, key, algorithms=[algorithm], audience=self.settings.oidc_audience,
                issuer=self.issuer, options={
                    "require": ["exp", "iss", "aud"], "verify_exp": False,
                    "verify_nbf": False, "verify_iat": False})
        except jwt.InvalidSignatureError:
            raise _refused("the token's signature does not match its contents") from None
        except jwt.InvalidAudienceError:
            raise _refused(f"the token is not meant for {self.settings.oidc_audience!r} "
                           "(its `aud`)") from None
        except jwt.InvalidIssuerError:
            raise _refused("the token was issued by another issuer (its `iss`)") from None
        except jwt.MissingRequiredClaimError as error:
            raise _refused(f"the token has no `{error.claim}` claim") from None
        except jwt.PyJWTError:
            raise _refused("the token cannot be decoded") from None

    def _check_times(self, claims: Mapping[str, Any]) -> None:
        now, skew = self.clock(), self.settings.oidc_clock_skew
        expires, not_before = _time(claims, "exp"), _time(claims, "nbf")
        issued = _time(claims, "iat")
        if expires is None:
            raise _refused("the token's `exp` is not a time")
        if now > expires + skew:
            raise _refused("the token has expired")
        starts = max((t for t in (not_before, issued) if t is not None), default=None)
        if starts is not None and now < starts - skew:
            raise _refused("the token is not valid yet (its `nbf` or `iat` is ahead)")

    def _check_scopes(self, claims: Mapping[str, Any]) -> None:
        if not self.scopes:
            return
        granted = claims.get("scope", claims.get("scp")) or ""
        if isinstance(granted, str):
            held = set(granted.split())
        elif isinstance(granted, list) and all(isinstance(scope, str) for scope in granted):
            held = set(granted)
        else:  # RFC 8693 (`scope`: a string), or a list of strings (`scp`, as Entra ID sends)
            raise _refused("the token's `scope` is neither a string nor a list of strings")
        missing = sorted(self.scopes - held)
        if missing:
            raise _refused(f"the token lacks the scope {missing[0]!r}")

    def _identity(self, claims: Mapping[str, Any]) -> str:
        name = self.settings.oidc_identity_claim
        value = claims.get(name)
        if not isinstance(value, str) or not value:
            raise _refused(f"the token has no `{name}` claim naming the caller")
        return value


def _usable(jwk: Mapping[str, Any], algorithm: str) -> Any:
    """The public key of `jwk`, if it is meant for signatures with `algorithm`'s key type."""
    if jwk.get("use", "sig") != "sig" or jwk.get("alg", algorithm) != algorithm:
        raise _refused("the key the token names is not for this algorithm")
    if jwk.get("kty") != _KEY_TYPES.get(algorithm[:2]):
        raise _refused("the key the token names is not for this algorithm")
    try:
        return jwt.PyJWK(dict(jwk), algorithm).key
    except jwt.PyJWTError:
        raise _refused("the key the token names cannot be used") from None


def _time(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _groups(claims: Mapping[str, Any], path: str) -> tuple[str, ...]:
    """The groups or roles at the claim `path` (dotted: `realm_access.roles`), as strings."""
    value: Any = claims
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence):
        return tuple(item for item in value if isinstance(item, str))
    return ()
