"""The remembered latest version of local tables (`backends.tables.latest`): an open after a
commit by anyone else (another process, another worker, Lance itself) reads that commit, a
table dropped and made again at the same path and version reads as the new one, each open is
its own dataset, and the memory is bounded. Tables in both of Lance's manifest naming
schemes."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from backends.tables.latest import LatestVersions, manifest_names
from tests.support.glue import MotoEndpoint, s3_storage


def _rows(start: int, count: int = 5) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + count), pa.int64())})


def _ids(dataset: lance.LanceDataset) -> list[int]:
    return sorted(dataset.to_table(columns=["id"]).column("id").to_pylist())


@pytest.fixture(params=[True, False], ids=["v2-names", "v1-names"])
def v2_names(request: pytest.FixtureRequest) -> bool:
    return request.param


def _write(path: Path, rows: pa.Table, mode: str, v2_names: bool) -> None:
    lance.write_dataset(rows, str(path), mode=mode, enable_v2_manifest_paths=v2_names)


def _opened_once(path: Path, v2_names: bool = True) -> tuple[LatestVersions, lance.Session]:
    """A table of 5 rows at `path`, opened (so remembered) once through a new memory."""
    _write(path, _rows(0), "create", v2_names)
    latest, session = LatestVersions(), lance.Session()
    latest.open(str(path), None, session)
    return latest, session


def test_the_manifest_names_are_lances(tmp_path: Path, v2_names: bool) -> None:
    _write(tmp_path / "t.lance", _rows(0), "create", v2_names)
    _write(tmp_path / "t.lance", _rows(5), "append", v2_names)
    names = {path.name for path in (tmp_path / "t.lance" / "_versions").glob("*.manifest")}
    expected = {manifest_names(version)[0 if v2_names else 1] for version in (1, 2)}
    assert names == expected


def test_an_open_reads_every_commit_made_elsewhere(tmp_path: Path, v2_names: bool) -> None:
    path = tmp_path / "t.lance"
    _write(path, _rows(0), "create", v2_names)
    latest, session = LatestVersions(), lance.Session()
    assert _ids(latest.open(str(path), None, session)) == list(range(5))
    for round_ in range(1, 4):
        _write(path, _rows(round_ * 5), "append", v2_names)  # not through `latest`
        opened = latest.open(str(path), None, session)
        assert opened.version == round_ + 1
        assert _ids(opened) == list(range((round_ + 1) * 5))
    lance.dataset(str(path)).delete("id < 3")
    assert _ids(latest.open(str(path), None, session)) == list(range(3, 20))


def test_a_table_made_again_at_the_same_version_reads_as_the_new_one(
    tmp_path: Path, v2_names: bool
) -> None:
    path = tmp_path / "t.lance"
    _write(path, _rows(0), "create", v2_names)
    latest, session = LatestVersions(), lance.Session()
    first = latest.open(str(path), None, session)
    assert first.version == 1
    shutil.rmtree(path)
    _write(path, _rows(100, 2), "create", v2_names)
    again = latest.open(str(path), None, session)
    assert again.version == 1
    assert _ids(again) == [100, 101]


def test_each_open_is_its_own_dataset(tmp_path: Path) -> None:
    path = tmp_path / "t.lance"
    _write(path, _rows(0), "create", True)
    latest, session = LatestVersions(), lance.Session()
    writer = latest.open(str(path), None, session)
    reader = latest.open(str(path), None, session)
    assert writer is not reader
    writer.delete("id = 0")  # moves `writer` on, in place
    assert (writer.version, reader.version) == (2, 1)
    assert _ids(reader) == list(range(5))
    assert _ids(latest.open(str(path), None, session)) == list(range(1, 5))


def test_a_dropped_table_is_not_opened(tmp_path: Path) -> None:
    path = tmp_path / "t.lance"
    latest, session = _opened_once(path)
    shutil.rmtree(path)
    with pytest.raises((OSError, ValueError)):
        latest.open(str(path), None, session)


def test_at_most_capacity_tables_are_remembered(tmp_path: Path) -> None:
    latest, session = LatestVersions(capacity=3), lance.Session()
    for name in "abcde":
        _write(tmp_path / f"{name}.lance", _rows(0), "create", True)
        latest.open(str(tmp_path / f"{name}.lance"), None, session)
    assert len(latest) == 3
    assert _ids(latest.open(str(tmp_path / "a.lance"), None, session)) == list(range(5))


@pytest.mark.parametrize("commits", [1, 2, 3, 8, 9, 20, 63, 64, 65, 130])
def test_several_commits_since_the_last_open_are_all_read(
    tmp_path: Path, v2_names: bool, commits: int
) -> None:
    """The remembered version moves on by naming the versions after it (steps doubling,
    then halving), however many were committed since: at its latest version."""
    path = tmp_path / "t.lance"
    latest, session = _opened_once(path, v2_names)
    for commit in range(commits):
        _write(path, _rows(5 + commit * 5), "append", v2_names)
    opened = latest.open(str(path), None, session)
    assert opened.version == commits + 1
    assert _ids(opened) == list(range(5 + commits * 5))


def test_a_table_made_again_with_more_versions_reads_as_the_new_one(tmp_path: Path) -> None:
    path = tmp_path / "t.lance"
    latest, session = _opened_once(path)
    shutil.rmtree(path)
    _write(path, _rows(100, 1), "create", True)
    _write(path, _rows(200, 1), "append", True)
    assert _ids(latest.open(str(path), None, session)) == [100, 200]


def test_a_tagged_table_whose_later_versions_were_cleaned_up_opens_at_its_latest(
    tmp_path: Path, v2_names: bool
) -> None:
    """A cleanup keeps the remembered version when it is tagged and removes the untagged
    ones after it: a missing next version does not mean that none came after."""
    path = tmp_path / "t.lance"
    latest, session = _opened_once(path, v2_names)
    lance.dataset(str(path)).tags.create("first", 1)
    for commit in range(4):
        _write(path, _rows(5 + commit * 5), "append", v2_names)
    lance.dataset(str(path)).cleanup_old_versions(
        older_than=datetime.timedelta(0), error_if_tagged_old_versions=False)
    assert not any((path / "_versions" / name).exists() for name in manifest_names(2))
    opened = latest.open(str(path), None, session)
    assert opened.version == 5
    assert _ids(opened) == list(range(25))


def test_new_versions_of_object_store_tables_are_counted(clean_moto: MotoEndpoint) -> None:
    """An object-store table is opened as Lance opens it; each version not seen before counts
    (the Lance session is renewed by that count, `backends.sessions`)."""
    clean_moto.client("s3").create_bucket(Bucket="lake")  # type: ignore[attr-defined]
    storage, location = s3_storage(clean_moto.url), "s3://lake/t.lance"
    lance.write_dataset(_rows(0), location, storage_options=storage)
    latest, session = LatestVersions(), lance.Session()
    assert _ids(latest.open(location, storage, session)) == list(range(5))
    latest.open(location, storage, session)
    assert latest.versions_seen == 1
    lance.write_dataset(_rows(5), location, mode="append", storage_options=storage)
    assert _ids(latest.open(location, storage, session)) == list(range(10))
    assert latest.versions_seen == 2


def test_new_versions_of_local_tables_are_counted(tmp_path: Path) -> None:
    path = tmp_path / "t.lance"
    latest, session = _opened_once(path)
    latest.open(str(path), None, session)
    assert latest.versions_seen == 1
    for commit in range(3):
        _write(path, _rows(5 + commit * 5), "append", True)
    latest.open(str(path), None, session)
    assert latest.versions_seen == 2  # moved on once, to the newest
