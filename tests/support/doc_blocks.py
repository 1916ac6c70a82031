"""The fenced code blocks of README.md and docs/, and how each says it is checked.

A block is either run by a test, named on the line before its fence by a comment the site
does not show (`<!-- run by tests/test_doc_examples.py::test_name -->`), or the paragraph
before it says, visibly, "Not run by the test suite" and why. `tests/test_doc_blocks.py`
holds every block to one of the two, and a block marked as not run must hold something the
suite cannot do here (a cloud account, a cluster, a package index, a server that runs in
the foreground, the suite itself), so that the marker cannot hide a block it could run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN_BY = re.compile(r"<!-- run by (tests/[\w/]+\.py)::(\w+) -->")
NOT_RUN = "Not run by the test suite"
# What a block marked as not run must hold at least one of.
UNRUNNABLE = (
    "helm ", "kubectl", "docker", "pip install", "apt-get", "mvn ", "spark-submit",
    "pytest", "./run test", "./run serve", "mkdocs serve", "thrift://metastore:", "region=",
    "s3://", '"Statement"', "mypackage.", "import duckdb", "import ray", "venv-pack",
    "<dependency>", "lance-adapter:2333", "spark://", "--under unity", "extraClassPath",
    "[the options of serve]",
)
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language and code, and the text that leads to it
    (its paragraph and the comment line before the fence; empty right after another block)."""

    page: str
    line: int
    language: str
    code: str
    preface: str

    @property
    def run_by(self) -> tuple[str, str] | None:
        """The test file and test function the block names as running it."""
        found = RUN_BY.search(self.preface)
        return (found.group(1), found.group(2)) if found else None

    @property
    def not_run(self) -> bool:
        return NOT_RUN in " ".join(self.preface.split())  # the marker may wrap

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def page_blocks(text: str, page: str) -> list[Block]:
    """The blocks of one Markdown `text` (named `page` in messages)."""
    found, previous_end = [], 0
    for fence in _FENCE.finditer(text):
        before = text[previous_end:fence.start()]
        paragraphs = re.split(r"\n\s*\n", before.rstrip("\n"))
        found.append(Block(page, text.count("\n", 0, fence.start()) + 1, fence.group(1),
                           fence.group(2), paragraphs[-1] if paragraphs else ""))
        previous_end = fence.end()
    return found


def documented_blocks() -> list[Block]:
    """Every block of README.md and of the pages under docs/."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [block for path in pages
            for block in page_blocks(path.read_text(), str(path.relative_to(ROOT)))]


def blocks_run_by(test_file: str, test: str) -> list[Block]:
    """The blocks that name `test` of `test_file` as running them, in page order."""
    return [block for block in documented_blocks() if block.run_by == (test_file, test)]


def problems(block: Block) -> list[str]:
    """What is wrong with how `block` says it is checked (nothing: an empty list)."""
    run_by = block.run_by
    if run_by is None and not block.not_run:
        return [f"{block}: neither run by a test nor marked '{NOT_RUN}'"]
    if run_by is not None and block.not_run:
        return [f"{block}: both run by a test and marked '{NOT_RUN}'"]
    if run_by is not None:
        test_file, test = run_by
        path = ROOT / test_file
        if not path.is_file() or not re.search(rf"^def {test}\(", path.read_text(), re.M):
            return [f"{block}: names {test_file}::{test}, which does not exist"]
        return []
    if not any(token in block.code for token in UNRUNNABLE):
        return [f"{block}: marked '{NOT_RUN}' but holds nothing the suite cannot run here"]
    return []
