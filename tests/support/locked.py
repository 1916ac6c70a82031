"""The versions the suite fetches its servers and tools at: lock/services.toml, the one place
they are written (`./run upgrade` moves them forward; docs/contributing.md)."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "lock" / "services.toml"


@cache
def entries() -> dict[str, dict[str, str]]:
    with SERVICES.open("rb") as file:
        return tomllib.load(file)


def locked_version(name: str) -> str:
    return entries()[name]["version"]


def dependency_plugin(goal: str) -> str:
    """maven-dependency-plugin's `goal` by its full coordinates: named by prefix alone, Maven
    would run the newest release it finds in Maven Central."""
    entry = entries()["maven-dependency-plugin"]
    return f"{entry['coordinates']}:{entry['version']}:{goal}"


def pom_properties(pom: str) -> list[str]:
    """The `-D<property>=<version>` options that give `tests/java/<pom>/pom.xml` its versions."""
    return [f"-D{entry['property']}={entry['version']}"
            for entry in entries().values() if entry.get("pom") == pom]
