"""Settings reach the server's code as arguments: of `app/` and `backends/`, only the
configuration loader and the hand-over to forked workers (`app.workers.Handover`, the one
place settings cross a fork) read the process environment."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READS_ENVIRONMENT = re.compile(r"\bos\.environ\b|\bgetenv\b|from os import[^\n]*\benviron\b")
READERS = {"app/config.py", "app/workers.py"}


def test_only_the_loader_and_the_worker_handover_read_the_environment() -> None:
    sources = [*(ROOT / "app").rglob("*.py"), *(ROOT / "backends").rglob("*.py")]
    readers = {
        path.relative_to(ROOT).as_posix()
        for path in sources
        if READS_ENVIRONMENT.search(path.read_text(encoding="utf-8"))
    }
    assert readers == READERS
