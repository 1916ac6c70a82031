"""CloneTable (LanceDB's `clone_table`) on the directory backend, as a hostile caller and an
operator would meet it: the source is named by its location, and the caller needs read access
to the table that location belongs to; a location no table of the server records is refused;
a shallow clone reads its source's files in place, so once cloned the source's data is never
deleted (DropTable deregisters it), its versions are neither removed by maintenance nor
deleted on request, and a root table's rename (which would move them) is refused; keys are
not vended for a shallow clone (its location's keys could not read it). A deep clone copies
and depends on nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import lance
import pyarrow as pa
import pytest

from backends import load_namespace
from backends.maintenance import MaintenancePolicy, maintain_all
from tests.support.adapter import serving_identities
from tests.support.lance_data import arrow_stream, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
TOKENS = {"admin": "tok-admin", "sales": "tok-sales", "sales_hr": "tok-sales-hr"}
ACCESS = {"admin": "admin", "sales": "write@sales", "sales_hr": "write@sales, read@hr"}


def _as(who: str) -> dict[str, str]:
    return {"authorization": f"Bearer {TOKENS[who]}"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A `dir` server with token auth; `hr$payroll` holds two versions (3, then 5 rows)."""
    root = tmp_path / "root"
    with serving_identities(tmp_path, TOKENS, ACCESS) as url:
        for namespace in ("sales", "hr"):
            httpx.post(f"{url}/v1/namespace/{namespace}/create", json={},
                       headers=_as("admin")).raise_for_status()
        _post(url, "table/hr$payroll/create", "admin", sample_table(3))
        _post(url, "table/hr$payroll/insert", "admin", sample_table(2, start=3))
        yield url, root


def _post(url: str, path: str, who: str, body: pa.Table | dict[str, Any]) -> httpx.Response:
    if isinstance(body, pa.Table):
        answer = httpx.post(f"{url}/v1/{path}", content=arrow_stream(body),
                            headers={**_as(who), **ARROW}, timeout=30)
    else:
        answer = httpx.post(f"{url}/v1/{path}", json=body, headers=_as(who), timeout=30)
    return answer


def _location(url: str, table: str) -> str:
    return _post(url, f"table/{table}/describe", "admin", {}).json()["location"]


def _count(url: str, table: str) -> int:
    answer = _post(url, f"table/{table}/count_rows", "admin", {})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_clone_needs_read_access_to_the_table_its_source_location_belongs_to(
    served: tuple[str, Path],
) -> None:
    url, root = served
    source = {"source_location": _location(url, "hr$payroll"), "source_version": 1}
    refused = _post(url, "table/sales$copy/clone", "sales", source)
    assert (refused.status_code, refused.json()["code"]) == (403, 15), refused.text
    assert "read" in refused.json()["error"]
    assert _post(url, "table/sales$copy/exists", "admin", {}).status_code == 404

    cloned = _post(url, "table/sales$copy/clone", "sales_hr", source)
    assert cloned.status_code == 200, cloned.text
    assert _count(url, "sales$copy") == 3

    # A location no table of the server records, and a source_id that is not the location's.
    for body in ({"source_location": str(root / "elsewhere")},
                 {"source_location": _location(url, "hr$payroll"),
                  "source_id": ["sales", "copy"]}):
        answer = _post(url, "table/sales$other/clone", "admin", body)
        assert (answer.status_code, answer.json()["code"]) == (400, 13), answer.text


def test_a_shallow_clones_source_keeps_its_data_and_versions(served: tuple[str, Path]) -> None:
    url, root = served
    source = {"source_location": _location(url, "hr$payroll")}
    assert _post(url, "table/hr$shallow/clone", "admin", source).status_code == 200
    assert _post(url, "table/hr$deep/clone", "admin",
                 {**source, "is_shallow": False}).status_code == 200

    deleted = _post(url, "table/hr$payroll/version/delete", "admin", {"ranges": [
        {"start_version": 1, "end_version": 1}]})
    assert (deleted.status_code, deleted.json()["code"]) == (409, 19), deleted.text

    namespace = load_namespace("dir", {"root": str(root)})
    policy = MaintenancePolicy(version_retention=0.001)
    outcomes = {done.table: done for done in maintain_all(namespace, policy)}
    assert outcomes["hr$payroll"].versions_removed == 0  # its clones read them
    assert not outcomes["hr$payroll"].error

    shallow, deep = _location(url, "hr$shallow"), _location(url, "hr$deep")
    assert not namespace.vendable(["hr", "shallow"], shallow)
    assert namespace.vendable(["hr", "deep"], deep)

    dropped = _post(url, "table/hr$payroll/drop", "admin", {})
    assert dropped.status_code == 200, dropped.text
    assert _post(url, "table/hr$payroll/exists", "admin", {}).status_code == 404
    assert _count(url, "hr$shallow") == 5 and _count(url, "hr$deep") == 5
    assert lance.dataset(shallow).to_table().num_rows == 5


def test_a_cloned_root_table_is_not_moved_by_a_rename(served: tuple[str, Path]) -> None:
    url, _ = served
    _post(url, "table/top/create", "admin", sample_table(4)).raise_for_status()
    _post(url, "table/top_copy/clone", "admin",
          {"source_location": _location(url, "top")}).raise_for_status()
    renamed = _post(url, "table/top/rename", "admin", {"new_table_name": "moved"})
    assert (renamed.status_code, renamed.json()["code"]) == (409, 19), renamed.text
    assert _count(url, "top_copy") == 4 and _count(url, "top") == 4
