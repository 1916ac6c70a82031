"""Caller authentication (off by default): static bearer tokens / API keys (read from
`auth_tokens` and the tokens file, whose format is checked here), forwarding, or OpenID
Connect tokens checked against the identity provider (`app.oidc`)."""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lance_namespace import LanceNamespaceError, UnauthenticatedError
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from app.errors import render_error
from app.health import HEALTH_PATHS
from app.oidc import TokenVerifier
from app.protocol import API_KEY_HEADER, AUTHORIZATION_HEADER
from app.settings import Settings
from backends.core.settings import ConfigurationError

# The identity the endpoints hand to the backend when auth is on (None: strip it).
IDENTITY_KEY = "lance_adapter.identity"
# The caller's identity (None: unnamed): the name `auth_tokens_file` gives its token, or an OIDC
# token's identity claim; for grants, credential vending and the logs.
PRINCIPAL_KEY = "lance_adapter.principal"
# An OIDC caller's groups or roles (`access_groups`).
GROUPS_KEY = "lance_adapter.groups"
# The tokens and grants in force when the request arrived (`app.credentials.CallerRules`).
RULES_KEY = "lance_adapter.rules"
_AUTHORIZATION = AUTHORIZATION_HEADER.encode()
_API_KEY = API_KEY_HEADER.encode()
_CHALLENGE = {"www-authenticate": 'Bearer realm="lance-namespace-adapter"'}
logger = logging.getLogger("lance_adapter")


def check_forwarding(namespace: object, settings: Settings) -> None:
    """`auth_mode: forward` without tokens of the server's own trusts the backend to judge
    every caller: refused at start on a backend that judges none, unless the operator accepts
    it (`auth_forward_unchecked`), which is logged as a warning."""
    if settings.auth_mode != "forward" or load_identities(settings):
        return
    checks = getattr(namespace, "checks_callers", None)
    if callable(checks) and checks():
        return
    backend = settings.impl
    if not settings.auth_forward_unchecked:
        raise ConfigurationError(
            f"auth_mode forward without auth_tokens or auth_tokens_file lets any bearer token "
            f"do everything on the {backend} backend, which checks no caller: set tokens, use "
            "auth_mode token, or set auth_forward_unchecked to accept that"
        )
    logger.warning(
        "auth_mode forward with auth_forward_unchecked: the %s backend checks no caller, so "
        "any bearer token may read, write and drop every table", backend)


@dataclass(frozen=True)
class _Place:
    """Where an entry was written, e.g. `auth_tokens_file /etc/tokens line 3`."""

    source: str
    unit: str
    number: int

    def __str__(self) -> str:
        return f"{self.source} {self.unit} {self.number}"

    def seen_from(self, later: _Place) -> str:
        return f"{self.unit} {self.number}" if later.source == self.source else str(self)


def load_identities(settings: Settings) -> dict[bytes, str | None]:
    """Each accepted token with the identity it names: an entry `<identity> <token>` names
    one (credential vending grants access by it); a bare `<token>` none. An identity may
    have several tokens (rotation); a token may appear once."""
    named: dict[str, str | None] = {}
    places: dict[str, _Place] = {}
    for place, entry in _token_entries(settings):
        token, identity = _named_token(place, entry)
        if token in places:
            raise ConfigurationError(
                f"{place} repeats the token of {places[token].seen_from(place)}; each token "
                "may appear once")
        places[token], named[token] = place, identity
    if settings.auth_mode == "token" and not named:
        raise ConfigurationError("auth_mode 'token' needs auth_tokens or auth_tokens_file")
    if settings.auth_mode == "oidc" and named:
        raise ConfigurationError("auth_mode 'oidc' accepts the identity provider's tokens "
                                 "only: unset auth_tokens and auth_tokens_file")
    return {token.encode(): identity for token, identity in named.items()}


def _token_entries(settings: Settings) -> list[tuple[_Place, str]]:
    """The non-blank `auth_tokens` entries, then the file's lines that are neither blank
    nor comments, each stripped (of indentation, trailing spaces and CR)."""
    entries = [(_Place("auth_tokens", "entry", number), value.strip())
               for number, value in enumerate(settings.auth_tokens.split(","), 1)]
    if settings.auth_tokens_file:
        source = f"auth_tokens_file {settings.auth_tokens_file}"
        # Read with universal newlines: CRLF and CR end lines as LF does, and only they
        # count, so the numbers are the ones an editor shows.
        lines = _tokens_file_text(settings.auth_tokens_file).split("\n")
        entries += [(_Place(source, "line", number), line.strip())
                    for number, line in enumerate(lines, 1)]
    return [(place, entry) for place, entry in entries
            if entry and not (place.unit == "line" and entry.startswith("#"))]


def _tokens_file_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")  # an editor's BOM is not a token
    except OSError as error:
        raise ConfigurationError(f"cannot read auth_tokens_file {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"auth_tokens_file {path} is not UTF-8 text") from None


# Visible ASCII: what a credential header carries byte for byte.
_TOKEN = re.compile(r"[!-~]+")
# A name fit for a property key (`vending.access.<identity>`), a log line and a metric label.
_IDENTITY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")


def _named_token(place: _Place, entry: str) -> tuple[str, str | None]:
    """(token, identity) of one entry; the messages never quote a word, it may be a token."""
    words = entry.split()
    if len(words) > 2:
        raise ConfigurationError(f"{place} has {len(words)} words; an auth token entry is "
                                 "`<token>` or `<identity> <token>`")
    token, identity = (words[1], words[0]) if len(words) == 2 else (words[0], None)
    if not _TOKEN.fullmatch(token):
        raise ConfigurationError(f"{place} holds a token with characters other than visible "
                                 "ASCII, which a credential header cannot carry")
    if identity is not None and not _IDENTITY.fullmatch(identity):
        raise ConfigurationError(f"{place} names an identity that is not 1-128 letters, "
                                 "digits or `._:@-` starting with a letter or digit")
    return token, identity


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


def _route_path(scope: Scope) -> str:
    """The request's path below the server's `root_path`, where routes are matched."""
    path, root = scope["path"], scope.get("root_path", "")
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root):]
    return path


def name_operation(scope: Scope, routes: Sequence[BaseRoute]) -> None:
    """Give a request refused by a middleware its route's endpoint and path parameters, so
    metrics, logs and the audit trail name its operation and what it named."""
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.FULL:
            scope["endpoint"] = child.get("endpoint")
            scope["path_params"] = child.get("path_params") or {}
            return


# Told of every request refused here (its scope, status and error code): the audit trail
# records the changing calls among them.
RefusalListener = Callable[[Scope, int, int], None]


class AuthMiddleware:
    """401 (code 16) for a missing or wrong credential on every route but the health ones;
    with a `verifier` (auth_mode oidc) every credential is a token it checks."""

    def __init__(
        self, app: ASGIApp, mode: str, credentials: Callable[[], Any],
        routes: Sequence[BaseRoute] = (), verifier: TokenVerifier | None = None,
        on_refused: RefusalListener | None = None,
    ) -> None:
        self.app = app
        self.on_refused = on_refused
        self.forward = mode == "forward"
        self.credentials = credentials  # the tokens and grants now (app.credentials)
        self.routes = routes
        self.verifier = verifier

    def _accepts(self, tokens: Mapping[bytes, str | None], credential: bytes) -> bool:
        if not tokens:
            return self.forward
        matched = False
        for token in tokens:
            matched |= hmac.compare_digest(credential, token)
        return matched

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _route_path(scope) in HEALTH_PATHS:
            await self.app(scope, receive, send)
            return
        credential = presented_credential(scope["headers"])
        if credential is None:
            await self._reject(scope, receive, send, _refused("missing credential"))
            return
        kind, value = credential
        rules = scope[RULES_KEY] = self.credentials()
        if self.verifier is not None:
            try:
                caller = await self.verifier.verify(value)
            except LanceNamespaceError as error:
                await self._reject(scope, receive, send, error)
                return
            # The checked token goes on to the backend as forward mode sends it: a catalog that
            # checks callers itself (`forward_caller_token`) sees the same company token.
            scope[IDENTITY_KEY] = {kind: value.decode("latin-1")}
            scope[PRINCIPAL_KEY], scope[GROUPS_KEY] = caller.identity, caller.groups
        elif self._accepts(rules.tokens, value):
            scope[IDENTITY_KEY] = {kind: value.decode("latin-1")} if self.forward else None
            scope[PRINCIPAL_KEY] = rules.tokens.get(value)
        else:
            await self._reject(scope, receive, send, _refused("invalid credential"))
            return
        await self.app(scope, receive, send)

    async def _reject(
        self, scope: Scope, receive: Receive, send: Send, error: LanceNamespaceError
    ) -> None:
        name_operation(scope, self.routes)
        response = render_error(error, scope, scope["path"])
        if isinstance(error, UnauthenticatedError):
            response.headers.update(_CHALLENGE)
        if self.on_refused is not None:
            self.on_refused(scope, response.status_code, int(error.code))
        await response(scope, receive, send)


def _refused(reason: str) -> UnauthenticatedError:
    return UnauthenticatedError(f"{reason}: send Authorization: Bearer <token> or x-api-key")
