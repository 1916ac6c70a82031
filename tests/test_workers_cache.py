"""Workers: their default count, and the metadata cache of a real multi-worker server: a write
through one worker is seen at once by every worker, although each keeps its own entries for a
minute (glue on moto: no storage check, only the TTL and the shared generation)."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cli import Adapter, start_adapter
from tests.support.common import run_python
from tests.support.glue import MotoEndpoint, glue_properties
from tests.support.lance_data import arrow_stream, sample_table

TABLE = "ns$t"
ROUNDS = 24  # requests per check, each on a new connection, so both workers answer


def default_workers_on_cpus(cpus: set[int]) -> int:
    """`workers` as the CLI would load it, in a process allowed to run on `cpus` only."""
    script = (
        f"import os; os.sched_setaffinity(0, {sorted(cpus)!r}); "
        "from app.config import load_settings; print(load_settings(environ={}).workers)"
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LANCE_ADAPTER_")}
    result = run_python(script, env=environment, cwd=Path(__file__).parents[1])
    assert result.returncode == 0, result.stderr
    return int(result.stdout)


def test_the_default_worker_count_follows_the_usable_cpus() -> None:
    usable = os.sched_getaffinity(0)
    assert default_workers_on_cpus(usable) == len(usable)
    assert default_workers_on_cpus({min(usable)}) == 1


@pytest.fixture
def two_workers(clean_moto: MotoEndpoint, tmp_path: Path) -> Iterator[Adapter]:
    properties = glue_properties(clean_moto.url, root=str(tmp_path / "warehouse"))
    options = [item for key, value in properties.items() for item in ("--prop", f"{key}={value}")]
    adapter = start_adapter(
        tmp_path, "--impl", "glue", "--workers", "2", *options,
        LANCE_ADAPTER_METADATA_CACHE_TTL="60",
    )
    yield adapter
    adapter.stop()


def describe(adapter: Adapter) -> httpx.Response:
    # A new connection per request: the kernel hands connections to either worker.
    return httpx.post(
        f"{adapter.url}/v1/table/{TABLE}/describe", json={"load_detailed_metadata": True},
        timeout=30,
    )


def versions_seen(adapter: Adapter) -> set[int | None]:
    answers = [describe(adapter) for _ in range(ROUNDS)]
    assert all(answer.status_code == 200 for answer in answers), answers[0].text
    return {answer.json().get("version") for answer in answers}


def describing_pids(adapter: Adapter) -> set[int]:
    return {
        line["pid"] for line in adapter.log_lines()
        if line.get("operation") == "DescribeTable" and line.get("status") == 200
    }


def test_a_write_on_one_worker_is_seen_at_once_by_every_worker(two_workers: Adapter) -> None:
    url = two_workers.url
    assert httpx.post(f"{url}/v1/namespace/ns/create", json={}).status_code == 200
    created = httpx.post(f"{url}/v1/table/{TABLE}/create", content=arrow_stream(sample_table(2)))
    assert created.status_code == 200, created.text
    (first,) = versions_seen(two_workers)
    # The kernel may hand a run of connections to one worker, and access lines reach the log
    # in batches: more rounds, until both workers answered (bounded).
    deadline = time.monotonic() + 60
    while len(describing_pids(two_workers)) < 2 and time.monotonic() < deadline:
        assert versions_seen(two_workers) == {first}
    assert len(describing_pids(two_workers)) == 2, "both workers must hold a cached answer"

    inserted = httpx.post(
        f"{url}/v1/table/{TABLE}/insert", content=arrow_stream(sample_table(1, start=9))
    )
    assert inserted.status_code == 200, inserted.text
    assert versions_seen(two_workers) == {first + 1}

    assert httpx.post(f"{url}/v1/table/{TABLE}/drop", json={}).status_code == 200
    gone = [describe(two_workers).status_code for _ in range(ROUNDS)]
    assert gone == [404] * ROUNDS


def process_tree(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [pid, *(p for child in children for p in process_tree(int(child)))]


def _handed(pids: list[int], name: bytes) -> str:
    """The value of environment variable `name` the workers of `pids` inherited."""
    for pid in pids[1:]:
        for value in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
            if value.startswith(name + b"="):
                return value.split(b"=", 1)[1].decode()
    raise AssertionError(f"no worker has {name!r}")


@pytest.mark.parametrize("ending", ["stop", "kill -9"])
def test_worker_settings_with_secrets_are_in_no_environment_and_no_file_left(
    tmp_path: Path, ending: str
) -> None:
    """The workers' settings file is sealed with a pad only the processes' environment holds:
    neither an environment nor the file (which a SIGKILL of every process leaves behind)
    holds the secret."""
    secret = "server-secret-of-the-workers"
    adapter = start_adapter(
        tmp_path, "--workers", "2", "--prop", f"root={tmp_path / 'data'}",
        "--prop", f"storage.aws_secret_access_key={secret}",
    )
    try:
        pids = process_tree(adapter.process.pid)
        assert len(pids) >= 3, "a supervisor and two workers"
        environments = [Path(f"/proc/{pid}/environ").read_bytes() for pid in pids]
        assert not any(secret.encode() in environment for environment in environments)
        settings_file = Path(_handed(pids, b"LANCE_ADAPTER_SETTINGS_FILE"))
        assert os.stat(settings_file).st_mode & 0o077 == 0
        assert secret.encode() not in settings_file.read_bytes()
        assert httpx.get(f"{adapter.url}/v1/namespace/$/list", timeout=10).status_code == 200
        if ending == "kill -9":
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
    finally:
        adapter.stop()
    if ending == "stop":
        assert not settings_file.exists()
    else:  # nothing could remove it: it must hold nothing of use
        assert settings_file.exists()
        assert secret.encode() not in settings_file.read_bytes()
        shutil.rmtree(settings_file.parent)


def test_workers_end_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    adapter = start_adapter(tmp_path, "--workers", "2", "--prop", f"root={tmp_path / 'data'}")
    workers = process_tree(adapter.process.pid)[1:]
    assert len(workers) >= 2
    adapter.process.kill()  # SIGKILL: the supervisor cannot stop its workers itself
    adapter.process.wait(timeout=30)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.1)
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()
             and "zombie" not in Path(f"/proc/{pid}/status").read_text()]
    assert not alive, f"orphaned workers still running: {alive}"
    with pytest.raises(httpx.ConnectError, match="Connection refused"):
        httpx.get(f"{adapter.url}/healthz", timeout=2)
