"""Moves the test environments' lock forward (`./run upgrade`; docs/contributing.md).

lock/python.txt is pip's constraints for every venv `./run` makes: the versions of the test
extra's whole tree (pip and setuptools included) the suite last passed with. It is resolved
anew in a scratch venv from pyproject.toml's ranges, which stay what users install with.
lock/services.toml names the servers and tools the suite fetches; each entry moves to the
newest release of its `line` on Maven Central or PyPI that resolves whole (Maven fetches its
pom's every dependency at that version: a release listed before all its modules are served
is passed over, and said so). Only the standard library is used: this runs before any venv
exists.

    python3 scripts/lock.py upgrade
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
import urllib.request
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
PYTHON_LOCK = CHECKOUT / "lock" / "python.txt"
POMS = CHECKOUT / "tests" / "java"
SERVICES_LOCK = CHECKOUT / "lock" / "services.toml"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
PYPI = "https://pypi.org/pypi"
TIMEOUT_SECONDS = 60
INSTALL_TIMEOUT_SECONDS = 1800
RELEASE = re.compile(r"^\d+(\.\d+)*$")  # no -rc, -beta, .post, .dev: releases only
PYTHON_HEADER = """\
# pip constraints for every venv ./run makes (PIP_CONSTRAINT): the test extra's whole tree at
# the versions the suite last passed with. Written by `./run upgrade` (scripts/lock.py) from
# pyproject.toml's ranges; edit pyproject.toml, not this file.
"""


def resolve_python() -> str:
    """The newest versions pyproject.toml's ranges allow, installed in a scratch venv."""
    with tempfile.TemporaryDirectory(prefix="lance-adapter-lock-") as scratch:
        python = Path(scratch) / "venv" / "bin" / "python"
        _run([sys.executable, "-m", "venv", str(python.parents[1])])
        pip = [str(python), "-m", "pip", "--disable-pip-version-check"]
        _run([*pip, "install", "--upgrade", "pip", "setuptools"])
        _run([*pip, "install", "-e", f"{CHECKOUT}[test]"])
        frozen = _run([*pip, "freeze", "--all", "--exclude-editable"])
    return PYTHON_HEADER + frozen


def _run(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          timeout=INSTALL_TIMEOUT_SECONDS,
                          env=_without_constraints())
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}"
                         f"{done.stderr[-3000:]}")
    return done.stdout


def _without_constraints() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "PIP_CONSTRAINT"}


Published = Callable[[dict[str, str]], list[str]]
Resolves = Callable[[dict[str, str], str], bool]


def newest_in_line(entry: dict[str, str], published: Published, resolves: Resolves,
                   skipped: list[str]) -> str:
    """The newest release of `entry`'s line among the versions `published` lists for it that
    `resolves`, never older than the locked one; each newer one passed over goes to
    `skipped`."""
    line, locked = entry["line"], _key(entry["version"])
    candidates = sorted((version for version in published(entry)
                         if RELEASE.match(version) and version.startswith(line)
                         and _key(version) > locked), key=_key, reverse=True)
    for version in candidates:
        if resolves(entry, version):
            return version
        skipped.append(f"{entry['coordinates']} {version} does not resolve whole here")
    return entry["version"]


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def resolves_whole(entry: dict[str, str], version: str) -> bool:
    """Whether Maven fetches the entry at `version`: its pom's whole dependency tree, or the
    artifact's own pom (`-U`: a miss remembered from an earlier try is tried again)."""
    if entry["source"] != "maven":
        return True  # pip resolves it with the rest of lock/python.txt, or fails there
    if "pom" not in entry:
        group, artifact = entry["coordinates"].split(":")
        url = (f"{MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}/{version}/"
               f"{artifact}-{version}.pom")
        try:
            _fetch(url)
        except OSError:
            return False
        return True
    plugin = tomllib.loads(SERVICES_LOCK.read_text())["maven-dependency-plugin"]
    command = ["mvn", "-q", "-B", "-U", "-f", str(POMS / entry["pom"] / "pom.xml"),
               f"{plugin['coordinates']}:{plugin['version']}:resolve",
               f"-D{entry['property']}={version}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          timeout=INSTALL_TIMEOUT_SECONDS)
    return done.returncode == 0


def published_versions(entry: dict[str, str]) -> list[str]:
    """Every version of `entry` its source (Maven Central or PyPI) lists."""
    if entry["source"] == "pypi":
        document = json.loads(_fetch(f"{PYPI}/{entry['coordinates']}/json"))
        return list(document["releases"])
    group, artifact = entry["coordinates"].split(":")
    url = f"{MAVEN_CENTRAL}/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"
    metadata = ElementTree.fromstring(_fetch(url))
    return [element.text or "" for element in metadata.iter("version")]


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as answer:
        return answer.read()


def moved_services(
    text: str, published: Published, resolves: Resolves
) -> tuple[str, list[str]]:
    """lock/services.toml's text with every version at the newest of its line that resolves
    (comments kept), and a line saying each move and each release passed over."""
    moves: list[str] = []
    for name, entry in tomllib.loads(text).items():
        newest = newest_in_line(entry, published, resolves, moves)
        if newest == entry["version"]:
            continue
        # The section's own `version = ` line: no section header (a line opening "[") between.
        section = re.compile(rf'(^\[{re.escape(name)}\]$(?:(?!^\[).)*?^version = )'
                             rf'"{re.escape(entry["version"])}"', re.MULTILINE | re.DOTALL)
        text = section.sub(rf'\g<1>"{newest}"', text, count=1)
        moves.append(f"{name}: {entry['version']} -> {newest}")
    return text, moves


def python_moves(before: str, after: str) -> list[str]:
    """A line for each package whose locked version changed, came or went."""
    def pins(text: str) -> dict[str, str]:
        return dict(line.split("==", 1) for line in text.splitlines() if "==" in line)

    old, new = pins(before), pins(after)
    return [f"{name}: {old.get(name, '(none)')} -> {new.get(name, '(none)')}"
            for name in sorted(old.keys() | new.keys()) if old.get(name) != new.get(name)]


def upgrade() -> None:
    services, service_moves = moved_services(SERVICES_LOCK.read_text(), published_versions,
                                             resolves_whole)
    python = resolve_python()
    package_moves = python_moves(PYTHON_LOCK.read_text() if PYTHON_LOCK.exists() else "", python)
    SERVICES_LOCK.write_text(services)
    PYTHON_LOCK.write_text(python)
    for move in service_moves + package_moves or ["nothing newer: the lock is unchanged"]:
        print(f"./run upgrade: {move}", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:] != ["upgrade"]:
        raise SystemExit("usage: python3 scripts/lock.py upgrade")
    upgrade()
