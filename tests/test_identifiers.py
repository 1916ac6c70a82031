"""One identifier parse and one name validation per request, and one dataset open.

The HTTP layer parses a route's `a$b` into a list; the backend validates the names at its front
door (`backends.core.names`), once per request however many of its helpers ask again, and refuses
bad names when it is used from Python without the server too. DescribeTable opens the table's
dataset once, for the declared check and the detailed metadata together.

The counts come from spies that call through to the real function (the real rules run, the
real dataset opens), on real servers and real backends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import lance
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    DescribeNamespaceRequest,
    InvalidInputError,
    ListNamespacesRequest,
    ListTablesRequest,
)

from backends import load_namespace
from backends.core import names
from tests.support.adapter import running_server
from tests.support.glue import glue_properties
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.plugin_stand_ins import RecordingNamespace

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
STAND_IN = "tests.support.plugin_stand_ins.MetadataOnlyNamespace"
# dir: the native directory backend; glue: a catalog whose own helpers validate again on the
# way to Glue's name rules; the stand-in: a plug-in under PluginNamespace.
KINDS = ("dir", "glue", STAND_IN)
BAD_IDS = ([".."], ["a/b"], ["ok", "x$y"], ["zero\u200bwidth"], [""])


@pytest.fixture
def name_checks(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often the name rules run, by name."""
    counts: Counter[str] = Counter()
    real = names.check_name

    def counting(name: object, kind: str) -> str:
        counts[str(name)] += 1
        return real(name, kind)

    monkeypatch.setattr(names, "check_name", counting)
    return counts


@pytest.fixture
def dataset_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The location of every dataset opened."""
    opened: list[str] = []
    real = lance.dataset

    def counting(uri: Any, *arguments: Any, **keywords: Any) -> Any:
        opened.append(str(uri))
        return real(uri, *arguments, **keywords)

    monkeypatch.setattr(lance, "dataset", counting)
    return opened


@pytest.fixture(params=KINDS, ids=["dir", "glue", "plug-in"])
def client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[httpx.Client]:
    """A real server with namespace `shop` and table `shop$orders` (3 rows)."""
    root = str(tmp_path)
    properties = {"root": root}
    if request.param == "glue":
        properties = glue_properties(request.getfixturevalue("clean_moto").url, root=root)
    with running_server(request.param, properties) as url, \
            httpx.Client(base_url=url, timeout=60) as http:
        assert http.post("/v1/namespace/shop/create", json={}).status_code == 200
        created = http.post("/v1/table/shop$orders/create", headers=ARROW,
                            content=arrow_stream(sample_table(3)))
        assert created.status_code == 200, created.text
        yield http


REQUESTS = (
    ("POST", "/v1/table/shop$orders/describe", {"json": {}}),
    ("POST", "/v1/table/shop$orders/describe",
     {"json": {}, "params": {"load_detailed_metadata": "true", "check_declared": "true"}}),
    ("POST", "/v1/table/shop$orders/count_rows", {"json": {}}),
    ("POST", "/v1/table/shop$orders/insert",
     {"headers": ARROW, "content": arrow_stream(sample_table(2, start=3))}),
    ("POST", "/DescribeNamespace", {"json": {"id": ["shop"]}}),
    ("POST", "/v1/table/shop$orders/tags/list", {"json": {}}),
)


@pytest.mark.parametrize(("method", "path", "body"), REQUESTS,
                         ids=[f"{m} {p}#{i}" for i, (m, p, _) in enumerate(REQUESTS)])
def test_each_name_of_a_request_is_validated_once(
    client: httpx.Client, name_checks: Counter[str], method: str, path: str,
    body: dict[str, Any],
) -> None:
    name_checks.clear()
    answer = client.request(method, path, **body)
    assert answer.status_code < 300, answer.text
    expected = {"shop": 1, "orders": 1} if "orders" in path else {"shop": 1}
    assert dict(name_checks) == expected


def test_describe_table_opens_the_dataset_once(
    client: httpx.Client, dataset_opens: list[str]
) -> None:
    described = client.post("/v1/table/shop$orders/describe", json={}, params={
        "load_detailed_metadata": "true", "check_declared": "true"})
    assert described.status_code == 200, described.text
    assert described.json()["is_only_declared"] is False
    assert described.json()["version"] == 1
    # The table itself (`dir`'s catalog, its `__manifest`, is read on a worker's first lookup).
    assert len([uri for uri in dataset_opens if "orders" in uri]) <= 1, dataset_opens


def test_bad_names_are_refused_through_the_server_before_the_backend(tmp_path: Path) -> None:
    recording = "tests.support.plugin_stand_ins.RecordingNamespace"
    with running_server(recording, {"name": "bad-names"}) as url:
        for bad in BAD_IDS:
            answer = httpx.post(f"{url}/DescribeNamespace", json={"id": bad})
            assert answer.status_code == 400 and answer.json()["code"] == 13, (bad, answer.text)
        assert RecordingNamespace.instances["bad-names"].received == []


def test_a_backend_used_from_python_refuses_bad_names(tmp_path: Path) -> None:
    directory = load_namespace("dir", {"root": str(tmp_path)})
    plugin = load_namespace("tests.support.plugin_stand_ins.RecordingNamespace",
                            {"name": "from-python"})
    for bad in BAD_IDS:
        with pytest.raises(InvalidInputError, match=r"^identifier part"):
            directory.create_namespace(CreateNamespaceRequest(id=bad))
        with pytest.raises(InvalidInputError, match=r"^identifier part"):
            directory.list_tables(ListTablesRequest(id=bad))
        with pytest.raises(InvalidInputError, match=r"^identifier part"):
            plugin.describe_namespace(DescribeNamespaceRequest(id=bad))
    assert RecordingNamespace.instances["from-python"].received == []
    assert list(tmp_path.iterdir()) == []


def test_a_name_reaches_the_backend_in_one_unicode_form(tmp_path: Path) -> None:
    decomposed, composed = "cafe\u0301", "caf\u00e9"
    directory = load_namespace("dir", {"root": str(tmp_path)})
    directory.create_namespace(CreateNamespaceRequest(id=[decomposed]))
    described = directory.describe_namespace(DescribeNamespaceRequest(id=[composed]))
    assert described is not None
    assert directory.list_namespaces(ListNamespacesRequest(id=[])).namespaces == [composed]
