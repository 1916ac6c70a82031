"""A root table's rename on a local `dir` root, cut off at each step by a kill (forged here
by doing the steps that ran before it: the intent, the directory's move, the new id's
registration), is finished or undone by the next request once its intent is old enough
(`backends/directory/renames.py`); a young intent is a rename under way and left alone."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DescribeTableRequest,
    ListTablesRequest,
    RegisterTableRequest,
    RenameTableRequest,
    TableExistsRequest,
    TableNotFoundError,
)

from backends import load_namespace
from backends.directory.renames import INTENTS_DIRECTORY
from backends.guard import GuardedNamespace
from backends.owner_record import Record, read_record
from tests.support.lance_data import arrow_stream, sample_table


def _root_with_table(root: Path, recovery_after: str) -> GuardedNamespace:
    namespace = load_namespace("dir", {"root": str(root), "rename_recovery_after": recovery_after})
    namespace.create_table(CreateTableRequest(id=["a"]), arrow_stream(sample_table(3)))
    return namespace


def _cut_off(root: Path, moved: bool) -> None:
    """What a rename of `a` to `b` killed after its intent (and its move) left."""
    intents = root / INTENTS_DIRECTORY
    intents.mkdir(exist_ok=True)
    (intents / "cut.json").write_text(json.dumps(
        {"old_id": ["a"], "new_id": ["b"], "old": "a.lance", "new": "b.lance"}))
    if moved:
        os.rename(root / "a.lance", root / "b.lance")


def _tables(namespace: GuardedNamespace) -> list[str]:
    return sorted(namespace.list_tables(ListTablesRequest(id=[])).tables)


def _rows(namespace: GuardedNamespace, name: str) -> int:
    return namespace.count_table_rows(CountTableRowsRequest(id=[name])).count


@pytest.mark.parametrize("registered", [False, True], ids=["moved", "moved-and-registered"])
def test_a_rename_cut_off_after_its_move_is_finished(tmp_path: Path, registered: bool) -> None:
    root = tmp_path / "root"
    namespace = _root_with_table(root, "0")
    _cut_off(root, moved=True)
    if registered:  # the kill came after the new id's registration, before the old's removal
        namespace.backend.register_table(
            RegisterTableRequest(id=["b"], location=str(root / "b.lance")))

    assert _tables(namespace) == ["b"]
    assert _rows(namespace, "b") == 3
    with pytest.raises(TableNotFoundError):
        namespace.table_exists(TableExistsRequest(id=["a"]))
    assert read_record(str(root / "b.lance"), None).owner == ["b"]  # type: ignore[union-attr]
    assert list((root / INTENTS_DIRECTORY).iterdir()) == []


def test_a_rename_cut_off_before_its_move_is_undone(tmp_path: Path) -> None:
    root = tmp_path / "root"
    namespace = _root_with_table(root, "0")
    _cut_off(root, moved=False)
    assert _tables(namespace) == ["a"]
    assert _rows(namespace, "a") == 3
    assert read_record(str(root / "a.lance"), None) == Record(["a"], True)
    assert list((root / INTENTS_DIRECTORY).iterdir()) == []


def test_a_young_intent_is_a_rename_under_way_and_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "root"
    namespace = _root_with_table(root, "60")
    _cut_off(root, moved=True)
    namespace.list_tables(ListTablesRequest(id=[]))
    assert (root / INTENTS_DIRECTORY / "cut.json").exists()
    old = os.stat(root / INTENTS_DIRECTORY / "cut.json").st_mtime - 61
    os.utime(root / INTENTS_DIRECTORY / "cut.json", (old, old))  # 61 s later
    assert _tables(namespace) == ["b"]


def test_a_rename_leaves_no_intent(tmp_path: Path) -> None:
    root = tmp_path / "root"
    namespace = _root_with_table(root, "60")
    namespace.rename_table(RenameTableRequest(id=["a"], new_table_name="b"))
    assert _tables(namespace) == ["b"]
    assert list((root / INTENTS_DIRECTORY).iterdir()) == []


def test_a_namespace_tables_rename_cut_off_after_the_new_registration_is_finished(
    tmp_path: Path,
) -> None:
    """A table in a namespace keeps its directory; a rename cut off with both ids registered
    is finished (the old one deregistered), one cut off before is left as it was."""
    root = tmp_path / "root"
    namespace = load_namespace("dir", {"root": str(root), "rename_recovery_after": "0"})
    namespace.create_namespace(CreateNamespaceRequest(id=["ns"]))
    for name in ("a", "c"):
        namespace.create_table(CreateTableRequest(id=["ns", name]), arrow_stream(sample_table(3)))
    places = {name: Path(namespace.describe_table(DescribeTableRequest(id=["ns", name]))
                         .location.removeprefix("file://")) for name in ("a", "c")}
    intents = root / INTENTS_DIRECTORY
    intents.mkdir()
    for name, new in (("a", "b"), ("c", "d")):
        relative = str(places[name].relative_to(root))
        (intents / f"{name}.json").write_text(json.dumps(
            {"old_id": ["ns", name], "new_id": ["ns", new], "old": relative, "new": relative}))
    namespace.backend.register_table(RegisterTableRequest(id=["ns", "b"],
                                                          location=str(places["a"])))

    assert sorted(namespace.list_tables(ListTablesRequest(id=["ns"])).tables) == ["b", "c"]
    assert namespace.count_table_rows(CountTableRowsRequest(id=["ns", "b"])).count == 3
    assert read_record(str(places["a"]), None).owner == ["ns", "b"]  # type: ignore[union-attr]
    assert list(intents.iterdir()) == []
