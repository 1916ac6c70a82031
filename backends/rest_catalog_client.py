"""The pooled HTTP client shared by the REST catalog backends (Unity Catalog, Iceberg REST).

One `RestCatalogClient` per backend keeps a connection pool, applies connect/read timeouts,
authenticates (static bearer token or OAuth2 client credentials with refresh before expiry),
retries idempotent calls on connection errors and 5xx/429 with exponential backoff, and turns
every failure into a typed `lance_namespace` error. This module is the only place where an HTTP
status becomes a Lance error code; backends only name what a 404 or 409 means for one call.
"""

from __future__ import annotations

import contextlib
import functools
import random
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx
from lance_namespace import (
    InternalError,
    InvalidInputError,
    LanceNamespace,
    LanceNamespaceError,
    PermissionDeniedError,
    ServiceUnavailableError,
    ThrottlingError,
    UnauthenticatedError,
)

from backends.properties import ConfigurationError
from backends.rest_catalog_settings import RestCatalogSettings

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
BACKOFF_BASE_SECONDS = 0.1
BACKOFF_MAX_SECONDS = 5.0
MAX_MESSAGE_LENGTH = 1000

# Statuses whose meaning does not depend on the call; anything else unexpected is InternalError.
STATUS_ERRORS: dict[int, type[LanceNamespaceError]] = {
    400: InvalidInputError,
    401: UnauthenticatedError,
    403: PermissionDeniedError,
    429: ThrottlingError,
    503: ServiceUnavailableError,
}

# Per-call meaning of a status (404, 409, ...) or of the server's own error code/type string.
ErrorRules = Mapping[int | str, type[LanceNamespaceError]]


@dataclass(frozen=True)
class ErrorReply:
    """What a catalog said when it refused a request."""

    status: int
    kind: str
    message: str


def parse_error_reply(response: httpx.Response) -> ErrorReply:
    """Read the error of a Unity (`error_code`/`message`), Iceberg (`error.type`/`error.message`)
    or OAuth2 (`error`/`error_description`) reply."""
    kind, message = "", ""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        nested = body.get("error")
        if isinstance(nested, dict):
            kind, message = str(nested.get("type") or ""), str(nested.get("message") or "")
        elif isinstance(nested, str):
            kind, message = nested, str(body.get("error_description") or "")
        else:
            kind = str(body.get("error_code") or "")
            message = str(body.get("message") or body.get("detail") or "")
    if not message:
        message = response.text.strip() or response.reason_phrase
    return ErrorReply(response.status_code, kind, message[:MAX_MESSAGE_LENGTH])


def error_for(reply: ErrorReply, rules: ErrorRules | None = None) -> LanceNamespaceError:
    """The Lance error for a refused request: call rules first, then the common statuses."""
    rules = rules or {}
    error_class = (
        rules.get(reply.kind)
        or rules.get(reply.status)
        or STATUS_ERRORS.get(reply.status)
        or InternalError
    )
    detail = f"{reply.kind}: {reply.message}" if reply.kind else reply.message
    return error_class(f"catalog returned HTTP {reply.status}: {detail}")


class OAuth2ClientCredentials:
    """Fetches an access token with the client-credentials grant and refreshes it before expiry."""

    def __init__(self, token_url: str, credential: str, scope: str | None = None) -> None:
        client_id, separator, client_secret = credential.partition(":")
        if not separator or not client_id or not client_secret:
            raise ConfigurationError("credential must have the form client_id:client_secret")
        self.token_url = token_url
        self._form = {
            "grant_type": "client_credentials",
            "client_id": client_id,
            "client_secret": client_secret,
        }
        if scope:
            self._form["scope"] = scope
        self._token: str | None = None
        self._refresh_at = 0.0
        self._lock = threading.Lock()

    def token(self, http: httpx.Client) -> str:
        with self._lock:
            if self._token is None or time.monotonic() >= self._refresh_at:
                self._fetch(http)
            assert self._token is not None
            return self._token

    def invalidate(self) -> None:
        with self._lock:
            self._token = None

    def _fetch(self, http: httpx.Client) -> None:
        try:
            response = http.post(self.token_url, data=self._form)
        except httpx.TimeoutException as error:
            raise ServiceUnavailableError(f"token endpoint timed out: {error}") from error
        except httpx.TransportError as error:
            raise ServiceUnavailableError(f"token endpoint unreachable: {error}") from error
        if response.status_code != 200:
            reply = parse_error_reply(response)
            # A refused client credential is an authentication failure whatever the status.
            rules = {400: UnauthenticatedError, "invalid_client": UnauthenticatedError}
            raise error_for(reply, rules)
        body = response.json()
        access_token = body.get("access_token")
        if not access_token:
            raise UnauthenticatedError("token endpoint returned no access_token")
        self._token = str(access_token)
        expires_in = body.get("expires_in")
        now = time.monotonic()
        if isinstance(expires_in, int | float) and expires_in > 0:
            # Refresh a minute early, or at 80% of a short lifetime.
            self._refresh_at = now + max(expires_in - 60.0, expires_in * 0.8)
        else:
            self._refresh_at = float("inf")


_CALLER_TOKEN: ContextVar[str | None] = ContextVar("caller_token", default=None)
# Spec operations the official client lacks (backends/extensions.py); they act for the caller too.
EXTENSION_OPERATIONS = frozenset({"alter_namespace", "alter_table"})


def acts_for_the_caller(namespace_class: type[LanceNamespace]) -> type[LanceNamespace]:
    """Run every operation of `namespace_class` inside `self.client.acting_for(request)`, so
    the caller's bearer token reaches the catalog when the backend forwards it."""
    for name, member in list(vars(namespace_class).items()):
        spec_operation = hasattr(LanceNamespace, name) or name in EXTENSION_OPERATIONS
        request_operation = spec_operation and name != "namespace_id"
        if name.startswith("_") or not callable(member) or not request_operation:
            continue

        def operation(self: Any, request: Any, *arguments: Any, _member: Any = member) -> Any:
            with self.client.acting_for(request):
                return _member(self, request, *arguments)

        functools.update_wrapper(operation, member)
        setattr(namespace_class, name, operation)
    return namespace_class


class RestCatalogClient:
    """A pooled, retrying JSON client for one catalog endpoint."""

    def __init__(
        self,
        base_url: str,
        settings: RestCatalogSettings,
        *,
        oauth: OAuth2ClientCredentials | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.settings = settings
        self._auth_token = settings.auth_token
        self._oauth = oauth
        connect, read = settings.connect_timeout_ms / 1000, settings.read_timeout_ms / 1000
        timeout = httpx.Timeout(connect=connect, read=read, write=read, pool=connect)
        self._http = httpx.Client(
            timeout=timeout,
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=16),
            headers={"Accept": "application/json", "User-Agent": "lance-namespace-adapter"},
        )

    def close(self) -> None:
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        errors: ErrorRules | None = None,
    ) -> httpx.Response:
        """Send a request and return the 2xx response, or raise the matching Lance error."""
        method = method.upper()
        url = f"{self.base_url}{path}"
        attempts = 1 + (self.settings.max_retries if method in IDEMPOTENT_METHODS else 0)
        reauthenticated = False
        attempt = 1
        while True:
            outcome = self._send_once(method, url, params, json)
            if isinstance(outcome, httpx.Response) and outcome.is_success:
                return outcome
            if not reauthenticated and self._token_rejected(outcome):
                reauthenticated = True  # fetch a new token once: it may have been revoked
                continue
            if attempt < attempts and _retryable(outcome):
                retry_after = (
                    outcome.headers.get("Retry-After")
                    if isinstance(outcome, httpx.Response)
                    else None
                )
                self._sleep_before_retry(attempt, retry_after)
                attempt += 1
                continue
            if isinstance(outcome, httpx.Response):
                raise error_for(parse_error_reply(outcome), errors)
            raise _transport_error(self.base_url, outcome) from outcome

    def get_json(
        self,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        errors: ErrorRules | None = None,
    ) -> dict[str, Any]:
        return self.json_body(self.request("GET", path, params=params, errors=errors))

    @staticmethod
    def json_body(response: httpx.Response) -> dict[str, Any]:
        if not response.content:
            return {}
        try:
            body = response.json()
        except ValueError as error:
            raise InternalError(f"catalog returned a body that is not JSON: {error}") from error
        if not isinstance(body, dict):
            raise InternalError("catalog returned JSON that is not an object")
        return body

    @contextlib.contextmanager
    def acting_for(self, request: Any) -> Iterator[None]:
        """Within this block, send the caller's bearer token (`request.identity.auth_token`)
        instead of the configured one, when `forward_caller_token` is on."""
        identity = getattr(request, "identity", None)
        token = getattr(identity, "auth_token", None)
        if not (self.settings.forward_caller_token and token):
            yield
            return
        reset = _CALLER_TOKEN.set(token)
        try:
            yield
        finally:
            _CALLER_TOKEN.reset(reset)

    def _send(
        self, method: str, url: str, params: Mapping[str, Any] | None, body: Any
    ) -> httpx.Response:
        headers = {}
        caller_token = _CALLER_TOKEN.get()
        if caller_token:
            headers["Authorization"] = f"Bearer {caller_token}"
        elif self._oauth is not None:
            headers["Authorization"] = f"Bearer {self._oauth.token(self._http)}"
        elif self._auth_token:
            headers["Authorization"] = f"Bearer {self._auth_token}"
        return self._http.request(method, url, params=params, json=body, headers=headers)

    def _send_once(
        self, method: str, url: str, params: Mapping[str, Any] | None, body: Any
    ) -> httpx.Response | httpx.TransportError:
        try:
            return self._send(method, url, params, body)
        except httpx.TransportError as error:
            return error

    def _token_rejected(self, outcome: httpx.Response | httpx.TransportError) -> bool:
        rejected = isinstance(outcome, httpx.Response) and outcome.status_code == 401
        if rejected and self._oauth is not None and not _CALLER_TOKEN.get():
            self._oauth.invalidate()
            return True
        return False

    def _sleep_before_retry(self, attempt: int, retry_after: str | None) -> None:
        delay = min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** (attempt - 1))
        delay *= 1 + random.random() * 0.25
        if retry_after:
            with contextlib.suppress(ValueError):
                delay = max(delay, min(float(retry_after), BACKOFF_MAX_SECONDS))
        time.sleep(delay)


def _retryable(outcome: httpx.Response | httpx.TransportError) -> bool:
    """5xx/429 answers and connection failures; a stalled read is not retried, so the caller
    gets an answer within read_timeout."""
    if isinstance(outcome, httpx.Response):
        return outcome.status_code in RETRYABLE_STATUSES
    return isinstance(outcome, httpx.ConnectTimeout) or not isinstance(
        outcome, httpx.TimeoutException
    )


def _transport_error(base_url: str, error: httpx.TransportError) -> ServiceUnavailableError:
    if isinstance(error, httpx.TimeoutException):
        return ServiceUnavailableError(f"catalog at {base_url} timed out ({type(error).__name__})")
    return ServiceUnavailableError(f"catalog at {base_url} is unreachable: {error}")


# Helpers the REST catalog backends share for reading Lance requests.

def validate_location(location: str | None) -> str:
    """A table location from a request: non-empty, no control characters, no trailing slash."""
    if not isinstance(location, str) or not location.strip():
        raise InvalidInputError("location must not be empty")
    if any(ord(character) < 32 or ord(character) == 127 for character in location):
        raise InvalidInputError("location must not contain control characters")
    return location.rstrip("/") or "/"


def string_map(values: Any) -> dict[str, str]:
    """A catalog's properties map as strings; anything that is not a map is empty."""
    if not isinstance(values, dict):
        return {}
    return {str(key): str(value) for key, value in values.items()}


def property_changes(
    set_properties: Mapping[str, str] | None,
    unset_properties: Collection[str] | None,
    protected: Collection[str] = (),
) -> tuple[dict[str, str], list[str]]:
    """The validated changes of an Alter request: string keys and values, no key both set and
    unset, and no key of `protected` (compared case-insensitively) touched at all."""
    updates = dict(set_properties or {})
    removals = list(dict.fromkeys(unset_properties or []))
    for key in [*updates, *removals]:
        if not isinstance(key, str) or not key.strip():
            raise InvalidInputError(f"property keys must be non-empty strings, got {key!r}")
    for key, value in updates.items():
        if not isinstance(value, str):
            raise InvalidInputError(f"the value of property {key!r} must be a string")
    both = sorted(set(updates) & set(removals))
    if both:
        raise InvalidInputError(f"properties both set and unset: {', '.join(both)}")
    guarded = {key.lower() for key in protected}
    touched = sorted(key for key in [*updates, *removals] if key.lower() in guarded)
    if touched:
        raise InvalidInputError(
            f"properties {', '.join(touched)} mark the entry as a Lance table and cannot change"
        )
    return updates, removals
