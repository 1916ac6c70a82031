"""OAuth2 client credentials for the REST catalogs that issue tokens (Iceberg's
`/v1/oauth/tokens`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx
from lance_namespace import ServiceUnavailableError, UnauthenticatedError

from backends.core.settings import ConfigurationError
from backends.rest_catalog.errors import error_for, parse_error_reply


class OAuth2ClientCredentials:
    """Fetches an access token with the client-credentials grant and refreshes it before expiry."""

    def __init__(self, token_url: str, credential: str, scope: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
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
        self._clock = clock  # seconds, monotonic: tests pass their own
        self._lock = threading.Lock()

    def token(self, http: httpx.Client) -> str:
        with self._lock:
            if self._token is None or self._clock() >= self._refresh_at:
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
        now = self._clock()
        if isinstance(expires_in, int | float) and expires_in > 0:
            # Refresh a minute early, or at 80% of a short lifetime.
            self._refresh_at = now + max(expires_in - 60.0, expires_in * 0.8)
        else:
            self._refresh_at = float("inf")


