"""The test environments come from the lock (lock/python.txt, lock/services.toml; `./run
upgrade` moves it: scripts/lock.py): the venv the suite runs in holds exactly the locked
versions, every server the suite fetches takes its version from the lock, and moving the lock
forward stays within each entry's line and keeps the file's comments."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import tomllib
from pathlib import Path
from types import ModuleType

from tests.support.locked import SERVICES, entries, pom_properties
from tests.support.maven import POMS

ROOT = Path(__file__).resolve().parents[1]
PYTHON_LOCK = ROOT / "lock" / "python.txt"


def lock_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lock_script", ROOT / "scripts" / "lock.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_pins() -> dict[str, str]:
    pins = [line.split("==", 1) for line in PYTHON_LOCK.read_text().splitlines()
            if line and not line.startswith("#")]
    return {canonical(name): version for name, version in pins}


def test_the_suite_runs_on_exactly_the_locked_python_packages() -> None:
    pins = locked_pins()
    installed = {canonical(dist.metadata["Name"]): dist.version
                 for dist in importlib.metadata.distributions()}
    installed.pop("lance-namespace-adapter")
    assert {name: version for name, version in installed.items()
            if pins.get(name) != version} == {}


def test_every_pom_takes_its_server_version_from_the_lock() -> None:
    for entry in entries().values():
        if "pom" not in entry:
            continue
        pom = (POMS / entry["pom"] / "pom.xml").read_text()
        assert f"${{{entry['property']}}}" in pom
        assert f"<{entry['property']}>" not in pom  # no second, hard-coded version
    assert pom_properties("iceberg-rest") == [
        f"-Diceberg.version={entries()['iceberg-rest']['version']}"]


def test_moving_the_lock_takes_the_newest_release_of_each_line_that_resolves() -> None:
    text = SERVICES.read_text()
    entries_now = tomllib.loads(text)
    current = {name: entry["version"] for name, entry in entries_now.items()}
    newest = {"iceberg-rest": ["1.10.1", "1.10.9", "1.10.10", "1.10.11", "1.11.0", "1.10.12-rc1"],
              "keycloak": [current["keycloak"], "27.0.0", "26.5.7.Final", "26.4.9"],
              "lance-spark": ["0.4.1"]}
    name_of = {entry["coordinates"]: name for name, entry in entries_now.items()}

    def published(entry: dict[str, str]) -> list[str]:
        return newest.get(name_of[entry["coordinates"]], [entry["version"]])

    def resolves(entry: dict[str, str], version: str) -> bool:
        return (name_of[entry["coordinates"]], version) not in {
            ("iceberg-rest", "1.10.11"), ("lance-spark", "0.4.1")}  # listed, not served whole

    moved, moves = lock_script().moved_services(text, published, resolves)
    after = tomllib.loads(moved)
    # Not 1.11.0 (another line), nor a release candidate, nor 1.10.11, which does not resolve.
    assert after["iceberg-rest"]["version"] == "1.10.10"
    assert after["keycloak"]["version"] == current["keycloak"]  # nothing newer in its line
    assert after["lance-spark"]["version"] == current["lance-spark"]  # kept: 0.4.1 is not whole
    assert moves == [
        "org.apache.iceberg:iceberg-open-api 1.10.11 does not resolve whole here",
        f"iceberg-rest: {current['iceberg-rest']} -> 1.10.10",
        "org.lance:lance-spark-3.5_2.12 0.4.1 does not resolve whole here"]
    changed = [line for line in moved.splitlines() if line not in text.splitlines()]
    assert changed == ['version = "1.10.10"']  # comments and every other line kept


def test_a_package_move_names_what_changed_came_and_went() -> None:
    before = "# header\na==1.0\nb==2.0\nc==3.0\n"
    after = "# header\na==1.0\nb==2.1\nd==4.0\n"
    assert lock_script().python_moves(before, after) == [
        "b: 2.0 -> 2.1", "c: 3.0 -> (none)", "d: (none) -> 4.0"]
