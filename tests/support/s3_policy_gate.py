"""A stand-in for AWS's enforcement of STS session policies, in front of moto (a test fixture).

Stock moto 5.2.5 keeps the `Policy` and `DurationSeconds` of AssumeRole but enforces neither,
and ignores condition keys. This gate is an HTTP proxy on 127.0.0.1 that does what AWS does
for the requests the tests make, and forwards what it allows to moto:

- STS `AssumeRole` passes through; the gate records the answer's keys, token and expiration
  with the request's session `Policy` (it learns sessions as a client of moto's STS would).
- An S3 request must be signed (SigV4 in the `Authorization` header). The access key must be
  one of the `trusted_keys` (the server's own, standing in for an IAM user with the bucket)
  or a recorded session: then the session token must match, the signature must verify with
  the session's secret, the session must not have expired (else 400 `ExpiredToken`), and its
  session policy must allow the S3 action on the resource, with the `s3:prefix` condition of
  ListBucket (else 403 `AccessDenied`). The role's own policies are taken to allow the whole
  bucket, so the session policy is what narrows access, as with AWS's intersection.

Policy evaluation covers what session policies of this adapter use: `Allow`/`Deny`, `Action`
and `Resource` with `*`/`?` wildcards and the `${*}`, `${?}`, `${$}` literals, and
`StringLike`/`StringEquals` on `s3:prefix`; any other condition does not match (denies).
Every decision is kept in `decisions` for the tests to inspect.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import json
import re
import threading
import urllib.parse
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<scope>[^,]+), ?"
    r"SignedHeaders=(?P<signed>[^,]+), ?Signature=(?P<signature>[0-9a-f]+)"
)
_STS_NS = "{https://sts.amazonaws.com/doc/2011-06-15/}"
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length"}
_CLOCK_SKEW = timedelta(minutes=15)


@dataclass(frozen=True)
class Session:
    """One set of credentials minted by moto's STS, as the gate saw it minted."""

    access_key_id: str
    secret_access_key: str
    session_token: str
    expiration: datetime
    policy: dict[str, Any] | None


@dataclass(frozen=True)
class Decision:
    access_key_id: str
    action: str
    resource: str
    allowed: bool
    reason: str


@dataclass(frozen=True)
class S3Request:
    """What IAM evaluates for one S3 call: actions with their resources, and condition keys."""

    checks: tuple[tuple[str, str], ...]
    conditions: dict[str, str] = field(default_factory=dict)


class Denied(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


# ---------------------------------------------------------------- policy evaluation


def _literal_pattern(pattern: str) -> re.Pattern[str]:
    """An IAM pattern (`*`, `?` wildcards; `${*}`, `${?}`, `${$}` literals) as a regex."""
    parts = re.split(r"(\$\{[*?$]\}|\*|\?)", pattern)
    wild = {"*": ".*", "?": ".", "${*}": re.escape("*"), "${?}": re.escape("?"),
            "${$}": re.escape("$")}
    return re.compile("".join(wild.get(part, re.escape(part)) for part in parts), re.DOTALL)


def _matches(patterns: str | list[str], value: str, case: bool = True) -> bool:
    listed = [patterns] if isinstance(patterns, str) else patterns
    for pattern in listed:
        compiled = _literal_pattern(pattern if case else pattern.lower())
        if compiled.fullmatch(value if case else value.lower()):
            return True
    return False


def _condition_holds(condition: dict[str, Any], context: dict[str, str]) -> bool:
    for operator, tests in condition.items():
        for key, expected in tests.items():
            if key not in context or operator not in ("StringLike", "StringEquals"):
                return False
            listed = [expected] if isinstance(expected, str) else expected
            if operator == "StringEquals" and context[key] not in listed:
                return False
            if operator == "StringLike" and not _matches(listed, context[key]):
                return False
    return True


def _statement_applies(
    statement: dict[str, Any], action: str, resource: str, context: dict[str, str]
) -> bool:
    return (
        _matches(statement.get("Action", []), action, case=False)
        and _matches(statement.get("Resource", []), resource)
        and _condition_holds(statement.get("Condition", {}), context)
    )


def policy_allows(
    policy: dict[str, Any] | None, action: str, resource: str, context: dict[str, str]
) -> bool:
    """IAM's rule for one policy: an explicit Deny wins, else an Allow is needed."""
    if policy is None:
        return True  # no session policy: the role's permissions (here: the whole bucket)
    statements = policy.get("Statement", [])
    statements = [statements] if isinstance(statements, dict) else statements
    applying = [s for s in statements if _statement_applies(s, action, resource, context)]
    if any(s.get("Effect") == "Deny" for s in applying):
        return False
    return any(s.get("Effect") == "Allow" for s in applying)


# ---------------------------------------------------------------- S3 request -> IAM actions


def _object_checks(method: str, bucket: str, key: str, query: dict[str, list[str]],
                   headers: Any) -> list[tuple[str, str]]:
    resource = f"arn:aws:s3:::{bucket}/{key}"
    if method in ("GET", "HEAD"):
        return [("s3:GetObject", resource)]
    if method == "DELETE":
        action = "s3:AbortMultipartUpload" if "uploadId" in query else "s3:DeleteObject"
        return [(action, resource)]
    if method in ("PUT", "POST"):
        checks = [("s3:PutObject", resource)]
        source = headers.get("x-amz-copy-source")
        if source:
            source_path = urllib.parse.unquote(source.split("?")[0]).lstrip("/")
            checks.append(("s3:GetObject", f"arn:aws:s3:::{source_path}"))
        return checks
    return [("s3:Unknown", resource)]


def _bucket_checks(method: str, bucket: str, query: dict[str, list[str]],
                   body: bytes) -> S3Request:
    if method == "GET" and not {"uploads", "versions", "policy", "acl"} & set(query):
        prefix = query.get("prefix", [""])[0]
        return S3Request((("s3:ListBucket", f"arn:aws:s3:::{bucket}"),), {"s3:prefix": prefix})
    if method == "POST" and "delete" in query:
        keys = [element.text or "" for element in ElementTree.fromstring(body).iter()
                if element.tag.endswith("Key")]
        return S3Request(tuple(("s3:DeleteObject", f"arn:aws:s3:::{bucket}/{k}") for k in keys))
    return S3Request((("s3:Unknown", f"arn:aws:s3:::{bucket}"),))


def s3_request(method: str, raw_path: str, headers: Any, body: bytes) -> S3Request:
    """The IAM actions and resources of a path-style S3 request."""
    path, _, raw_query = raw_path.partition("?")
    query = urllib.parse.parse_qs(raw_query, keep_blank_values=True)
    bucket, _, key = urllib.parse.unquote(path).lstrip("/").partition("/")
    if not bucket:
        return S3Request((("s3:ListAllMyBuckets", "*"),))
    if not key:
        return _bucket_checks(method, bucket, query, body)
    return S3Request(tuple(_object_checks(method, bucket, key, query, headers)))


# ---------------------------------------------------------------- SigV4


def _quote(text: str) -> str:
    return urllib.parse.quote(text, safe="-_.~")


def _canonical_query(raw_query: str) -> str:
    pairs = []
    for part in raw_query.split("&") if raw_query else []:
        name, _, value = part.partition("=")
        pairs.append((_quote(urllib.parse.unquote(name)), _quote(urllib.parse.unquote(value))))
    return "&".join(f"{name}={value}" for name, value in sorted(pairs))


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def expected_signature(secret: str, method: str, raw_path: str, headers: Any,
                       signed: str, scope: str) -> str:
    """SigV4 of a request as S3 computes it (the path as sent, not normalised)."""
    path, _, raw_query = raw_path.partition("?")
    canonical_headers = "".join(
        f"{name}:{' '.join((headers.get(name) or '').split())}\n" for name in signed.split(";")
    )
    canonical = "\n".join([
        method, path, _canonical_query(raw_query), canonical_headers, signed,
        headers.get("x-amz-content-sha256") or "UNSIGNED-PAYLOAD",
    ])
    date, region, service, _ = scope.split("/")
    to_sign = "\n".join([
        "AWS4-HMAC-SHA256", headers.get("x-amz-date") or "", scope,
        hashlib.sha256(canonical.encode()).hexdigest(),
    ])
    key = _hmac(f"AWS4{secret}".encode(), date)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


# ---------------------------------------------------------------- the gate


class S3PolicyGate:
    """The proxy: `url` stands where AWS's S3 and STS endpoints would."""

    def __init__(self, upstream: str, trusted_keys: frozenset[str] = frozenset()) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self.trusted_keys = trusted_keys
        self.sessions: dict[str, Session] = {}
        self.decisions: list[Decision] = []
        self._ahead = timedelta()  # how far the gate's clock runs ahead of the real one
        self._policies_dropped = False  # sessions recorded without their session policy
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def now(self) -> datetime:
        """The gate's clock: the real time, or later while a test moves it (`ahead_by`)."""
        return datetime.now(UTC) + self._ahead

    @contextlib.contextmanager
    def ahead_by(self, interval: timedelta) -> Iterator[None]:
        """The gate's clock `interval` ahead (sessions expire sooner), for the block."""
        self._ahead = interval
        try:
            yield
        finally:
            self._ahead = timedelta()

    @contextlib.contextmanager
    def session_policies_dropped(self) -> Iterator[None]:
        """Sessions minted in the block are recorded without their session policy, so they
        reach what the role reaches, the whole bucket: a stand-in for a server that asked
        for no narrower policy (the defect the containment checks exist for)."""
        self._policies_dropped = True
        try:
            yield
        finally:
            self._policies_dropped = False

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> S3PolicyGate:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def denials(self, access_key_id: str | None = None) -> list[Decision]:
        with self._lock:
            return [d for d in self.decisions if not d.allowed
                    and access_key_id in (None, d.access_key_id)]

    def keys_used(self) -> set[str]:
        """The session keys of every allowed request."""
        with self._lock:
            return {d.access_key_id for d in self.decisions
                    if d.allowed and d.access_key_id in self.sessions}

    # -- deciding ----------------------------------------------------------------------------

    def authorize(self, method: str, raw_path: str, headers: Any, body: bytes) -> None:
        """Return if AWS would serve the S3 request; raise Denied as AWS would answer."""
        match = _AUTH.fullmatch((headers.get("authorization") or "").strip())
        if match is None:
            raise Denied(403, "AccessDenied", "anonymous or malformed signature")
        key = match["key"]
        request = s3_request(method, raw_path, headers, body)
        if key in self.trusted_keys:
            self._record(key, request, True, "trusted key")
            return
        session = self.sessions.get(key)
        if session is None:
            self._record(key, request, False, "unknown access key")
            raise Denied(403, "InvalidAccessKeyId", "unknown access key")
        self._verify(session, match, method, raw_path, headers, request)
        for action, resource in request.checks:
            if not policy_allows(session.policy, action, resource, request.conditions):
                self._record(key, request, False, f"session policy denies {action}")
                raise Denied(403, "AccessDenied", f"not allowed: {action} on {resource}")
        self._record(key, request, True, "session policy allows")

    def _verify(self, session: Session, match: re.Match[str], method: str, raw_path: str,
                headers: Any, request: S3Request) -> None:
        key = session.access_key_id
        if headers.get("x-amz-security-token") != session.session_token:
            self._record(key, request, False, "wrong session token")
            raise Denied(403, "InvalidToken", "the session token does not match")
        signature = expected_signature(session.secret_access_key, method, raw_path, headers,
                                       match["signed"], match["scope"])
        if not hmac.compare_digest(signature, match["signature"]):
            self._record(key, request, False, "bad signature")
            raise Denied(403, "SignatureDoesNotMatch", "the signature does not verify")
        signed_at = datetime.strptime(headers.get("x-amz-date") or "", "%Y%m%dT%H%M%SZ")
        if abs(signed_at.replace(tzinfo=UTC) - self.now()) > _CLOCK_SKEW:
            self._record(key, request, False, "request time too skewed")
            raise Denied(403, "RequestTimeTooSkewed", "the request time is too far off")
        if self.now() >= session.expiration:
            self._record(key, request, False, "expired")
            raise Denied(400, "ExpiredToken", "The provided token has expired.")

    def _record(self, key: str, request: S3Request, allowed: bool, reason: str) -> None:
        with self._lock:
            for action, resource in request.checks:
                self.decisions.append(Decision(key, action, resource, allowed, reason))

    def learn_sessions(self, request_body: bytes, answer: bytes) -> None:
        """Record the credentials an AssumeRole answer carries, with the session policy."""
        form = urllib.parse.parse_qs(request_body.decode())
        if form.get("Action") != ["AssumeRole"]:
            return
        credentials = ElementTree.fromstring(answer).find(f".//{_STS_NS}Credentials")
        if credentials is None:
            return
        text = {child.tag.removeprefix(_STS_NS): child.text or "" for child in credentials}
        policy = None if self._policies_dropped else form.get("Policy", [None])[0]
        expiration = datetime.fromisoformat(text["Expiration"].replace("Z", "+00:00"))
        session = Session(text["AccessKeyId"], text["SecretAccessKey"], text["SessionToken"],
                          expiration.astimezone(UTC), json.loads(policy) if policy else None)
        with self._lock:
            self.sessions[session.access_key_id] = session

    # -- forwarding --------------------------------------------------------------------------

    def forward(self, method: str, raw_path: str, headers: Any, body: bytes) -> tuple[
            int, list[tuple[str, str]], bytes]:
        connection = http.client.HTTPConnection(
            self.upstream.hostname, self.upstream.port, timeout=60
        )
        try:
            sent = {name: value for name, value in headers.items()
                    if name.lower() not in _HOP_HEADERS}
            connection.request(method, raw_path, body=body if body else None, headers=sent)
            answer = connection.getresponse()
            return answer.status, answer.getheaders(), answer.read()
        finally:
            connection.close()


def _is_sts(headers: Any) -> bool:
    match = _AUTH.fullmatch((headers.get("authorization") or "").strip())
    return match is not None and match["scope"].split("/")[2] == "sts"


def _error_xml(error: Denied) -> bytes:
    return (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{error.code}</Code>"
            f"<Message>{error}</Message></Error>").encode()


def _handler(gate: S3PolicyGate) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: object) -> None:
            pass

        def _body(self) -> bytes:
            if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                return self._chunked_body()  # pyarrow's S3 client uploads so
            length = int(self.headers.get("content-length") or 0)
            return self.rfile.read(length) if length else b""

        def _chunked_body(self) -> bytes:
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline().strip():  # trailers, up to the blank line
                pass
            return b"".join(chunks)

        def _serve(self) -> None:
            body = self._body()
            try:
                if not _is_sts(self.headers):
                    gate.authorize(self.command, self.path, self.headers, body)
                status, headers, answer = gate.forward(self.command, self.path, self.headers,
                                                       body)
                if _is_sts(self.headers) and status == 200:
                    gate.learn_sessions(body, answer)
            except Denied as denied:
                status, headers, answer = denied.status, [], _error_xml(denied)
                headers = [("Content-Type", "application/xml")]
            self._answer(status, headers, answer)

        def _answer(self, status: int, headers: list[tuple[str, str]], answer: bytes) -> None:
            self.send_response(status)
            length = str(len(answer))
            for name, value in headers:
                if name.lower() == "content-length" and self.command == "HEAD":
                    length = value
                elif name.lower() not in _HOP_HEADERS:
                    self.send_header(name, value)
            self.send_header("Content-Length", length)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(answer)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _serve

    return Handler

