"""Request bodies over real sockets: a read deadline; limits on what a body may decode to (an
Arrow stream's bytes after decompression, its rows, columns and nesting; JSON's size and
nesting); and a cap on the body bytes one process holds, counted as they arrive and before they
are decoded, never from a declared length. A slow, oversized or refused client is answered and
its connection released; nothing it sent reaches the root."""

from __future__ import annotations

import json
import random
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pyarrow as pa
import pytest
from lance_namespace import InvalidInputError

from app.arrow_limits import ArrowLimits, check_arrow_body
from tests.support.cli import start_adapter
from tests.support.lance_data import (
    arrow_stream,
    error_code,
    sample_table,
    tree_snapshot,
    zeros_stream,
)

ARROW_STREAM = "application/vnd.apache.arrow.stream"
ARROW = {"content-type": ARROW_STREAM}
READ_TIMEOUT = 1.0
MAX_BODY = 1024 * 1024
MAX_JSON = 64 * 1024
MAX_CONTAINERS = 1000
# One insert of ROWS (its body plus what it decodes to) fits, and a little more.
MAX_IN_FLIGHT = 2 * MAX_BODY + MAX_BODY // 2
MAX_ROWS = 50_000
MAX_COLUMNS = 64
MAX_DEPTH = 8
ROWS = 16_000  # about 830 KB as an Arrow stream
INSERT_PATH = "/v1/table/ns$t/insert"
MISSING_PATH = "/v1/table/ns$missing/insert"  # a probe: 404 from the backend, or refused
# The same, with a body read whole (an insert decodes a message only when it writes it).
MISSING_WHOLE = "/v1/table/ns$missing/merge_insert?on=c0"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """`lance-adapter serve` (as deployed: its refusals reach a client still sending)."""
    tmp = tmp_path_factory.mktemp("bodies")
    root = tmp / "root"
    settings = {"body_read_timeout": READ_TIMEOUT, "max_body_bytes": MAX_BODY,
                "max_json_body_bytes": MAX_JSON, "max_json_containers": MAX_CONTAINERS,
                "max_in_flight_body_bytes": MAX_IN_FLIGHT,
                "max_arrow_rows": MAX_ROWS, "max_arrow_columns": MAX_COLUMNS,
                "max_nesting_depth": MAX_DEPTH, "workers": 1, "access_log": False}
    environment = {f"LANCE_ADAPTER_{name.upper()}": str(value)
                   for name, value in settings.items()}
    adapter = start_adapter(tmp, "--impl", "dir", "--prop", f"root={root}", **environment)
    try:
        url = adapter.url
        httpx.post(f"{url}/v1/namespace/ns/create", json={}).raise_for_status()
        httpx.post(f"{url}{INSERT_PATH.replace('insert', 'create')}",
                   content=arrow_stream(sample_table(3)), headers=ARROW).raise_for_status()
        yield url, root
    finally:
        assert adapter.stopped_cleanly()


def _open_body(url: str, declared: int | None, first_bytes: bytes = b"",
               path: str = INSERT_PATH) -> socket.socket:
    """A connection that sent the request head and `first_bytes` of its body, and waits."""
    host, port = url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=30)
    length = f"content-length: {declared}" if declared is not None else \
        "transfer-encoding: chunked"
    head = (f"POST {path} HTTP/1.1\r\nhost: {host}\r\n"
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


def _post(url: str, path: str, body: bytes, headers: dict[str, str] | None = None
          ) -> httpx.Response:
    return httpx.post(f"{url}{path}", content=body, headers=headers or ARROW, timeout=30)


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


def _count(url: str) -> int:
    return json.loads(httpx.post(f"{url}/v1/table/ns$t/count_rows", json={}, timeout=30).text)


def test_a_declared_length_reserves_nothing(served: tuple[str, Path]) -> None:
    """Heads declaring the largest body, sent without it, lock nobody out."""
    url, _ = served
    rows = _count(url)
    holders = [_open_body(url, MAX_BODY) for _ in range(4)]
    try:
        assert 4 * MAX_BODY > MAX_IN_FLIGHT
        inserted = _post(url, INSERT_PATH, arrow_stream(sample_table(ROWS)))
        assert inserted.status_code == 200, inserted.text
        assert httpx.post(f"{url}/v1/table/ns$t/exists", json={}).status_code == 200
    finally:
        for holder in holders:
            holder.close()
    assert _count(url) == rows + ROWS


@pytest.mark.parametrize(("path", "content_type", "declared", "limit"), [
    (INSERT_PATH, ARROW_STREAM, MAX_BODY + 1, "max_body_bytes"),
    ("/v1/table/ns$t/exists", "application/json", MAX_JSON + 1, "max_json_body_bytes"),
])
def test_a_declared_length_over_the_limit_is_refused_at_once(
    served: tuple[str, Path], path: str, content_type: str, declared: int, limit: str
) -> None:
    url, root = served
    before = tree_snapshot(root)
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=READ_TIMEOUT / 2) as connection:
        connection.sendall(f"POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: "
                           f"{content_type}\r\ncontent-length: {declared}\r\n\r\n".encode())
        status, headers, body = _read_answer(connection)  # before the body deadline
    assert (status, error_code(body), headers["connection"]) == (413, 13, "close")
    assert limit in json.loads(body)["error"]
    assert tree_snapshot(root) == before


def _until_refused(url: str, body: bytes, deadline: float) -> httpx.Response:
    """The answer to `body` sent to the missing table, once it is refused (or the deadline)."""
    while (answer := _post(url, MISSING_PATH, body)).status_code == 404:
        assert time.monotonic() < deadline, "the held bytes were never counted"
        time.sleep(0.05)
    return answer


def test_bytes_that_arrived_and_bytes_to_decode_count_against_the_cap(
    served: tuple[str, Path],
) -> None:
    url, root = served
    before, rows = tree_snapshot(root), _count(url)
    body = arrow_stream(sample_table(ROWS))
    small_compressed = zeros_stream(14_000, columns=8)  # decodes to 896,000 bytes
    assert len(small_compressed) < 10_000
    # Bodies held whole (CreateTable's; an insert reads its body as it arrives).
    holders = [_open_body(url, MAX_BODY, b"\0" * 1_000_000, "/v1/table/ns$held/create")
               for _ in range(2)]
    try:
        answer = _until_refused(url, body, time.monotonic() + 30)
        refused = [answer, *(_post(url, INSERT_PATH, body) for _ in range(2)),
                   _post(url, MISSING_WHOLE, small_compressed)]
        assert [answer.status_code for answer in refused] == [503] * 4
        assert all(error_code(answer.text) == 17 for answer in refused)
        assert all(answer.headers["retry-after"] == "1" for answer in refused)
        assert httpx.post(f"{url}/v1/table/ns$t/exists", json={}).status_code == 200
        chunked = _open_body(url, None, f"{len(body):x}\r\n".encode() + body + b"\r\n")
        chunked.settimeout(30)
        status, headers, answer_body = _read_answer(chunked)  # reserved as its chunks arrived
        assert (status, headers.get("retry-after"), error_code(answer_body)) == (503, "1", 17)
        assert tree_snapshot(root) == before
    finally:
        for holder in holders:
            holder.close()  # a disconnect gives its reservation back
    deadline = time.monotonic() + READ_TIMEOUT + 20
    while (answer := _post(url, INSERT_PATH, body)).status_code == 503:
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.05)
    assert answer.status_code == 200, answer.text
    assert _post(url, MISSING_WHOLE, small_compressed).status_code == 404
    assert _count(url) == rows + ROWS


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
@pytest.mark.parametrize("path", [INSERT_PATH, "/InsertIntoTable?id=ns$t",
                                  "/v1/table/ns$new/create",
                                  "/v1/table/ns$t/merge_insert?on=c0"])
def test_a_stream_that_decodes_past_the_limit_is_refused(
    served: tuple[str, Path], codec: str, path: str
) -> None:
    url, root = served
    before = tree_snapshot(root)
    bomb = zeros_stream(8192, columns=32, codec=codec)  # 2 MiB once decoded
    assert len(bomb) < MAX_BODY // 4
    answer = _post(url, path, bomb)
    assert answer.status_code == 413, answer.text
    assert error_code(answer.text) == 13
    assert "decodes (decompressed) to more than" in answer.json()["error"]
    assert tree_snapshot(root) == before


def _nested(depth: int) -> pa.Table:
    """One column nested `depth` levels deep (a struct of a struct ... of an int)."""
    column: pa.Array = pa.array([1, 2])
    for _ in range(depth - 1):
        column = pa.StructArray.from_arrays([column], ["inner"])
    return pa.table({"nested": column})


def _wide(columns: int) -> pa.Table:
    return pa.table({f"c{index}": pa.array([1, 2]) for index in range(columns)})


def _wide_struct(children: int) -> pa.Table:
    """One struct column with `children` fields: 1 + children columns, nested ones count."""
    struct = pa.StructArray.from_arrays([pa.array([1, 2])] * children,
                                        [f"f{index}" for index in range(children)])
    return pa.table({"s": struct})


def _rows(rows: int) -> pa.Table:
    return pa.table({"b": pa.array(np.zeros(rows, np.int8))})


LIMITED = {
    "rows": (_rows, MAX_ROWS, 413, "more than 50000 rows"),
    "columns": (_wide, MAX_COLUMNS, 400, "more than 64 columns"),
    "nested columns": (_wide_struct, MAX_COLUMNS - 1, 400, "more than 64 columns"),
    "depth": (_nested, MAX_DEPTH, 400, "nests deeper than 8 levels"),
}


@pytest.mark.parametrize("case", sorted(LIMITED))
def test_rows_columns_and_depth_are_limited(served: tuple[str, Path], case: str) -> None:
    url, root = served
    make, limit, status, message = LIMITED[case]
    before = tree_snapshot(root)
    table = case.replace(" ", "_")
    answer = _post(url, f"/v1/table/ns${table}/create", arrow_stream(make(limit + 1)))
    assert answer.status_code == status, answer.text
    assert error_code(answer.text) == 13
    assert message in answer.json()["error"]
    assert tree_snapshot(root) == before
    at_limit = _post(url, f"/v1/table/ns${table}/create", arrow_stream(make(limit)))
    assert at_limit.status_code == 200, at_limit.text


def _nested_json(depth: int) -> bytes:
    """A DescribeTable body `depth` levels deep (its `context` holds the nesting)."""
    return b'{"context": {"k": ' + b"[" * (depth - 2) + b"]" * (depth - 2) + b"}}"


def test_json_past_its_size_containers_and_depth_is_refused(served: tuple[str, Path]) -> None:
    url, root = served
    before = tree_snapshot(root)
    json_headers = {"content-type": "application/json"}
    big = b'{"context": {"k": "' + b"x" * MAX_JSON + b'"}}'

    def chunks() -> Iterator[bytes]:
        yield from (big[start:start + 4096] for start in range(0, len(big), 4096))

    too_big = [_post(url, "/v1/table/ns$t/describe", big, json_headers),
               httpx.post(f"{url}/v1/table/ns$t/describe", content=chunks(),
                          headers=json_headers, timeout=30)]
    for answer in too_big:
        assert (answer.status_code, error_code(answer.text)) == (413, 13), answer.text
        assert "max_json_body_bytes" in answer.json()["error"]
    # One more object or array than the limit: 2 objects and a list around the inner lists.
    many = b'{"context": {"k": [' + b",".join([b"[]"] * (MAX_CONTAINERS - 2)) + b"]}}"
    too_many = _post(url, "/v1/table/ns$t/describe", many, json_headers)
    assert too_many.status_code == 400, too_many.text
    assert "more than 1000 JSON objects and arrays" in too_many.json()["error"]
    at_most = _post(url, "/v1/table/ns$t/describe", many.replace(b"[],", b"", 1), json_headers)
    assert "JSON objects and arrays" not in at_most.text
    too_deep = _post(url, "/v1/table/ns$t/describe", _nested_json(MAX_DEPTH + 1), json_headers)
    assert (too_deep.status_code, error_code(too_deep.text)) == (400, 13)
    assert "nests deeper than 8 levels" in too_deep.json()["error"]
    at_limit = _post(url, "/v1/table/ns$t/describe", _nested_json(MAX_DEPTH), json_headers)
    assert "nests deeper" not in at_limit.text
    assert tree_snapshot(root) == before


def test_broken_arrow_metadata_is_an_input_error_never_a_crash() -> None:
    """Seeded byte flips in a compressed stream's metadata and body: each either decodes or is
    an input error (so a 4xx), never another exception."""
    stream = bytearray(zeros_stream(1000, columns=3))
    limits = ArrowLimits(MAX_BODY, MAX_ROWS, MAX_COLUMNS, MAX_DEPTH)
    generator = random.Random(11)
    outcomes = {"decoded": 0, "refused": 0}
    for _ in range(400):
        broken = bytearray(stream)
        for _ in range(generator.randint(1, 4)):
            broken[generator.randrange(len(broken))] = generator.randrange(256)
        try:
            check_arrow_body(bytes(broken), limits, lambda _: None)
            outcomes["decoded"] += 1
        except InvalidInputError:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 100, outcomes
