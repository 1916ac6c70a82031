"""The guard against web pages while auth is off: `BrowserGuard` refuses the requests a
browser sends on a foreign page's behalf.

A page can make a browser send requests to any address, this server on loopback included,
without the user seeing it. With auth off nothing else tells those requests apart, so:

- a foreign `Origin` (neither the origin the request is addressed to nor one of
  `allowed_origins`) is 403 / code 15: browsers send `Origin` on every cross-site request
  that can change something (every POST, and every `fetch` in CORS mode);
- on a server bound to loopback (`host` is `localhost` or a loopback address), a `Host`
  that is neither `localhost`, a loopback address, the host of an `allowed_origins` entry nor
  one of LanceDB's remote client (`*.api.lancedb.com`) is 403 / code 15: that is a page
  whose DNS name was rebound to this machine, for which the browser sees a same-origin
  request;
- a body typed `text/plain` or `multipart/form-data` (what a form or a preflight-free
  `fetch` sends; no client of this API does) is 415 / code 13, as is
  `application/x-www-form-urlencoded` from a browser (with `Origin`). Without `Origin` it is
  accepted: `curl -d` and Python's `urllib` send it by default.

The official clients, curl and probes send no `Origin` and address the server by the name it
is reached under, so they pass. With auth on the guard is not installed: a browser attaches no
credential header to a cross-site request by itself, and a page that sets one needs a CORS
preflight, which this server never approves.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from lance_namespace import InvalidInputError, LanceNamespaceError, PermissionDeniedError
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from app.auth import name_operation
from app.config import allowed_origin_list, normal_origin
from app.errors import render_error
from app.protocol import media_type
from app.settings import Settings

_ORIGIN = b"origin"
_HOST = b"host"
_CONTENT_TYPE = b"content-type"
# Body types a page may send cross-site without a CORS preflight (the CORS-safelisted ones).
_FORM_TYPES = frozenset({"text/plain", "multipart/form-data"})
_URLENCODED = "application/x-www-form-urlencoded"
# LanceDB's remote client sends `Host: <db>.<region>.api.lancedb.com` whatever its
# `host_override`; no attacker can serve a page under that name, so it cannot be rebound.
LANCEDB_CLOUD_HOSTS = ".api.lancedb.com"
UNSUPPORTED_MEDIA_TYPE = 415


def _values(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in headers if key == name]


@functools.lru_cache(maxsize=256)  # every request asks; a client sends one or two
def _host_name(host_header: str) -> str | None:
    """The lower-case host of a `Host` header (no brackets, no port); None if malformed."""
    if not host_header.isprintable() or " " in host_header:
        return None
    try:
        parts = urlsplit(f"//{host_header}")
        port_ok = parts.port is None or parts.port > 0  # a malformed port raises ValueError
    except ValueError:
        return None
    if not port_ok or "@" in parts.netloc or parts.path or parts.query or parts.fragment:
        return None
    return parts.hostname or None


# Pure and asked with the same few values on every request: memoized, bounded.
@functools.lru_cache(maxsize=256)
def _is_loopback(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _media_type(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    for content_type in _values(headers, _CONTENT_TYPE):
        return media_type(content_type)
    return None


class BrowserGuard:
    """Refuses cross-site and DNS-rebound browser requests (see the module's docstring)."""

    def __init__(self, app: ASGIApp, settings: Settings, routes: Sequence[BaseRoute] = ()) -> None:
        self.app = app
        self.routes = routes
        self.allowed_origins = allowed_origin_list(settings)
        # Host names are judged only when loopback is all the server listens on: elsewhere
        # the names it is reached under (pod addresses, service names) are not known.
        self.allowed_hosts: frozenset[str] | None = None
        if _is_loopback(settings.host.strip("[]").lower()):
            self.allowed_hosts = frozenset(
                urlsplit(origin).hostname or "" for origin in self.allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        error = self.refusal(scope) if scope["type"] == "http" else None
        if error is None:
            await self.app(scope, receive, send)
            return
        name_operation(scope, self.routes)
        response = render_error(error, scope, scope["path"])
        if isinstance(error, InvalidInputError):
            response.status_code = UNSUPPORTED_MEDIA_TYPE
        await response(scope, receive, send)

    def refusal(self, scope: Scope) -> LanceNamespaceError | None:
        """The error a request is refused with, or None when it may pass."""
        headers = scope["headers"]
        hosts, origins = _values(headers, _HOST), _values(headers, _ORIGIN)
        if not all(self._host_allowed(host) for host in hosts):
            return PermissionDeniedError(
                "the Host header names neither a loopback address nor the host of an allowed "
                "origin; with auth off a loopback-bound server refuses other names (DNS "
                "rebinding)")
        if not all(self._origin_allowed(origin, hosts) for origin in origins):
            return PermissionDeniedError(
                "cross-site request refused: with auth off only pages of this server's own "
                "origin or of allowed_origins may call it from a browser")
        media_type = _media_type(headers)
        if media_type in _FORM_TYPES or (media_type == _URLENCODED and origins):
            return InvalidInputError(
                f"a {media_type} body is refused: send JSON as application/json and table "
                "data as application/vnd.apache.arrow.stream")
        return None

    def _host_allowed(self, host_header: str) -> bool:
        if self.allowed_hosts is None:
            return True
        name = _host_name(host_header)
        return name is not None and (_is_loopback(name) or name in self.allowed_hosts
                                     or name.endswith(LANCEDB_CLOUD_HOSTS))

    def _origin_allowed(self, origin: str, hosts: list[str]) -> bool:
        """Same-origin (`Origin` names the address the request was sent to) or allowed."""
        normal = normal_origin(origin)
        if normal is None:
            return False
        if normal in self.allowed_origins:
            return True
        scheme = normal.partition(":")[0]
        return any(normal_origin(f"{scheme}://{host}") == normal for host in hosts)
