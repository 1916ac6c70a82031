"""The hostile-client reproductions of issue 11 on --impl dir, over HTTP: every one answers a
4xx with the spec's code and leaves the root's file tree exactly as it was."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
import pytest

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
    _refused(client, root, 13, "POST", "/v1/table/ns$empty/create", headers=ARROW,
             content=arrow_stream(sample_table(0)))
    _refused(client, root, 20, "POST", "/v1/table/ns$t/insert", headers=ARROW,
             content=arrow_stream(pa.table({"z": [1]})))


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
