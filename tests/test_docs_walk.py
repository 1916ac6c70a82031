"""A new user's walk through the documentation: the quick start's server started as README
says (`./run serve`, in the foreground of its own terminal), then, in the site's order (README,
then mkdocs.yml's nav), every block the suite runs that talks to that server, typed into one
second terminal (`tests.support.terminal`): bash blocks in one shell session, each page's
Python blocks in one interpreter started from it. Nothing is reset between blocks, so a block
that only works alone, on a fresh server or in a fresh shell, fails the walk. The one change to
what the pages say is the port: the server takes a free one, which replaces 2333."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.cli import ROOT
from tests.support.common import free_port
from tests.support.doc_blocks import Block, documented_blocks
from tests.support.terminal import PythonSession, Terminal

ADDRESS = "127.0.0.1:2333"
SHELLS = ("bash", "sh")
BLOCK_TIMEOUT_SECONDS = 900
START_TIMEOUT_SECONDS = 300
# What a new user's terminal does not hold: the settings of the suite's own run.
SUITE_VARIABLES = ("LANCE_ADAPTER_", "PYSPARK_", "SPARK_", "PYTEST_", "PYTHONPATH")


def site_pages() -> list[str]:
    """README, then the site's pages in the order of its navigation."""
    def pages(entries: list) -> Iterator[str]:
        for entry in entries:
            for value in entry.values():
                yield from pages(value) if isinstance(value, list) else [f"docs/{value}"]

    return ["README.md", *pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])]


def walked_blocks() -> list[Block]:
    """The blocks of the walk, in order: on each page that sends the quick start's server a
    block the suite runs, every shell and Python block the suite runs."""
    blocks = [block for block in documented_blocks()
              if block.run_by and block.language in (*SHELLS, "python")]
    walked = []
    for page in site_pages():
        on_page = [block for block in blocks if block.page == page]
        if any(ADDRESS in block.code for block in on_page):
            walked += on_page
    return walked


def checkout_copy(directory: Path) -> Path:
    """A directory that looks like the checkout to a user (each entry a link to the real one,
    the venv the suite runs in as `.venv`), so the walk writes nothing into the checkout."""
    directory.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in (".venv", ".git", "lance-data", ".cache"):
            (directory / entry.name).symlink_to(entry)
    (directory / ".venv").symlink_to(Path(sys.prefix))
    return directory


def user_environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items()
            if not key.startswith(SUITE_VARIABLES)}


@pytest.fixture
def quick_start(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """`./run serve --port N` in the checkout, as its own terminal runs it: (the checkout, N).
    It is used as soon as its first line is read (the line comes once the port takes
    connections), and must stop cleanly on Ctrl-C's signal."""
    checkout, port = checkout_copy(tmp_path / "checkout"), free_port()
    server = subprocess.Popen(["./run", "serve", "--port", str(port)], cwd=checkout,
                              env=user_environment(), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert f"at http://127.0.0.1:{port}" in first, first + server.stdout.read()
        yield checkout, port
    finally:
        os.killpg(server.pid, signal.SIGINT)
        output, _ = server.communicate(timeout=START_TIMEOUT_SECONDS)
    assert server.returncode == 0, output


def test_the_pages_walked_in_order_beside_the_quick_start_server(
    quick_start: tuple[Path, int],
) -> None:
    checkout, port = quick_start
    blocks = walked_blocks()
    pages = list(dict.fromkeys(block.page for block in blocks))
    assert pages[:2] == ["README.md", "docs/getting-started.md"] and len(blocks) >= 15, pages
    terminal = Terminal(checkout, user_environment())
    sessions: dict[str, PythonSession] = {}
    try:
        assert terminal.run(". .venv/bin/activate", timeout=30).status == 0  # getting-started
        for block in blocks:
            code = block.code.replace(ADDRESS, f"127.0.0.1:{port}")
            if block.language in SHELLS:
                outcome = terminal.run(code, BLOCK_TIMEOUT_SECONDS)
            else:
                if block.page not in sessions:  # a REPL opened at the page's first block
                    directory, environment = terminal.environment()
                    python = shutil.which("python", path=environment["PATH"])
                    assert python, "no python on the terminal's PATH"
                    sessions[block.page] = PythonSession(python, directory, environment)
                outcome = sessions[block.page].run(code, BLOCK_TIMEOUT_SECONDS)
            assert outcome.status == 0, f"{block} failed in the walk:\n{code}\n{outcome.output}"
    finally:
        for session in [terminal, *sessions.values()]:
            session.close()
