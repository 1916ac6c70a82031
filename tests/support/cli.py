"""The real `lance-adapter serve` console script in a subprocess, for the CLI, gateway and
worker tests: `start_adapter` serves the recording stand-in (or any `--impl`) on a free port."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.common import free_port

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "lance-adapter")
RECORDING_IMPL = "tests.support.plugin_stand_ins.RecordingNamespace"


def cli_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The console script runs this checkout's code, even from a venv installed elsewhere."""
    return {**(env or os.environ), "PYTHONPATH": str(ROOT)}


def wait_until_serving(url: str, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        try:
            httpx.get(f"{url}/healthz", timeout=5)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("the server did not start")


def start_up_line(*arguments: str) -> dict:
    """The JSON log line `serve --port 0` writes on start, with the port it announces; the
    server runs until /healthz answers on that port."""
    process = subprocess.Popen(
        [CLI, "serve", "--port", "0", *arguments],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_environment(),
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # the start-up line comes before uvicorn's
        assert first.startswith("{"), first + process.stderr.read()
        line = json.loads(first)
        port = int(re.search(r" at http://[^/]+:(\d+)", line["message"])[1])
        wait_until_serving(f"http://127.0.0.1:{port}", process)
    finally:
        process.terminate()
        process.communicate(timeout=60)
    return {**line, "port": port}


@dataclass
class Adapter:
    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def log_lines(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self) -> int:
        """SIGTERM; uvicorn shuts down gracefully, then re-raises the signal (a
        multi-worker supervisor exits 0)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)

    def stopped_cleanly(self) -> bool:
        code = self.stop()
        return code in (0, -signal.SIGTERM) and "Finished server process" in self.log.read_text()


def resident_bytes(pid: int) -> int:
    """The resident set of process `pid` (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def start_adapter(tmp: Path, *arguments: str, **environment: str) -> Adapter:
    """`lance-adapter serve` of the recording stand-in (a later `--impl` in `arguments` wins) on
    a free port; returns once /healthz answers."""
    port = free_port()
    log = tmp / f"adapter-{port}.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANCE_ADAPTER_")}
    env.update(PYTHONPATH=str(ROOT), LANCE_ADAPTER_PORT=str(port), **environment)
    command = [CLI, "serve", "--impl", RECORDING_IMPL, *arguments]
    with log.open("wb") as output:
        process = subprocess.Popen(command, cwd=tmp, env=env, stdout=output,
                                   stderr=subprocess.STDOUT)
    adapter = Adapter(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the adapter exited: {log.read_text()}")
        try:
            if httpx.get(f"{adapter.url}/healthz", timeout=1).status_code == 200:
                return adapter
        except httpx.TransportError:
            time.sleep(0.1)
    adapter.stop()
    raise RuntimeError("the adapter did not start in time")
