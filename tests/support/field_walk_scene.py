"""The machinery of the field walk over every operation
(`tests.support.field_walk_operations`): a `Scene` (fresh namespaces and tables with a fixed
history, built by `Scene.build`), what one request observes (`run`: the answer without what
differs from one run to the next, and for a write what the catalog and Lance hold afterwards,
`Scene.state`), and a `Variant` (a field's baseline and variant request on a scene).
"""

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import httpx
import lance
import pyarrow as pa

from tests.support.field_walk import (
    ARROW,
    walk_rows,
)
from tests.support.lance_data import arrow_stream, read_arrow_file

TABLE_VOLATILE = frozenset({
    "timestamp_millis", "timestamp", "createAt", "create_at", "created_at", "updated_at",
    "transaction_id", "uuid", "index_uuid", "e_tag", "manifestSize", "branch_identifier",
})


@dataclass
class Scene:
    """Fresh objects for one request: namespace `namespace` (made), `other` (made by the
    setups that say so), the table `t` with its history and what else the setup builds."""

    url: str
    namespace: list[str]
    other: list[str]
    names: dict[str, Any] = field(default_factory=dict)  # placeholders the setup resolved

    def table(self, name: str = "t") -> list[str]:
        return [*self.namespace, name]

    def call(self, operation: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(f"{self.url}/{operation}", json=body, timeout=120)

    def checked(self, operation: str, body: dict[str, Any]) -> Any:
        answer = self.call(operation, body)
        assert answer.status_code == 200, (operation, body, answer.text)
        return answer.json()

    def data(self, operation: str, table: list[str], rows: Any,
             params: dict[str, Any] | None = None) -> httpx.Response:
        return httpx.post(f"{self.url}/{operation}", params={"id": "$".join(table),
                                                               **(params or {})},
                          headers=ARROW, content=arrow_stream(rows), timeout=120)

    def checked_data(self, operation: str, table: list[str], rows: Any,
                     params: dict[str, Any] | None = None) -> None:
        answer = self.data(operation, table, rows, params)
        assert answer.status_code == 200, (operation, answer.text)

    def location(self, name: str = "t") -> str:
        return self.checked("DescribeTable", {"id": self.table(name)})["location"]

    # --- setups -----------------------------------------------------------------------------

    def build(self, setup: str) -> None:
        """`setup` is a '+'-joined list of: nsprops (the namespace made with property a=b), ns2
        (the other namespace made too), untagged (no tags on `t`), table (the
        table `t` with its history), index (`t` with indices), tables (`t`, a table `u` and a
        declared table `d`), props (`t` created with property a=b), deregistered (`u` and `v`
        made and deregistered, their locations in $LOC_U and $LOC_V), staged (two staging
        manifests of `t`, copies of its versions 1 and 2), transaction (a RestoreTable of `t`,
        its transaction in $TX)."""
        parts = set(setup.split("+")) if setup else set()
        properties = {"properties": {"a": "b"}} if "nsprops" in parts else {}
        self.checked("CreateNamespace", {"id": self.namespace, **properties})
        if "ns2" in parts:
            self.checked("CreateNamespace", {"id": self.other})
        if parts & {"table", "index", "tables", "props", "staged", "transaction"}:
            self.build_history("index" in parts, "props" in parts, "untagged" not in parts)
        if "tables" in parts:
            self.checked_data("CreateTable", self.table("u"), walk_rows(50, 10))
            self.checked("DeclareTable", {"id": self.table("d")})
        if "deregistered" in parts:
            self.checked_data("CreateTable", self.table("u"), walk_rows(50, 10))
            self.checked_data("CreateTable", self.table("v"), walk_rows(70, 3))
            self.names["$LOC_U"], self.names["$LOC_V"] = self.location("u"), self.location("v")
            self.checked("DeregisterTable", {"id": self.table("u")})
            self.checked("DeregisterTable", {"id": self.table("v")})
        if "staged" in parts:
            directory = local_path(self.location()) / "_versions"
            manifests = sorted(directory.glob("*.manifest"), reverse=True)  # v1 first
            for version, manifest in ((1, manifests[0]), (2, manifests[1])):
                shutil.copy(manifest, directory / f"4.manifest-staged{version}")
        if "transaction" in parts:
            restored = self.checked("RestoreTable", {"id": self.table(), "version": 1})
            # (glue answers no transaction: AlterTransaction is code 0 there)
            self.names["$TX"] = [*self.table(), restored.get("transaction_id", "none")]

    def build_history(self, indexed: bool, properties: bool, tagged: bool) -> None:
        """`t`: version 1 has 20 rows, 2 and 3 add 5 and 3; branch `old` from version 1,
        `dev` from the latest with 7 rows of its own; tags t1 (version 1), t2 (version 2).
        Indexed: BTREE `id_idx` on id before `dev` branches, BITMAP `text_idx` on text after
        (on main only). Untagged: no tags (a tagged version cannot be deleted)."""
        table = self.table()
        params = {"properties": json.dumps({"a": "b"})} if properties else None
        self.checked_data("CreateTable", table, walk_rows(0, 20), params)
        self.checked_data("InsertIntoTable", table, walk_rows(100, 5))
        self.checked_data("InsertIntoTable", table, walk_rows(300, 3))
        if indexed:
            self.checked("CreateTableScalarIndex", {"id": table, "column": "id",
                                                    "index_type": "BTREE", "name": "id_idx"})
        self.checked("CreateTableBranch", {"id": table, "name": "old", "from_version": 1})
        self.checked("CreateTableBranch", {"id": table, "name": "dev"})
        if indexed:
            self.checked("CreateTableScalarIndex", {"id": table, "column": "text",
                                                    "index_type": "BITMAP", "name": "text_idx"})
        self.checked_data("InsertIntoTable", table, walk_rows(200, 7), {"branch": "dev"})
        if tagged:
            self.checked("CreateTableTag", {"id": table, "tag": "t1", "version": 1})
            self.checked("CreateTableTag", {"id": table, "tag": "t2", "version": 2})

    # --- placeholders -----------------------------------------------------------------------

    def resolve(self, value: Any) -> Any:
        """$N, $N2, $T, $U, $D (ids), $LOC_U, $LOC_NEW, $LOC_T (locations), $TX, by their
        values."""
        if isinstance(value, dict):
            return {key: self.resolve(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if not isinstance(value, str) or not value.startswith("$") or value == PAGE:
            return value
        if value in self.names:
            return self.names[value]
        fixed = {"$N": self.namespace, "$N2": self.other, "$T": self.table(),
                 "$U": self.table("u"), "$D": self.table("d"), "$NEW": self.table("new")}
        if value in fixed:
            return fixed[value]
        if value == "$LOC_NEW":
            return self.location().rstrip("/").rsplit("/", 1)[0] + "/elsewhere.lance"
        if value == "$LOC_T":
            return self.location()
        raise KeyError(value)

    # --- observations -----------------------------------------------------------------------

    def state(self) -> Any:
        """What the catalog and Lance hold now, of the scene's namespaces and tables."""
        namespaces = {
            label: answer_of(self.call("DescribeNamespace", {"id": namespace}))
            for label, namespace in (("N", self.namespace), ("N2", self.other))
        }
        listed = answer_of(self.call("ListTables", {"id": self.namespace}))
        tables = {}
        for name in listed.get("tables", []) if isinstance(listed, dict) else []:
            described = self.call("DescribeTable", {"id": self.table(name)})
            if described.status_code != 200:
                tables[name] = ("described", described.json().get("code"))
                continue
            try:
                read = lance_state(described.json()["location"])
            except (OSError, ValueError) as error:  # a declared table has no dataset yet
                read = ("no dataset", type(error).__name__)
            tables[name] = {"properties": described.json().get("properties"), "lance": read}
        return {"namespaces": namespaces, "tables": tables}

    def normalized(self, value: Any) -> Any:
        """`value` without run-to-run differences: volatile keys, this scene's names."""
        text = json.dumps(strip(value), sort_keys=True, default=str)
        for name, label in ((self.namespace[-1], "<N>"), (self.other[-1], "<N2>")):
            text = re.sub(rf"[0-9a-f]{{8}}_{re.escape(name)}", label, text)
            text = text.replace(name, label)
        return json.loads(text)


def strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: strip(item) for key, item in value.items() if key not in TABLE_VOLATILE}
    if isinstance(value, list):
        return [strip(item) for item in value]
    return value


def local_path(location: str) -> Path:
    return Path(unquote(urlparse(location).path)) if "://" in location else Path(location)


def answer_of(answer: httpx.Response) -> Any:
    """An answer's JSON, rows (Arrow) or text; a failure as ("refused", code) for code 13 and
    ("failed", HTTP status, code) otherwise."""
    if answer.status_code != 200:
        try:
            code = answer.json().get("code")
        except ValueError:
            code = None
        return ("refused", code) if code == 13 else ("failed", answer.status_code, code)
    kind = answer.headers.get("content-type", "")
    if "arrow" in kind:
        return read_arrow_file(answer.content).to_pylist()
    try:
        return answer.json()
    except ValueError:
        return answer.text


def lance_state(location: str) -> Any:
    """Versions, tags, indices, and each branch's version, schema and rows, read by pylance."""
    dataset = lance.dataset(location)
    branches = {"main": dataset, **{
        name: dataset.checkout_version((name, None)) for name in sorted(dataset.branches.list())
    }}
    return {
        "versions": [(version["version"], version["metadata"]) for version in dataset.versions()],
        "tags": {name: (tag["branch"], tag["version"])
                 for name, tag in sorted(dataset.tags.list().items())},
        "branches": {
            name: {
                "version": branch.version,
                "schema": str(branch.schema),
                "schema_metadata": {key.decode(): value.decode()
                                    for key, value in (branch.schema.metadata or {}).items()},
                "field_metadata": {f.name: {key.decode(): value.decode()
                                            for key, value in (f.metadata or {}).items()}
                                   for f in branch.schema},
                "indices": sorted(index.name for index in branch.describe_indices()),
                "rows": sorted(
                    json.dumps(row, sort_keys=True, default=str)
                    for row in branch.to_table(
                        columns=[c for c in branch.schema.names
                                 if c not in ("vector", "other")]).to_pylist()
                ),
            }
            for name, branch in branches.items()
        },
    }


@dataclass(frozen=True)
class Variant:
    """A baseline request and its variant (JSON bodies; for the Arrow operations the query
    parameters, the rows in `rows`), run on fresh objects built by `setup`."""

    setup: str
    baseline: dict[str, Any]
    variant: dict[str, Any]
    rows: tuple[int, int] | None = None  # walk_rows(start, count) sent as the Arrow body
    renamed: bool = False  # the rows' text changed, so that no row matches the table's on it
    reads: bool = False  # only reads: the answer alone is observed
    observe: Callable[[Scene, Any], Any] | None = None  # a view of the answer instead of it


def own_items(key: str) -> Callable[[Scene, Any], Any]:
    """Of a listing of the whole server: the items of this scene's namespaces only."""
    def view(scene: Scene, answer: Any) -> Any:
        if not isinstance(answer, dict):
            return answer
        names = (scene.namespace[-1], scene.other[-1])
        return sorted(item for item in answer.get(key, []) if any(n in item for n in names))
    return view


def how_many(key: str) -> Callable[[Scene, Any], Any]:
    def view(scene: Scene, answer: Any) -> Any:
        return len(answer.get(key, [])) if isinstance(answer, dict) else answer
    return view


# Page tokens: "$PAGE" is the token the same request with limit 1 answers first.
PAGE = "$PAGE"


def run(
    scene: Scene, operation: str, variant: Variant, body: dict[str, Any], build: bool = True
) -> Any:
    """Build the scene (unless it is built: a read leaves it as it was), send `body` to
    `operation`, and observe."""
    if build:
        scene.build(variant.setup)
    body = scene.resolve(body)
    if body.get("page_token") == PAGE:
        first = answer_of(send(scene, operation, {k: v for k, v in body.items()
                                                  if k != "page_token"}, variant))
        body = {**body, "page_token": first_page_token(first)}
    answer = answer_of(send(scene, operation, body, variant))
    if variant.observe is not None:
        answer = variant.observe(scene, answer)
    observed = {"answer": scene.normalized(answer)}
    if not variant.reads:
        observed["state"] = scene.normalized(scene.state())
    return observed


def first_page_token(first: Any) -> Any:
    """The token the first page answers; where it answers none (its limit ignored), the name
    of its first item, which is what the backends answer as the token of a one-item page."""
    assert isinstance(first, dict), first
    if first.get("page_token"):
        return first["page_token"]
    items = next(value for key, value in first.items() if isinstance(value, list | dict))
    if isinstance(items, dict):
        return sorted(items)[0]
    item = items[0]
    return item.get("index_name", item.get("version")) if isinstance(item, dict) else item


def send(scene: Scene, operation: str, body: dict[str, Any], variant: Variant) -> httpx.Response:
    if variant.rows is None:
        return scene.call(operation, body)
    table = body.pop("id")
    rows = walk_rows(*variant.rows)
    if variant.renamed:
        renamed = pa.array([f"{text} again" for text in rows["text"].to_pylist()])
        rows = rows.set_column(1, "text", renamed)
    return scene.data(operation, table, rows, body)


def is_refused(observed: Any) -> bool:
    return observed.get("answer") == ["refused", 13]


def code_of(observed: Any) -> Any:
    answer = observed.get("answer")
    return answer[-1] if isinstance(answer, list) and answer[:1] in (["refused"], ["failed"]) \
        else None


def new_scene(url: str, fresh: Callable[[str], list[str]]) -> Scene:
    return Scene(url, fresh("ns"), fresh("other"))
