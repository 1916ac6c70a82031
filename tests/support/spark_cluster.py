"""A Spark standalone cluster from the pyspark wheel: a master and workers as separate JVMs
on 127.0.0.1, each worker's executors with Python workers of their own.

The executors' Python cannot import this project (a `sitecustomize` on their path hides
the editable install and the checkout), so everything they run must reach them through
Spark, as on a real cluster. A worker may get a private mount namespace in which one
directory is replaced by another: storage that this worker sees differently from the
driver.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from tests.support.common import free_port

SPARK_HOME = Path(pyspark.__file__).resolve().parent
HIDE_PROJECT = """
import sys
# Executors of the cluster tests must not find this project by themselves.
sys.meta_path[:] = [f for f in sys.meta_path if "lance_namespace_adapter" not in f.__module__]
sys.path[:] = [p for p in sys.path if p not in {hidden!r}]
"""


@dataclass
class Worker:
    process: subprocess.Popen
    log: Path
    command: list[str]
    env: dict[str, str]
    cluster_processes: list[subprocess.Popen]

    def start_again(self) -> None:
        """Start the worker again, as it was first started (after `kill`)."""
        self.process = _start(self.command, self.env, self.log)
        self.cluster_processes.append(self.process)

    def kill(self) -> None:
        """SIGKILL the worker with its executor and Python workers (its process group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


@dataclass
class Cluster:
    master_url: str
    ui_url: str
    workdir: Path
    processes: list[subprocess.Popen] = field(default_factory=list)
    workers: list[Worker] = field(default_factory=list)

    def alive_workers(self) -> int:
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as answer:
            state = json.load(answer)
        return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")

    def stop(self) -> None:
        for process in reversed(self.processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=20)


def _environment(workdir: Path, hidden_paths: list[str]) -> dict[str, str]:
    hide = workdir / "hide-project"
    hide.mkdir(exist_ok=True)
    (hide / "sitecustomize.py").write_text(HIDE_PROJECT.format(hidden=set(hidden_paths)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_"))}
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(workdir / "logs"),
        PYTHONPATH=str(hide),
        PYSPARK_PYTHON=sys.executable,
    )
    return env


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("wb") as output:
        return subprocess.Popen(
            command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )


def start_cluster(
    workdir: Path,
    hidden_paths: list[str],
    workers: int = 2,
    private_mounts: dict[int, tuple[Path, Path]] | None = None,
    timeout: float = 90,
    worker_memory: str = "1g",
) -> Cluster:
    """Start a master and `workers` one-core workers; `private_mounts[i] = (path, other)`
    makes worker i see directory `other` at `path`."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = _environment(workdir, hidden_paths)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, ui_port = free_port(), free_port()
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", workdir)
    master = [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
    master += ["--port", str(port), "--webui-port", str(ui_port)]
    try:
        cluster.processes.append(_start(master, env, workdir / "master.log"))
        _wait(lambda: _answers(cluster.ui_url), timeout, "the master's web UI", workdir)
        for number in range(workers):
            command = [spark_class, "org.apache.spark.deploy.worker.Worker", cluster.master_url]
            command += ["--host", "127.0.0.1", "--cores", "1", "--memory", worker_memory]
            command += ["--webui-port", str(free_port())]
            command += ["--work-dir", str(workdir / f"worker-{number}")]
            mount = (private_mounts or {}).get(number)
            if mount:
                path, other = mount
                script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
                command = ["unshare", "-m", "--propagation", "private", "sh", "-c", script,
                           "sh", str(other), str(path), *command]  # fmt: skip
            log = workdir / f"worker-{number}.log"
            process = _start(command, env, log)
            cluster.processes.append(process)
            cluster.workers.append(Worker(process, log, command, env, cluster.processes))
        _wait(lambda: cluster.alive_workers() == workers, timeout, "the workers", workdir)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(f"{url}/json/", timeout=2).close()
        return True
    except OSError:
        return False


def _wait(ready, timeout: float, what: str, workdir: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            if ready():
                return
        time.sleep(0.5)
    logs = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in workdir.glob("*.log"))
    raise RuntimeError(f"{what} did not come up within {timeout:.0f}s\n{logs}")


def can_unshare_mounts() -> bool:
    """Whether this machine lets us give a process a private mount namespace (root)."""
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "true"], capture_output=True, timeout=30
    )
    return probe.returncode == 0
