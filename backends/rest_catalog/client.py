"""The pooled HTTP client shared by the REST catalog backends (Unity Catalog, Iceberg REST).

One `RestCatalogClient` per backend keeps a connection pool, applies connect/read timeouts,
authenticates (static bearer token or OAuth2 client credentials with refresh before expiry),
retries idempotent calls on connection errors and 5xx/429 with exponential backoff, and turns
every failure into a typed `lance_namespace` error (`errors.py`). `as_caller` gives a view
of it, sharing its connections, that sends a caller's bearer token instead of its own
credential (`forward_caller_token`).
"""

from __future__ import annotations

import contextlib
import copy
import random
import time
from collections.abc import Mapping
from typing import Any

import httpx
from lance_namespace import InternalError, ServiceUnavailableError

from backends.rest_catalog.errors import ErrorRules, error_for, parse_error_reply
from backends.rest_catalog.oauth import OAuth2ClientCredentials
from backends.rest_catalog.settings import RestCatalogSettings

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
BACKOFF_BASE_SECONDS = 0.1
BACKOFF_MAX_SECONDS = 5.0

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
        # The caller's bearer token this client sends instead of its own (`as_caller`).
        self.caller_token: str | None = None
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
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """Send a request and return the 2xx response, or raise the matching Lance error."""
        method = method.upper()
        url = f"{self.base_url}{path}"
        attempts = 1 + (self.settings.max_retries if method in IDEMPOTENT_METHODS else 0)
        reauthenticated = False
        attempt = 1
        while True:
            outcome = self._send_once(method, url, params, json, headers)
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
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        return self.json_body(
            self.request("GET", path, params=params, errors=errors, headers=headers)
        )

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

    def as_caller(self, token: str | None) -> RestCatalogClient:
        """This client, sending the caller's bearer `token` instead of the configured
        credential when `forward_caller_token` is on (the same connections); else itself."""
        if not (self.settings.forward_caller_token and token):
            return self
        view = copy.copy(self)
        view.caller_token = token
        return view

    def _send(
        self, method: str, url: str, params: Mapping[str, Any] | None, body: Any,
        extra: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        headers = dict(extra or {})
        if self.caller_token:
            headers["Authorization"] = f"Bearer {self.caller_token}"
        elif self._oauth is not None:
            headers["Authorization"] = f"Bearer {self._oauth.token(self._http)}"
        elif self._auth_token:
            headers["Authorization"] = f"Bearer {self._auth_token}"
        return self._http.request(method, url, params=params, json=body, headers=headers)

    def _send_once(
        self, method: str, url: str, params: Mapping[str, Any] | None, body: Any,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response | httpx.TransportError:
        try:
            return self._send(method, url, params, body, headers)
        except httpx.TransportError as error:
            return error

    def _token_rejected(self, outcome: httpx.Response | httpx.TransportError) -> bool:
        rejected = isinstance(outcome, httpx.Response) and outcome.status_code == 401
        if rejected and self._oauth is not None and not self.caller_token:
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
