"""The hostile-client reproductions of issue 11 on --impl dir, over HTTP: every one answers a
4xx with the spec's code and leaves the root's file tree exactly as it was. And request heads
that never complete, or never end, on both of uvicorn's HTTP protocols: closed at a deadline."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
import uvicorn

from app.config import load_settings
from app.connections import (
    LINGER_SECONDS,
    H11HeadProtocol,
    HttpToolsHeadProtocol,
    uvicorn_options,
)
from app.server import create_app
from app.settings import Settings
from backends import load_namespace
from backends.core.settings import ConfigurationError
from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, sample_table, tree_snapshot

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
SECRET = "server-secret-value-123"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("safety-root")


@pytest.fixture(scope="module")
def client(root: Path) -> Iterator[httpx.Client]:
    properties = {"root": str(root), "storage.aws_secret_access_key": SECRET}
    with running_server("dir", properties) as url, httpx.Client(base_url=url, timeout=60) as http:
        assert http.post("/v1/namespace/ns/create", json={}).status_code == 200
        for table in ("ns$t", "u"):
            created = http.post(f"/v1/table/{table}/create", headers=ARROW,
                                content=arrow_stream(sample_table(3)))
            assert created.status_code == 200, created.text
        yield http


def _location_of(client: httpx.Client, table: str) -> str:
    return client.post(f"/v1/table/{table}/describe", json={}).json()["location"]


def _relative(root: Path, location: str) -> str:
    return location.removeprefix("file://").removeprefix(str(root)).lstrip("/")


def _refused(client: httpx.Client, root: Path, code: int, method: str, url: str,
             **body: object) -> httpx.Response:
    before = tree_snapshot(root)
    answer = client.request(method, url, **body)
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.json()["code"] == code, answer.text
    assert tree_snapshot(root) == before
    assert str(root) not in answer.text and "backtrace" not in answer.text
    return answer


def _count(client: httpx.Client, table: str) -> int:
    answer = client.post(f"/v1/table/{table}/count_rows", json={})
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.mark.parametrize("location", ["", ".", "./", "__manifest", "__manifest/x", "..",
                                      "%2E%2E", "nowhere", "/etc"])
def test_register_refuses_the_root_the_catalog_and_missing_data(
    client: httpx.Client, root: Path, location: str
) -> None:
    _refused(client, root, 13, "POST", "/v1/table/alias/register", json={"location": location})
    assert _count(client, "ns$t") == 3


def test_register_refuses_another_tables_directory(client: httpx.Client, root: Path) -> None:
    for table in ("ns$t", "u"):
        owned = _relative(root, _location_of(client, table))
        for location in (owned, f"{owned}/", f"./{owned}", _location_of(client, table)):
            _refused(client, root, 13, "POST", "/v1/table/alias/register",
                     json={"location": location})
        assert _count(client, table) == 3


def test_a_one_part_id_holding_the_delimiter_is_refused(client: httpx.Client, root: Path):
    _refused(client, root, 13, "POST", "/v1/table/ns%24t/drop?delimiter=.")
    _refused(client, root, 13, "POST", "/DropTable", json={"id": ["ns$t"]})
    assert _count(client, "ns$t") == 3


def test_answers_never_carry_the_servers_credentials(client: httpx.Client) -> None:
    answers = [
        client.post("/v1/table/ns$c/create", headers=ARROW, content=arrow_stream(sample_table(1))),
        client.post("/v1/table/ns$c/describe", json={}),
        client.post("/v1/table/ns$dd/declare", json={}),
        client.post("/CreateTable?id=ns$c2", headers=ARROW, content=arrow_stream(sample_table(1))),
    ]
    for answer in answers:
        assert answer.status_code == 200, answer.text
        assert SECRET not in answer.text


@pytest.mark.parametrize("options", [
    '{"aws_endpoint":"http://127.0.0.1:9","allow_http":"true"}',
    '{"aws_access_key_id":"x","aws_secret_access_key":"y"}',
    '{"region":"elsewhere"}', '{"aws_virtual_hosted_style_request":"true"}', '"text"',
])
def test_client_storage_options_cannot_redirect_the_server(
    client: httpx.Client, root: Path, options: str
) -> None:
    _refused(client, root, 13, "POST", f"/v1/table/ns$ssrf/create?storage_options={options}",
             headers=ARROW, content=arrow_stream(sample_table(1)))


def test_bad_queries_are_input_errors(client: httpx.Client, root: Path) -> None:
    vector = {"single_vector": [0.0] * 8}
    for body in ({"predicate": "nonexistent > 1"}, {"predicate": "id >>> 1"}):
        _refused(client, root, 13, "POST", "/v1/table/ns$t/count_rows", json=body)
    for extra in ({"filter": "bad sql ((("}, {"filter": "nope = 1"},
                  {"columns": {"column_names": ["nope"]}}):
        _refused(client, root, 13, "POST", "/v1/table/ns$t/query",
                 json={"k": 3, "vector": vector, **extra})


def test_bad_data_is_refused(client: httpx.Client, root: Path) -> None:
    ids = pa.array([1, 2], pa.int64())
    duplicate = arrow_stream(pa.table([ids, ids], names=["id", "id"]))
    _refused(client, root, 13, "POST", "/v1/table/ns$dup/create", headers=ARROW,
             content=duplicate)
    _refused(client, root, 20, "POST", "/v1/table/ns$t/insert", headers=ARROW,
             content=arrow_stream(pa.table({"z": [1]})))


def test_a_table_is_created_from_a_schema_alone(client: httpx.Client) -> None:
    created = client.post("/v1/table/ns$empty/create", headers=ARROW,
                          content=arrow_stream(sample_table(0)))
    assert created.status_code == 200, created.text
    assert client.post("/v1/table/ns$empty/count_rows", json={}).json() == 0
    described = client.post("/v1/table/ns$empty/describe", json={"load_detailed_metadata": True})
    names = [field["name"] for field in described.json()["schema"]["fields"]]
    assert names == sample_table(0).column_names


def test_names_the_file_system_cannot_hold_are_refused(client: httpx.Client, root: Path):
    data = arrow_stream(sample_table(1))
    _refused(client, root, 13, "POST", f"/v1/table/ns${'a' * 250}/create", headers=ARROW,
             content=data)
    _refused(client, root, 13, "POST", f"/v1/table/{'b' * 250}/create", headers=ARROW,
             content=data)


def test_a_declared_table_without_data_is_in_an_invalid_state(client: httpx.Client):
    assert client.post("/v1/table/ns$decl/declare", json={}).status_code == 200
    answer = client.post("/v1/table/ns$decl/count_rows", json={})
    assert (answer.status_code, answer.json()["code"]) == (409, 19)


# Request heads: uvicorn's protocols with the head deadline and size limit of app.connections,
# served in this process so that both protocols (httptools, which `serve` runs, and h11, its
# fallback) are checked.
HEAD_TIMEOUT = 1.0
MAX_HEADER_BYTES = 16 * 1024
PROTOCOLS = {"httptools": HttpToolsHeadProtocol, "h11": H11HeadProtocol}


@contextlib.contextmanager
def _serving_with(protocol: type[asyncio.Protocol], root: Path) -> Iterator[tuple[str, int]]:
    """The adapter on `protocol`, as `lance-adapter serve` configures uvicorn."""
    settings = Settings(properties={"root": str(root)}, header_read_timeout=HEAD_TIMEOUT,
                        max_header_bytes=MAX_HEADER_BYTES)
    with _uvicorn(settings, handed_over=False, http=protocol) as (address, _):
        yield address


@contextlib.contextmanager
def _uvicorn(
    settings: Settings, handed_over: bool, **options: Any
) -> Iterator[tuple[tuple[str, int], uvicorn.Server]]:
    """The adapter on uvicorn in this process with `lance-adapter serve`'s protocol options;
    its listening socket given as `fd=` (`handed_over`, as `serve` does) or as a socket."""
    app = create_app(load_namespace("dir", settings.properties), settings)
    listener = socket.create_server(("127.0.0.1", 0))
    if handed_over:
        options["fd"] = listener.fileno()
    config = uvicorn.Config(app, lifespan="off", log_level="warning",
                            **{**uvicorn_options(settings), **options})
    server = uvicorn.Server(config)
    sockets = None if handed_over else [listener]
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the adapter did not start"
        time.sleep(0.01)
    try:
        yield listener.getsockname(), server
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        listener.close()


@pytest.fixture(scope="module", params=sorted(PROTOCOLS))
def head_server(request: pytest.FixtureRequest, root: Path) -> Iterator[tuple[str, int]]:
    with _serving_with(PROTOCOLS[request.param], root) as address:
        yield address


def _until_closed(connection: socket.socket, started: float) -> tuple[bytes, float]:
    """Everything the server sent until it closed the connection, and when it closed it."""
    connection.settimeout(HEAD_TIMEOUT + 20)
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received, time.monotonic() - started


def _status_and_code(answer: bytes) -> tuple[int, int]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)["code"]


def test_a_connection_that_sends_nothing_is_closed(head_server: tuple[str, int]) -> None:
    host, port = head_server
    with socket.create_connection((host, port)) as connection:
        received, elapsed = _until_closed(connection, time.monotonic())
    assert received == b""
    assert HEAD_TIMEOUT * 0.9 <= elapsed < HEAD_TIMEOUT + 20


def test_a_trickled_head_is_answered_408_at_its_deadline(
    head_server: tuple[str, int],
) -> None:
    """The deadline runs from the head's first byte; more bytes do not extend it."""
    host, port = head_server
    with socket.create_connection((host, port)) as connection:
        started = time.monotonic()
        connection.sendall(b"POST /v1/namespace/ns/create HTTP/1.1\r\nhost: x\r\n")
        connection.settimeout(HEAD_TIMEOUT / 5)
        answer = b""
        while not answer and time.monotonic() - started < HEAD_TIMEOUT + 20:
            try:
                connection.sendall(b"x")
                answer = connection.recv(65536)
            except TimeoutError:
                continue
        rest, elapsed = _until_closed(connection, started)
    assert _status_and_code(answer + rest) == (408, 13)
    assert HEAD_TIMEOUT * 0.9 <= elapsed < HEAD_TIMEOUT + 20


def test_the_next_head_on_a_kept_alive_connection_has_its_own_deadline(
    head_server: tuple[str, int],
) -> None:
    host, port = head_server
    with socket.create_connection((host, port)) as connection:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        connection.settimeout(10)
        first = connection.recv(65536)
        assert first.startswith(b"HTTP/1.1 200"), first
        started = time.monotonic()
        connection.sendall(b"GET /healthz HTTP/1.1\r\n")
        answer, elapsed = _until_closed(connection, started)
    assert _status_and_code(answer) == (408, 13)
    assert HEAD_TIMEOUT * 0.9 <= elapsed < HEAD_TIMEOUT + 20


def test_a_head_past_the_limit_is_refused_at_once(head_server: tuple[str, int]) -> None:
    """431 while the client still sends its head; the answer reaches it before the close."""
    host, port = head_server
    with socket.create_connection((host, port)) as connection:
        started = time.monotonic()
        connection.sendall(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        header = b"x-padding: " + b"a" * 1000 + b"\r\n"
        with contextlib.suppress(OSError):  # the server stops reading once it has answered
            connection.settimeout(5)
            for _ in range(4 * MAX_HEADER_BYTES // len(header)):
                connection.sendall(header)
        answer, elapsed = _until_closed(connection, started)
    assert _status_and_code(answer) == (431, 13)
    assert elapsed < HEAD_TIMEOUT + LINGER_SECONDS + 20


def test_complete_heads_are_served_as_before(head_server: tuple[str, int]) -> None:
    host, port = head_server
    header = {"x-padding": "a" * (MAX_HEADER_BYTES // 2)}
    with httpx.Client(base_url=f"http://{host}:{port}", timeout=30) as http:
        for _ in range(3):
            assert http.get("/healthz", headers=header).status_code == 200
            assert http.post("/v1/table/ns$t/exists", json={}).status_code == 200


@pytest.mark.parametrize(("name", "value"), [
    ("max_json_body_bytes", 0), ("max_json_containers", 0), ("max_nesting_depth", 0),
    ("max_arrow_rows", 0), ("max_arrow_columns", 0), ("max_header_bytes", 0),
    ("header_read_timeout", -1),
])
def test_limits_that_would_refuse_everything_stop_the_start(name: str, value: int) -> None:
    with pytest.raises(ConfigurationError, match=name):
        load_settings(environ={}, overrides={name: value})
    assert getattr(load_settings(environ={}, overrides={name: value + 1}), name) == value + 1


def test_connections_of_the_socket_serve_hands_over_send_without_delay(root: Path) -> None:
    """`lance-adapter serve` hands uvicorn its listening socket as `fd=`, which uvicorn opens
    as a Unix socket; the event loop then left Nagle's algorithm on for every connection, and
    each answer on a kept-alive connection waited about 40 ms for the client's delayed ACK."""
    settings = Settings(properties={"root": str(root)})
    with (
        _uvicorn(settings, handed_over=True) as ((host, port), server),
        httpx.Client(base_url=f"http://{host}:{port}", timeout=10) as kept_alive,
    ):
        assert kept_alive.get("/healthz").status_code == 200
        sockets = [connection.transport.get_extra_info("socket")
                   for connection in server.server_state.connections]
        assert sockets, "the kept-alive connection is open"
        assert all(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in sockets)
