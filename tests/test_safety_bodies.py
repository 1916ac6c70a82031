"""Request bodies over real sockets: a read deadline, and a cap on the body bytes one process
holds at once. A slow or refused client is answered and its connection released; nothing it
sent reaches the root."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, error_code, sample_table, tree_snapshot

ARROW_STREAM = "application/vnd.apache.arrow.stream"
READ_TIMEOUT = 1.0
MAX_BODY = 1024 * 1024
MAX_IN_FLIGHT = MAX_BODY + MAX_BODY // 2
ROWS = 16_000  # about 830 KB as an Arrow stream
INSERT_PATH = "/v1/table/ns$t/insert"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("bodies-root")
    settings = {"body_read_timeout": READ_TIMEOUT, "max_body_bytes": MAX_BODY,
                "max_in_flight_body_bytes": MAX_IN_FLIGHT}
    with running_server("dir", {"root": str(root)}, **settings) as url:
        httpx.post(f"{url}/v1/namespace/ns/create", json={}).raise_for_status()
        httpx.post(f"{url}{INSERT_PATH.replace('insert', 'create')}",
                   content=arrow_stream(sample_table(3)),
                   headers={"content-type": ARROW_STREAM}).raise_for_status()
        yield url, root


def _open_body(url: str, declared: int | None, first_bytes: bytes = b"") -> socket.socket:
    """A connection that sent the request head and `first_bytes` of its body, and waits."""
    host, port = url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=30)
    length = f"content-length: {declared}" if declared is not None else \
        "transfer-encoding: chunked"
    head = (f"POST {INSERT_PATH} HTTP/1.1\r\nhost: {host}\r\n"
            f"content-type: {ARROW_STREAM}\r\n{length}\r\n\r\n")
    connection.sendall(head.encode() + first_bytes)
    return connection


def _read_answer(connection: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of the one answer; then the server must close the socket."""
    received = b""
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            break
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def test_a_trickling_client_gets_408_within_the_deadline(served: tuple[str, Path]) -> None:
    url, root = served
    before = tree_snapshot(root)
    connection = _open_body(url, 10_000)
    start = time.monotonic()
    connection.settimeout(0.2)
    status = None
    while status is None and time.monotonic() - start < READ_TIMEOUT + 10:
        try:
            connection.sendall(b"x")
            data = connection.recv(65536, socket.MSG_PEEK)
            if data:
                status = int(data.split()[1])
        except TimeoutError:
            continue
    elapsed = time.monotonic() - start
    assert status == 408
    assert READ_TIMEOUT * 0.9 <= elapsed < READ_TIMEOUT + 10
    connection.settimeout(10)
    _, headers, body = _read_answer(connection)  # returns only once the server closed it
    assert headers["connection"] == "close"
    assert error_code(body) == 13
    assert tree_snapshot(root) == before


def test_forty_slow_connections_are_all_released(served: tuple[str, Path]) -> None:
    url, root = served
    before = tree_snapshot(root)
    connections = [_open_body(url, 5_000, b"partial") for _ in range(40)]
    start = time.monotonic()
    answers = []
    for connection in connections:
        connection.settimeout(READ_TIMEOUT + 20)
        answers.append(_read_answer(connection))
        connection.close()
    assert time.monotonic() - start < READ_TIMEOUT + 20
    assert [status for status, _, _ in answers] == [408] * 40
    assert all(error_code(body) == 13 for _, _, body in answers)
    assert httpx.post(f"{url}/v1/table/ns$t/exists", json={}, timeout=10).status_code == 200
    assert tree_snapshot(root) == before


def _insert(url: str, body: bytes) -> httpx.Response:
    return httpx.post(f"{url}{INSERT_PATH}", content=body,
                      headers={"content-type": ARROW_STREAM}, timeout=30)


def test_bodies_past_the_in_flight_cap_get_503_and_nothing_is_written(
    served: tuple[str, Path],
) -> None:
    url, root = served
    before = tree_snapshot(root)
    body = arrow_stream(sample_table(ROWS))
    assert MAX_IN_FLIGHT // 2 < len(body) <= MAX_BODY
    holder = _open_body(url, len(body), body[:1000])  # reserves its declared size
    time.sleep(0.3)
    refused = [_insert(url, body) for _ in range(3)]
    assert [answer.status_code for answer in refused] == [503] * 3
    assert all(error_code(answer.text) == 17 for answer in refused)
    assert all(answer.headers["retry-after"] == "1" for answer in refused)
    chunked = _open_body(url, None, f"{len(body):x}\r\n".encode() + body + b"\r\n")
    chunked.settimeout(30)
    status, headers, answer = _read_answer(chunked)  # reserved as its chunks arrived
    assert (status, headers.get("retry-after"), error_code(answer)) == (503, "1", 17)
    assert tree_snapshot(root) == before
    holder.close()  # a disconnect gives its reservation back
    deadline = time.monotonic() + READ_TIMEOUT + 20
    while (answer := _insert(url, body)).status_code == 503 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert answer.status_code == 200, answer.text
    count = httpx.post(f"{url}/v1/table/ns$t/count_rows", json={}, timeout=30)
    assert json.loads(count.text) == 3 + ROWS
