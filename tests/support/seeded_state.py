"""Tables of a `dir` server in every state its answers must hold in: nested and at the root,
moved to the root by RenameTable, declared without data, with tags and branches, with a
non-ASCII name and a non-ASCII branch, with a quote in its names. `seed` creates whatever of
it is missing, so it can run again after requests that dropped, renamed or deregistered part
of it."""

from __future__ import annotations

import uuid

import httpx

from tests.support.lance_data import arrow_stream, sample_table

ARROW_STREAM = "application/vnd.apache.arrow.stream"
NAMESPACE = "ns"
NESTED = "ns$t"
ROOT = "r"
RENAMED = "moved"
DECLARED = "ns$d"
NON_ASCII = "ns$été"
# A quote in a namespace's and a table's name (the native listings once pasted them into SQL).
QUOTED_NAMESPACE = "o'ns"
QUOTED = "o'ns$t'1"
TABLES = (NESTED, ROOT, RENAMED, DECLARED, NON_ASCII, QUOTED)
WITH_DATA = (NESTED, ROOT, RENAMED, NON_ASCII, QUOTED)
TAG = "v1"
BRANCH = "dev"
NON_ASCII_BRANCH = "été"


def exists(http: httpx.Client, table: str) -> bool:
    return http.post(f"/v1/table/{table}/exists", json={}).status_code == 200


def _create(http: httpx.Client, table: str) -> None:
    created = http.post(
        f"/v1/table/{table}/create",
        content=arrow_stream(sample_table(5)),
        headers={"content-type": ARROW_STREAM},
    )
    assert created.status_code == 200, (table, created.text)


def _renamed_to_the_root(http: httpx.Client) -> None:
    """A nested table RenameTable moved to the root: its data stays in the namespace's
    directory, so the native lookup of a root table (`<name>.lance`) misses it."""
    staged = f"{NAMESPACE}$m{uuid.uuid4().hex[:8]}"
    _create(http, staged)
    moved = http.post(
        f"/v1/table/{staged}/rename", json={"new_table_name": RENAMED, "new_namespace_id": []}
    )
    assert moved.status_code == 200, moved.text


def _refs(http: httpx.Client, table: str) -> None:
    """A tag and two branches (one non-ASCII); those already there answer 409."""
    http.post(f"/v1/table/{table}/tags/create", json={"tag": TAG, "version": 1})
    for branch in (BRANCH, NON_ASCII_BRANCH):
        http.post(f"/v1/table/{table}/branches/create", json={"name": branch})


def seed(http: httpx.Client) -> None:
    """Create whatever of the seeded state is missing."""
    for namespace in (NAMESPACE, QUOTED_NAMESPACE):
        http.post(f"/v1/namespace/{namespace}/create", json={"mode": "exist_ok"})
    for table in (NESTED, ROOT, NON_ASCII, QUOTED):
        if not exists(http, table):
            _create(http, table)
    if not exists(http, RENAMED):
        _renamed_to_the_root(http)
    if not exists(http, DECLARED):
        declared = http.post(f"/v1/table/{DECLARED}/declare", json={})
        assert declared.status_code == 200, declared.text
    for table in (NESTED, ROOT, RENAMED):
        _refs(http, table)
