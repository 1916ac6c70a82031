"""A fault proxy (a stand-in for outages, which the real services cannot be made to have on cue):
an HTTP proxy on 127.0.0.1 that forwards every request to a real server (moto's Glue or S3, a
REST catalog) and, for the requests a rule picks, injects a fault instead:

- `REFUSE`: answer 503 without forwarding (the service is down; nothing took effect);
- `DROP_ANSWER`: forward the request, so it takes effect, then close the connection without
  answering (the answer was lost on the way back);
- `EMPTY_HEAD`: forward a HEAD, then answer it with a length of 0 (a malformed answer: the
  object is there, its length is not told).

Rules can be changed while it runs (`faults`); every request and what was done with it is
kept in `log`. With `answers`, every answer's body is rewritten by it on the way back (a
malformed answer: a field the server sends, missing), and requests go out without
`Accept-Encoding`, so that bodies come back as they are.
"""

from __future__ import annotations

import enum
import http.client
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding"})


class Fault(enum.Enum):
    REFUSE = "refuse"
    DROP_ANSWER = "drop-answer"
    EMPTY_HEAD = "empty-head"


@dataclass(frozen=True)
class Seen:
    """One request the proxy received: its method, path, AWS action (`X-Amz-Target`), and
    the fault injected (None: forwarded and answered)."""

    method: str
    path: str
    action: str
    fault: Fault | None


# A rule: (method, path, AWS action) -> the fault to inject, or None to forward.
Rule = Callable[[str, str, str], Fault | None]


@dataclass
class FaultProxy:
    target: str
    faults: Rule = field(default=lambda method, path, action: None)
    log: list[Seen] = field(default_factory=list)
    answers: Callable[[bytes], bytes] | None = None

    def __post_init__(self) -> None:
        split = urlsplit(self.target)
        self._target_host, self._target_port = split.hostname or "127.0.0.1", split.port or 80
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def redirect(self, target: str | None) -> None:
        """Forward to `target` from now on (a closed port: the service is down), or back to
        the original target (None)."""
        split = urlsplit(target or self.target)
        self._target_host, self._target_port = split.hostname or "127.0.0.1", split.port or 80

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: object) -> None:  # quiet
                return

            def _relay(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                action = self.headers.get("x-amz-target", "")
                fault = proxy.faults(self.command, self.path, action)
                proxy.log.append(Seen(self.command, self.path, action, fault))
                if fault is Fault.REFUSE:
                    self._answer(503, json.dumps({
                        "__type": "ServiceUnavailableException",
                        "message": "the fault proxy refused the request"}).encode(), {})
                    return
                try:
                    status, headers, answer = proxy._forward(self.command, self.path,
                                                             dict(self.headers), body)
                except OSError:  # the target is down: so is the connection
                    self.close_connection = True
                    return
                if fault is Fault.DROP_ANSWER:
                    self.close_connection = True
                    return
                if fault is Fault.EMPTY_HEAD:
                    headers = {**headers, "Content-Length": "0"}
                if proxy.answers is not None:
                    answer = proxy.answers(answer)
                self._answer(status, answer, headers)

            def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    if name.lower() not in {*_HOP_HEADERS, "content-length"}:
                        self.send_header(name, value)
                # A HEAD answer has no body but tells the length of the object's.
                length = {k.lower(): v for k, v in headers.items()}.get("content-length")
                head = self.command == "HEAD" and length is not None
                self.send_header("content-length", length if head else str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _relay

        return Handler

    def _forward(self, method: str, path: str, headers: dict[str, str],
                 body: bytes) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(self._target_host, self._target_port, timeout=30)
        try:
            # The Host header stays the client's: it is part of what SigV4 signed.
            dropped = {*_HOP_HEADERS, *(("accept-encoding",) if self.answers else ())}
            forwarded = {k: v for k, v in headers.items() if k.lower() not in dropped}
            connection.request(method, path, body=body, headers=forwarded)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()
