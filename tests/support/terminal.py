"""A new user's terminal, for the documentation walk (`tests/test_docs_walk.py`).

`Terminal` is one bash session: the blocks a page gives run in it one after another, so what
one sets (the directory, an exported variable, an activated venv) the next sees, and what it
sets without `export` no program started later sees, as at a prompt. `PythonSession` is one
Python interpreter, as a REPL a user keeps open for a page: its blocks share their names (the
reading example continues the writing one's `spark`). Every block is bounded in time.
"""

from __future__ import annotations

import base64
import os
import queue
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

# A Python session's program: reads blocks (a line with the length in characters, then the
# code), runs each in one namespace, and ends each with the marker line and its outcome.
_SESSION_DRIVER = r"""
import sys, traceback
names = {"__name__": "__main__"}
while True:
    head = sys.stdin.readline()
    if not head:
        break
    marker, size = head.split()
    code = sys.stdin.read(int(size))
    status = 0
    try:
        exec(compile(code, "<block>", "exec"), names)
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        status = 1
    sys.stdout.flush()
    print(f"\n{marker} {status}", flush=True)
"""


@dataclass(frozen=True)
class Outcome:
    status: int  # 0: every command of the block succeeded
    output: str


class _Session:
    """A child process that answers each block with its output, then a marker line holding
    the block's status."""

    def __init__(self, command: list[str], cwd: Path, environment: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command, cwd=cwd, env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text)
        self.process.stdin.flush()

    def _outcome(self, marker: str, timeout: float) -> Outcome:
        deadline, output = time.monotonic() + timeout, []
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.close()
                return Outcome(124, "".join(output) + f"\n(no end within {timeout:.0f} s)")
            if line is None:
                return Outcome(125, "".join(output) + "\n(the session ended)")
            if line.startswith(marker):
                return Outcome(int(line.split()[1]), "".join(output))
            output.append(line)

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)


class Terminal(_Session):
    """One bash session in `cwd` with `environment`."""

    def __init__(self, cwd: Path, environment: dict[str, str]) -> None:
        super().__init__(["bash", "--noprofile", "--norc"], cwd, environment)

    def run(self, script: str, timeout: float) -> Outcome:
        """The block `script`, typed into the session; its status is 1 if any of its commands
        failed (each is judged, as a reader would see it fail), else 0."""
        marker = f"@@block-{uuid.uuid4().hex}@@"
        self._send(f"__failed=0\ntrap '__failed=1' ERR\n{script}\ntrap - ERR\n"
                   f"printf '\\n{marker} %s\\n' \"$__failed\"\n")
        return self._outcome(marker, timeout)

    def environment(self) -> tuple[Path, dict[str, str]]:
        """The session's directory and exported variables now: what a program it starts gets."""
        dump = self.run("pwd; env -0 | base64 -w0; echo", timeout=30).output.split("\n")
        directory, encoded = [line for line in dump if line][:2]
        pairs = base64.b64decode(encoded).decode().split("\0")
        return Path(directory), dict(pair.split("=", 1) for pair in pairs if "=" in pair)


class PythonSession(_Session):
    """One interpreter, `python`, started in `cwd` with `environment`."""

    def __init__(self, python: str, cwd: Path, environment: dict[str, str]) -> None:
        super().__init__([python, "-u", "-c", _SESSION_DRIVER], cwd, environment)

    def run(self, code: str, timeout: float) -> Outcome:
        marker = f"@@block-{uuid.uuid4().hex}@@"
        self._send(f"{marker} {len(code)}\n{code}")
        return self._outcome(marker, timeout)
