"""A table reaches only its own bytes (issue 68), on a local `dir` root behind token auth: a
version that names another table's folder as a base, a shallow clone made by hand, and
symbolic links in place of a table's directories are refused at every open, at registration
and before any delete; the other table's rows are never answered, its files never changed.
Clones the server made read their sources, as they must."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import lance
import pyarrow as pa
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    CreateTableRequest,
    DescribeTableRequest,
    ServiceUnavailableError,
    TableNotFoundError,
)

from backends import load_namespace, ownership
from backends.core.extensions import CloneTableRequest
from backends.core.locations import local_directory
from backends.maintenance import MaintenancePolicy, maintain_all
from tests.support.adapter import running_server, serving_identities
from tests.support.foreign_bytes import append_foreign_rows, post_as
from tests.support.lance_data import arrow_stream

TOKENS = {"admin": "tok-admin", "sales": "tok-sales", "cloner": "tok-cloner",
          "reader": "tok-reader"}
ACCESS = {"admin": "admin", "sales": "admin@sales", "cloner": "write@sales, read@hr",
          "reader": "read@sales"}
SECRET = ["hr-secret-row-1", "hr-secret-row-2"]


def rows(*values: str) -> pa.Table:
    return pa.table({"v": list(values)})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """`hr$secret` (two secret rows) and `sales$t` (one row of its own), made through the
    server; `sales` has admin access in `sales` and none in `hr`."""
    with serving_identities(tmp_path, TOKENS, ACCESS) as url:
        for namespace in ("sales", "hr"):
            post(url, f"namespace/{namespace}/create", "admin", {}).raise_for_status()
        post(url, "table/hr$secret/create", "admin", rows(*SECRET)).raise_for_status()
        post(url, "table/sales$t/create", "sales", rows("sales-own-0")).raise_for_status()
        yield url


def post(url: str, path: str, who: str, body: pa.Table | dict[str, Any]) -> httpx.Response:
    return post_as(url, path, TOKENS[who], body)


def location(url: str, table: str) -> str:
    described = post(url, f"table/{table}/describe", "admin", {"load_detailed_metadata": False})
    return described.json()["location"]


def folder(url: str, table: str) -> Path:
    place = local_directory(location(url, table))
    assert place is not None
    return place


def files_of(place: Path) -> dict[str, bytes]:
    """Every file under the table folder `place`, with its bytes."""
    found = {}
    for directory, _, names in os.walk(place):
        for name in names:
            path = Path(directory, name)
            found[str(path.relative_to(place))] = path.read_bytes()
    return found


# Operations on `sales$t` that open it, each with a body: every one must be refused.
OPENS = {
    "query": {"k": 10, "vector": {}, "columns": {"column_names": ["v"]}},
    "count_rows": {"predicate": "v LIKE 'hr-%'"},
    "describe": {"load_detailed_metadata": True},
    "stats": {},
    "index/list": {},
    "tags/create": {"tag": "t1", "version": 3},
    "tags/list": {},
    "version/list": {},
    "version/delete": {"ranges": [{"start_version": 1, "end_version": 1}]},
    "delete": {"predicate": "v = 'hr-secret-row-1'"},
    "update": {"predicate": "v = 'hr-secret-row-1'", "updates": [["v", "'changed'"]]},
    "schema_metadata/update": {"k": "v"},
    "drop_columns": {"columns": ["v"]},
    "restore": {"version": 2},
    "analyze_plan": {"k": 10, "vector": {}},
}


def refused(answer: httpx.Response) -> bool:
    if (answer.status_code, answer.json().get("code")) != (400, 13):
        return False
    return "outside this table" in answer.json()["error"] and "hr" not in answer.json()["error"]


def test_a_version_naming_another_tables_folder_is_refused_at_every_open(
    served: str, tmp_path: Path,
) -> None:
    url = served
    secret = location(url, "hr$secret")
    before = files_of(folder(url, "hr$secret"))
    append_foreign_rows(location(url, "sales$t"), secret)
    assert lance.dataset(location(url, "sales$t")).count_rows() == 3  # the bytes are reached

    answers = {path: post(url, f"table/sales$t/{path}", "sales", body)
               for path, body in OPENS.items()}
    answers["insert"] = post(url, "table/sales$t/insert", "sales", rows("more"))
    answers["clone"] = post(url, "table/sales$copy/clone", "sales",
                            {"source_location": location(url, "sales$t")})
    assert {path: refused(answer) for path, answer in answers.items()} == dict.fromkeys(
        answers, True), {path: answer.text for path, answer in answers.items()}
    assert post(url, "table/sales$copy/exists", "admin", {}).status_code == 404

    outcomes = {done.table: done for done in maintain_all(
        load_namespace("dir", {"root": str(tmp_path / "root")}),
        MaintenancePolicy(version_retention=0.001, min_small_fragments=1))}
    assert "outside this table" in outcomes["sales$t"].error
    assert lance.dataset(location(url, "sales$t")).version == 3  # nothing committed
    assert files_of(folder(url, "hr$secret")) == before
    answer = post(url, "table/hr$secret/count_rows", "admin", {})
    assert answer.json() == 2


def test_the_tables_own_older_version_still_reads(served: str) -> None:
    """The check is of the version opened: the tenant's table before the foreign base."""
    url = served
    append_foreign_rows(location(url, "sales$t"), location(url, "hr$secret"))
    answer = post(url, "table/sales$t/count_rows", "sales", {"version": 1})
    assert (answer.status_code, answer.json()) == (200, 1), answer.text


def test_a_shallow_clone_made_by_hand_is_not_registered(served: str, tmp_path: Path) -> None:
    url = served
    secret = lance.dataset(location(url, "hr$secret"))
    target = tmp_path / "root" / "sales" / "stolen"
    secret.shallow_clone(str(target), secret.version)
    answer = post(url, "table/sales$stolen/register", "sales", {"location": str(target)})
    assert refused(answer), answer.text
    assert post(url, "table/sales$stolen/exists", "admin", {}).status_code == 404


def test_linked_lance_directories_are_not_registered(served: str, tmp_path: Path) -> None:
    url = served
    secret = folder(url, "hr$secret")
    linked = tmp_path / "root" / "sales" / "linked"
    linked.mkdir(parents=True)
    for name in ("_versions", "data"):
        (linked / name).symlink_to(secret / name)
    answer = post(url, "table/sales$linked/register", "sales", {"location": str(linked)})
    assert (answer.status_code, answer.json()["code"]) == (400, 13), answer.text
    assert "symbolic link" in answer.json()["error"]


@pytest.mark.parametrize("linked", ["data", "_versions", "table"])
def test_no_open_or_delete_follows_a_link_out_of_the_table(
    served: str, linked: str,
) -> None:
    """`sales$t`'s `data` (or `_versions`, or its whole directory) replaced by a link into
    `hr$secret`: reads, deletes of rows and versions and DropTable are refused, and every one
    of `hr`'s files is still there, unchanged."""
    url = served
    secret, own = folder(url, "hr$secret"), folder(url, "sales$t")
    before = files_of(secret)
    if linked == "table":
        os.rename(own, own.with_name(own.name + ".moved"))
        own.symlink_to(secret)
    else:
        os.rename(own / linked, own / f"{linked}.moved")
        (own / linked).symlink_to(secret / linked)
    for path, body in (("count_rows", {}), ("delete", {"predicate": "true"}),
                       ("version/delete", {"ranges": [{"start_version": 1, "end_version": 1}]}),
                       ("create?mode=overwrite", rows("over")), ("drop", {})):
        answer = post(url, f"table/sales$t/{path}", "sales", body)
        assert (answer.status_code, answer.json()["code"]) == (400, 13), (path, answer.text)
    assert post(url, "table/sales$t/exists", "admin", {}).status_code == 200
    assert files_of(secret) == before


def test_a_directory_swapped_into_a_tables_place_is_not_read_as_it(served: str) -> None:
    """`hr$secret`'s directory moved into `sales$t`'s place (by someone who can move files
    on the root): its ownership record names `hr$secret`, so `sales$t` reads nothing of it,
    and DropTable of `sales$t` leaves it whole."""
    url = served
    secret, own = folder(url, "hr$secret"), folder(url, "sales$t")
    before = files_of(secret)
    os.rename(own, own.with_name(own.name + ".moved"))
    os.rename(secret, own)
    for path, body in (("count_rows", {}), ("query", OPENS["query"]),
                       ("describe", {"load_detailed_metadata": True})):
        answer = post(url, f"table/sales$t/{path}", "sales", body)
        assert (answer.status_code, answer.json()["code"]) == (400, 13), (path, answer.text)
        assert "recorded as another table's" in answer.json()["error"]
    assert post(url, "table/sales$t/drop", "sales", {}).status_code == 200
    assert files_of(own) == before


def test_clones_the_server_made_read_their_sources(served: str) -> None:
    """A shallow clone, and a shallow clone of it, read the sources their records name."""
    url = served
    first = post(url, "table/hr$c1/clone", "admin",
                 {"source_location": location(url, "hr$secret")})
    assert first.status_code == 200, first.text
    second = post(url, "table/hr$c2/clone", "admin", {"source_location": location(url, "hr$c1")})
    assert second.status_code == 200, second.text
    for table in ("hr$c1", "hr$c2"):
        answer = post(url, f"table/{table}/count_rows", "admin", {})
        assert (answer.status_code, answer.json()) == (200, 2), answer.text


def test_a_clone_is_read_only_by_callers_who_may_read_its_source(served: str) -> None:
    """`cloner` (read access in `hr`) clones `hr$secret` into `sales`; `reader`, who may read
    `sales` but not `hr`, is refused the clone's rows at each open (403, code 15), also
    through a clone of the clone; `cloner` reads them."""
    url = served
    made = post(url, "table/sales$copy/clone", "cloner",
                {"source_location": location(url, "hr$secret")})
    assert made.status_code == 200, made.text
    again = post(url, "table/sales$copy2/clone", "cloner",
                 {"source_location": location(url, "sales$copy")})
    assert again.status_code == 200, again.text
    for table in ("sales$copy", "sales$copy2"):
        for path, body in (("count_rows", {}), ("query", {"k": 10, "vector": {}}),
                           ("describe", {"load_detailed_metadata": True})):
            answer = post(url, f"table/{table}/{path}", "reader", body)
            assert (answer.status_code, answer.json()["code"]) == (403, 15), answer.text
            assert "hr-secret" not in answer.text
        answer = post(url, f"table/{table}/count_rows", "cloner", {})
        assert (answer.status_code, answer.json()) == (200, 2), answer.text


def test_a_clone_in_a_catalog_of_several_checks_its_source_by_whole_id(tmp_path: Path) -> None:
    """On a server of several catalogs, grants name whole ids (`lake$hr`): the clone's source
    is judged so."""
    tokens = tmp_path / "tokens"
    tokens.write_text("admin tok-admin\ncloner tok-cloner\nreader tok-reader\n")
    catalogs = {"lake": {"impl": "dir", "root": str(tmp_path / "lake")},
                "side": {"impl": "dir", "root": str(tmp_path / "side")}}
    access = {"admin": "admin", "cloner": "write@lake$sales, read@lake$hr",
              "reader": "read@lake$sales, read@side$hr"}
    with running_server("dir", {}, catalogs=catalogs, auth_mode="token",
                        auth_tokens_file=str(tokens), access=access,
                        access_default="none") as url:
        for namespace in ("lake$sales", "lake$hr"):
            post(url, f"namespace/{namespace}/create", "admin", {}).raise_for_status()
        post(url, "table/lake$hr$secret/create", "admin", rows(*SECRET)).raise_for_status()
        made = post(url, "table/lake$sales$copy/clone", "cloner",
                    {"source_location": location(url, "lake$hr$secret")})
        assert made.status_code == 200, made.text
        refused = post(url, "table/lake$sales$copy/count_rows", "reader", {})
        assert (refused.status_code, refused.json()["code"]) == (403, 15), refused.text
        counted = post(url, "table/lake$sales$copy/count_rows", "cloner", {})
        assert (counted.status_code, counted.json()) == (200, 2), counted.text


def test_a_clone_whose_record_cannot_be_written_is_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A storage that fails the clone's record write (a stand-in: the write of that one file
    raises as a failing store does) leaves no clone: without its record it would read nothing,
    so it is not answered as made."""
    namespace = load_namespace("dir", {"root": str(tmp_path / "root")})
    namespace.create_namespace(CreateNamespaceRequest(id=["hr"]))
    namespace.create_table(CreateTableRequest(id=["hr", "secret"]), arrow_stream(rows("a")))
    source = namespace.describe_table(DescribeTableRequest(id=["hr", "secret"])).location
    real = ownership.write_record

    def failing(location: str, options: Any, record: Any) -> None:
        if record.sources:
            raise ServiceUnavailableError("the storage did not answer")
        real(location, options, record)

    monkeypatch.setattr(ownership, "write_record", failing)
    with pytest.raises(ServiceUnavailableError):
        namespace.clone_table(CloneTableRequest(id=["hr", "copy"], source_location=source,
                                                source_id=["hr", "secret"]))
    with pytest.raises(TableNotFoundError):
        namespace.describe_table(DescribeTableRequest(id=["hr", "copy"]))
    assert not list((tmp_path / "root").glob("*hr$copy*"))  # its directory went too


def test_a_clones_cached_answer_is_not_given_after_the_source_grant_is_revoked(
    tmp_path: Path,
) -> None:
    """The metadata cache keys answers by the caller's grants too: once `cloner` may no
    longer read `hr`, the clone of `hr$secret` it made (and read, so its answers are cached)
    is refused it, although the table did not change."""
    tokens, grants = tmp_path / "tokens", tmp_path / "access.yaml"
    tokens.write_text("".join(f"{name} {token}\n" for name, token in TOKENS.items()))
    grants.write_text("access:\n  admin: admin\n  cloner: write@sales, read@hr\n"
                      "access_default: none\n")
    with running_server("dir", {"root": str(tmp_path / "root")}, auth_mode="token",
                        auth_tokens_file=str(tokens), access_file=str(grants),
                        auth_reload_interval=0.2) as url:
        for namespace in ("sales", "hr"):
            post(url, f"namespace/{namespace}/create", "admin", {}).raise_for_status()
        post(url, "table/hr$secret/create", "admin", rows(*SECRET)).raise_for_status()
        cloned = post(url, "table/sales$c/clone", "cloner",
                      {"source_location": location(url, "hr$secret")})
        assert cloned.status_code == 200, cloned.text
        reads = {"count_rows": {}, "describe": {"load_detailed_metadata": True}}
        for _ in range(2):  # the second answer is the cache's
            assert [post(url, f"table/sales$c/{path}", "cloner", body).status_code
                    for path, body in reads.items()] == [200, 200]

        grants.write_text("access:\n  admin: admin\n  cloner: write@sales\n"
                          "access_default: none\n")
        deadline = time.monotonic() + 10
        while post(url, "table/hr$secret/describe", "cloner", {}).status_code != 403:
            assert time.monotonic() < deadline, "the new grants were not read"
        answers = {path: post(url, f"table/sales$c/{path}", "cloner", body)
                   for path, body in reads.items()}
    assert {path: (answer.status_code, answer.json()["code"]) for path, answer in
            answers.items()} == dict.fromkeys(reads, (403, 15)), answers
