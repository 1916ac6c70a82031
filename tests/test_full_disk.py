"""A `dir` root on a small tmpfs, filled to the last byte: every write refused with code 17 (it
did not take effect, so it may be retried) and a sentence, every read and listing still
answered, every acknowledged row there once, nothing of a refused write visible, and writes
resuming, without a restart, once space is freed. The tmpfs is real (mounting it needs root;
the suite runs as root in CI)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.adapter import running_server
from tests.support.lance_data import arrow_stream, error_code, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}
BATCH_ROWS = 20_000  # about 1 MB of Arrow


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(path: Path, leave: int = 0) -> None:
    """Writes `path` until the file system has `leave` bytes free, or none at all."""
    chunk = b"\0" * (256 * 1024)
    try:
        with path.open("ab") as filler:
            while os.statvfs(path).f_bavail * os.statvfs(path).f_frsize > leave + len(chunk):
                filler.write(chunk)
                filler.flush()
            while not leave:
                filler.write(b"\0" * 4096)
                filler.flush()
    except OSError:
        pass  # full


def _post(url: str, route: str, **request: object) -> httpx.Response:
    return httpx.post(f"{url}/v1/{route}", timeout=60, **request)


def _insert(url: str, table: str, first: int) -> httpx.Response:
    return _post(url, f"table/{table}/insert", headers=ARROW,
                 content=arrow_stream(sample_table(BATCH_ROWS, first)))


def _count(url: str, table: str, predicate: str | None = None) -> int:
    answer = _post(url, f"table/{table}/count_rows",
                   json={"predicate": predicate} if predicate else {})
    assert answer.status_code == 200, answer.text
    return answer.json()


def _refused_as_full(answer: httpx.Response) -> None:
    assert answer.status_code == 503, answer.text
    assert error_code(answer.content) == 17
    body = answer.json()
    assert "storage is full (no space left on device)" in body["error"]
    assert "/disk" not in answer.text and ".rs:" not in answer.text


def test_a_full_disk_refuses_writes_keeps_reads_and_resumes_when_space_is_freed(
        small_disk: Path) -> None:
    root = small_disk / "root"
    with running_server("dir", {"root": str(root)}) as url:
        assert _post(url, "namespace/ns/create", json={}).status_code == 200
        created = _post(url, "table/ns$t/create", headers=ARROW,
                        content=arrow_stream(sample_table(10)))
        assert created.status_code == 200, created.text
        _fill(small_disk / "filler", leave=6 * 1024 * 1024)
        acknowledged = 10
        for batch in range(1, 40):
            answer = _insert(url, "ns$t", batch * BATCH_ROWS)
            if answer.status_code != 200:
                _refused_as_full(answer)
                refused_from = batch * BATCH_ROWS
                break
            acknowledged += BATCH_ROWS
        else:
            pytest.fail("the disk never filled")
        _fill(small_disk / "filler-2")  # whatever the refused write left free, taken too

        # Every write is refused, cleanly; nothing of it becomes visible.
        _refused_as_full(_insert(url, "ns$t", refused_from))
        _refused_as_full(_post(url, "table/ns$u/create", headers=ARROW,
                               content=arrow_stream(sample_table(BATCH_ROWS))))
        _refused_as_full(_post(url, "namespace/other/create", json={}))
        _refused_as_full(_post(url, "table/ns$t/rename", json={"new_table_name": "t2"}))

        # Reads and listings keep answering, with exactly what was acknowledged.
        assert _count(url, "ns$t") == acknowledged
        assert _count(url, "ns$t", f"id >= {refused_from}") == 0
        listed = httpx.get(f"{url}/v1/namespace/ns/table/list", timeout=60)
        assert listed.status_code == 200, listed.text
        assert "t" in listed.json()["tables"]
        assert listed.json()["tables"] == ["t"]
        assert _post(url, "table/ns$t/describe", json={}).status_code == 200
        assert httpx.get(f"{url}/v1/namespace/%24/list", timeout=60).status_code == 200

        # Space freed: the same server writes again, and the refused names are free.
        (small_disk / "filler").unlink()
        (small_disk / "filler-2").unlink(missing_ok=True)
        assert _insert(url, "ns$t", refused_from).status_code == 200
        assert _count(url, "ns$t") == acknowledged + BATCH_ROWS
        created = _post(url, "table/ns$u/create", headers=ARROW,
                        content=arrow_stream(sample_table(BATCH_ROWS)))
        assert created.status_code == 200, created.text
        assert _count(url, "ns$u") == BATCH_ROWS
        assert _post(url, "namespace/other/create", json={}).status_code == 200
        renamed = _post(url, "table/ns$t/rename", json={"new_table_name": "t2"})
        assert renamed.status_code == 200, renamed.text
        assert _count(url, "ns$t2") == acknowledged + BATCH_ROWS
