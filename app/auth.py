"""Caller authentication (off by default): static bearer tokens / API keys, or forwarding."""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from pathlib import Path

from lance_namespace import UnauthenticatedError
from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from app.config import Settings, SettingsError
from app.errors import render_error
from app.health import HEALTH_PATHS
from app.observability import register_secrets
from app.protocol import API_KEY_HEADER, AUTHORIZATION_HEADER

# The identity the endpoints hand to the backend when auth is on (None: strip it).
IDENTITY_KEY = "lance_adapter.identity"
# The name `auth_tokens_file` gives the caller's token (None: unnamed), for credential vending.
PRINCIPAL_KEY = "lance_adapter.principal"
_AUTHORIZATION = AUTHORIZATION_HEADER.encode()
_API_KEY = API_KEY_HEADER.encode()
_CHALLENGE = {"www-authenticate": 'Bearer realm="lance-namespace-adapter"'}


def load_credentials(settings: Settings) -> tuple[bytes, ...]:
    """The accepted tokens: `auth_tokens` (comma-separated) and `auth_tokens_file` lines."""
    return tuple(load_identities(settings))


def load_identities(settings: Settings) -> dict[bytes, str | None]:
    """Each accepted token with the identity it names: an entry `<identity> <token>` names
    one (credential vending grants access by it); a bare `<token>` none."""
    values = [value.strip() for value in settings.auth_tokens.split(",")]
    if settings.auth_tokens_file:
        try:
            text = Path(settings.auth_tokens_file).read_text()
        except OSError as error:
            message = f"cannot read auth_tokens_file {settings.auth_tokens_file}: {error.strerror}"
            raise SettingsError(message) from None
        values += [line.strip() for line in text.splitlines() if not line.startswith("#")]
    named = dict(_named_token(value) for value in values if value)
    if settings.auth_mode == "token" and not named:
        raise SettingsError("auth_mode 'token' needs auth_tokens or auth_tokens_file")
    register_secrets(named)
    return {token.encode(): identity for token, identity in named.items()}


def _named_token(entry: str) -> tuple[str, str | None]:
    words = entry.split()
    if len(words) > 2:
        raise SettingsError("an auth token entry is `<token>` or `<identity> <token>`")
    return (words[1], words[0]) if len(words) == 2 else (words[0], None)


def presented_credential(headers: list[tuple[bytes, bytes]]) -> tuple[str, bytes] | None:
    """("auth_token", token) from `Authorization: Bearer`, else ("api_key", key)."""
    api_key = None
    for name, value in headers:
        if name == _AUTHORIZATION:
            scheme, _, token = value.partition(b" ")
            if scheme.lower() == b"bearer" and token.strip():
                return "auth_token", token.strip()
        elif name == _API_KEY and value.strip():
            api_key = value.strip()
    return None if api_key is None else ("api_key", api_key)


class AuthMiddleware:
    """401 (code 16) for a missing or wrong credential on every route but the health ones."""

    def __init__(
        self, app: ASGIApp, mode: str, tokens: Mapping[bytes, str | None],
        routes: Sequence[BaseRoute] = (),
    ) -> None:
        self.app = app
        self.forward = mode == "forward"
        self.tokens = tokens
        self.routes = routes

    def _accepts(self, credential: bytes) -> bool:
        if not self.tokens:
            return self.forward
        matched = False
        for token in self.tokens:
            matched |= hmac.compare_digest(credential, token)
        return matched

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or get_route_path(scope) in HEALTH_PATHS:
            await self.app(scope, receive, send)
            return
        credential = presented_credential(scope["headers"])
        if credential is None or not self._accepts(credential[1]):
            await self._reject(scope, receive, send, credential is None)
            return
        kind, value = credential
        scope[IDENTITY_KEY] = {kind: value.decode("latin-1")} if self.forward else None
        scope[PRINCIPAL_KEY] = self.tokens.get(value)
        await self.app(scope, receive, send)

    def _name_operation(self, scope: Scope) -> None:
        """Give a refused request its route's endpoint, so metrics and logs name it."""
        for route in self.routes:
            match, child = route.matches(scope)
            if match is Match.FULL:
                scope["endpoint"] = child.get("endpoint")
                return

    async def _reject(self, scope: Scope, receive: Receive, send: Send, missing: bool) -> None:
        self._name_operation(scope)
        reason = "missing credential" if missing else "invalid credential"
        error = UnauthenticatedError(f"{reason}: send Authorization: Bearer <token> or x-api-key")
        response = render_error(error, scope, scope["path"])
        response.headers.update(_CHALLENGE)
        await response(scope, receive, send)
