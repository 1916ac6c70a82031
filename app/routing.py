"""One precomputed route table for every Lance operation, matched segment by segment.

A /v1/ route is `/v1/<kind>/<id>/<suffix...>`: the identifier is exactly one path segment
(percent-decoded from the raw path), so a table id can never swallow a sub-route:
`/v1/table/a$b/tags/create` is CreateTableTag of `a$b`, not CreateTable of `a$b/tags`.
A trailing `/` is accepted on every route, without a redirect. A path that ends with a
known suffix but whose identifier spans several segments names an identifier holding `/`:
it is matched, and its identifier is refused as invalid input rather than missing a route;
unless it is a LanceDB call this server does not serve (`app.lancedb.unserved`), which is
answered as not served.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

from starlette.requests import Request
from starlette.routing import BaseRoute, Match
from starlette.types import Receive, Scope, Send

from app.errors import MethodNotAllowedError, render_error
from app.lancedb.unserved import unserved_reason
from app.spec import Operation

Segments = tuple[str, ...]


@dataclass(frozen=True)
class RouteMatch:
    operation: Operation
    by_operation_id: bool
    path_params: dict[str, str]


@dataclass
class _Template:
    """The segments after `/v1/<kind>/{id}`, `{name}` standing for a path parameter."""

    operation: Operation
    suffix: Segments

    def match(self, segments: Segments) -> dict[str, str] | None:
        params = {}
        for template, value in zip(self.suffix, segments, strict=True):
            if template.startswith("{"):
                params[template[1:-1]] = value
            elif template != value:
                return None
        return params


@dataclass
class RouteTable:
    """Lookups by (method, path) for fixed routes and by (method, kind, length) otherwise."""

    fixed: dict[tuple[str, str], RouteMatch] = field(default_factory=dict)
    # Suffixes without parameters (all but a few), found in one lookup.
    literal: dict[tuple[str, str, Segments], Operation] = field(default_factory=dict)
    templated: dict[tuple[str, str, int], list[_Template]] = field(default_factory=dict)

    @classmethod
    def build(cls, operations: list[Operation]) -> RouteTable:
        table = cls()
        for operation in operations:
            table.fixed[("POST", f"/{operation.operation_id}")] = RouteMatch(operation, True, {})
            if operation.path is not None:
                table._add_v1(operation)
        return table

    def _add_v1(self, operation: Operation) -> None:
        parts = tuple(operation.path.strip("/").split("/"))
        if len(parts) < 3 or parts[2] != "{id}":
            self.fixed[(operation.method, operation.path)] = RouteMatch(operation, False, {})
            return
        kind, suffix = parts[1], parts[3:]
        if not any(part.startswith("{") for part in suffix):
            self.literal[(operation.method, kind, suffix)] = operation
            return
        key = (operation.method, kind, len(suffix))
        self.templated.setdefault(key, []).append(_Template(operation, suffix))

    def match(self, method: str, raw_path: str) -> RouteMatch | None:
        """The operation at `raw_path` for `method` (HEAD is GET without the body)."""
        method = "GET" if method == "HEAD" else method
        path = raw_path if raw_path == "/" else raw_path.removesuffix("/")
        found = self.fixed.get((method, unquote(path)))
        if found is not None:
            return found
        segments = tuple(path.split("/")[1:])
        if len(segments) < 3 or segments[0] != "v1":
            return None
        kind, identifier, suffix = segments[1], segments[2], segments[3:]
        found = self._match_suffix(method, kind, suffix, unquote(identifier))
        if found is None and len(suffix) > 1 and unserved_reason(path) is None:
            found = self._match_slashed_identifier(method, kind, segments[2:])
        return found

    def methods_at(self, raw_path: str) -> list[str]:
        """The methods some operation is served with at `raw_path`."""
        methods = [method for method in ("GET", "POST") if self.match(method, raw_path)]
        return ["GET", "HEAD", *methods[1:]] if "GET" in methods else methods

    def _match_suffix(
        self, method: str, kind: str, suffix: Segments, identifier: str
    ) -> RouteMatch | None:
        decoded = tuple(unquote(part) for part in suffix)
        operation = self.literal.get((method, kind, decoded))
        if operation is not None:
            return RouteMatch(operation, False, {"id": identifier})
        for template in self.templated.get((method, kind, len(suffix)), ()):
            params = template.match(decoded)
            if params is not None:
                return RouteMatch(template.operation, False, {"id": identifier, **params})
        return None

    def _match_slashed_identifier(
        self, method: str, kind: str, rest: Segments
    ) -> RouteMatch | None:
        """`/v1/table/a/b/create`: the longest suffix that matches, `a/b` as the id."""
        for length in range(len(rest) - 2, -1, -1):
            identifier = "/".join(unquote(part) for part in rest[: len(rest) - length])
            found = self._match_suffix(method, kind, rest[len(rest) - length:], identifier)
            if found is not None:
                return found
        return None


def route_path(scope: Scope) -> str:
    """The raw (still percent-encoded) path below the app's root path."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else scope["path"]
    path = path.partition("?")[0]
    root = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):] or "/"
    return path




class LanceRoutes(BaseRoute):
    """Every Lance operation as one Starlette route backed by the route table."""

    def __init__(
        self,
        table: RouteTable,
        endpoints: dict[tuple[str, bool], Callable[..., object]],
    ) -> None:
        self.table = table
        self.endpoints = endpoints

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        path = route_path(scope)
        found = self.table.match(scope["method"], path)
        if found is None:
            allowed = self.table.methods_at(path)
            if not allowed:
                return Match.NONE, {}
            return Match.PARTIAL, {"endpoint": _WrongMethod(allowed), "path_params": {}}
        endpoint = self.endpoints[(found.operation.operation_id, found.by_operation_id)]
        return Match.FULL, {"endpoint": endpoint, "path_params": found.path_params}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await scope["endpoint"].asgi(scope, receive, send)


class _WrongMethod:
    """The answer to a served path asked with another method: 405, naming the methods."""

    def __init__(self, allowed: list[str]) -> None:
        self.allowed = allowed

    async def asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = Request(scope).url.path
        allowed = ", ".join(self.allowed)
        message = f"{scope['method']} is not served at this path; it answers {allowed}"
        error = MethodNotAllowedError(message, self.allowed)
        await render_error(error, scope, path)(scope, receive, send)
