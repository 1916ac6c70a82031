"""The ceiling for `bench/rest_adapter_bench.py`: an ASGI app on uvicorn that answers every
request with one JSON body held in memory, so what it measures is uvicorn and the socket."""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

BODY = b'{"location":"/data/ns0/t0.lance","version":1,"storage_options":{}}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})
