"""kill -9 of the server at random moments of each kind of write, on a `dir` root on local
disk and on S3 (moto), then restarted (`tests/support/kill_cycles.py`): acknowledged writes
read back exactly once, unanswered ones are whole or absent, every listed table reads.
`bench/kill_faults.py` runs the same cycles at scale."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.glue import MotoEndpoint, s3_storage
from tests.support.kill_cycles import KINDS, Server, run_kind
from tests.support.kill_replicas import run_replicas

KILLS = 2


def _killed_and_checked(server: Server, kind: str) -> None:
    server.start()
    try:
        report = run_kind(server, kind, KILLS, seed=1)
    finally:
        server.kill()
    assert report.violations == [], report
    assert report.acked >= KILLS


@pytest.mark.parametrize("kind", KINDS)
def test_kill_9_on_a_local_root_loses_nothing_acknowledged(kind: str, tmp_path: Path) -> None:
    _killed_and_checked(Server(str(tmp_path / "root"), log=tmp_path / "server.log"), kind)


@pytest.mark.parametrize("kind", KINDS)
def test_kill_9_on_an_s3_root_loses_nothing_acknowledged(
    kind: str, tmp_path: Path, clean_moto: MotoEndpoint,
) -> None:
    clean_moto.client("s3").create_bucket(Bucket="lake")  # type: ignore[attr-defined]
    _killed_and_checked(
        Server("s3://lake/root", s3_storage(clean_moto.url), log=tmp_path / "server.log"), kind)


def test_a_replica_killed_and_restarted_loses_nothing_of_the_other(tmp_path: Path) -> None:
    """Two replicas on one root: one creates and inserts throughout while the other, inserting
    too, is killed and restarted three times."""
    root = str(tmp_path / "root")
    steady, killed = (Server(root, log=tmp_path / f"{name}.log") for name in ("a", "b"))
    steady.start()
    killed.start()
    try:
        report = run_replicas(killed, steady, restarts=3, seed=1)
    finally:
        killed.kill()
        steady.kill()
    assert report.violations == [], report
    assert report.acked >= 3
