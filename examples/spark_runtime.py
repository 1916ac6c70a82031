"""What a pipeline script needs around Spark: a session, an adapter to talk to, progress."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from pyspark.sql import SparkSession

from lance_adapter_spark.api import register, session_conf

REPO_ROOT = Path(__file__).resolve().parent.parent  # the checkout, beside lance_adapter_spark/


def local_spark(app_name: str, cores: int = 2, memory: str = "4g") -> SparkSession:
    """A local Spark session whose Python workers import this checkout, with `lance` registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])
    )
    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config(map=session_conf())
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # Progress below reports instead
        .config("spark.sql.shuffle.partitions", str(cores * 2))
        .config("spark.driver.memory", memory)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


@contextlib.contextmanager
def embedded_adapter(root: Path) -> Iterator[str]:
    """This project's adapter (`lance-adapter serve`) on a dir backend, as a child process."""
    port = _free_port()
    command = [sys.executable, "-m", "app.cli", "serve", "--prop", f"root={root}"]
    command += ["--port", str(port), "--log-level", "warning"]
    server = subprocess.Popen(command, cwd=REPO_ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(url, server)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_serving(url: str, server: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the adapter exited with code {server.returncode}")
        try:
            urllib.request.urlopen(f"{url}/v1/namespace/%24/list", timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # it answers, whatever it thinks of the request
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the adapter did not answer at {url} within {timeout:.0f}s")


class Progress:
    """Prints the step being run and, while Spark works, its tasks done per stage."""

    def __init__(self, spark: SparkSession, interval: float = 2.0) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.interval = interval
        self.started = time.monotonic()

    @contextlib.contextmanager
    def step(self, title: str) -> Iterator[None]:
        print(f"[{self._elapsed()}] {title} ...", flush=True)
        step_started = time.monotonic()
        stop = threading.Event()
        watcher = threading.Thread(target=self._watch, args=(stop,), daemon=True)
        watcher.start()
        try:
            yield
        finally:
            stop.set()
            watcher.join()
        print(f"[{self._elapsed()}] {title}: done in {time.monotonic() - step_started:.1f}s")

    def _watch(self, stop: threading.Event) -> None:
        while not stop.wait(self.interval):
            stages = [self.tracker.getStageInfo(i) for i in self.tracker.getActiveStageIds()]
            running = [
                f"stage {s.stageId}: {s.numCompletedTasks}/{s.numTasks} tasks" for s in stages if s
            ]
            if running:
                print(f"[{self._elapsed()}]   {'; '.join(running)}", flush=True)

    def _elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60:02d}:{seconds % 60:02d}"
