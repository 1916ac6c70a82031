"""Java servers and jars for the tests, fetched from Maven Central by coordinates.

Each server has a small `pom.xml` under `tests/java/<name>/` that names what it needs. The first
call of `maven_classpath(name)` runs `mvn dependency:copy-dependencies` into a cache outside the
checkout (`$LANCE_ADAPTER_TEST_CACHE`, else `~/.cache/lance-namespace-adapter`), keyed by the
pom's digest and the versions lock/services.toml gives it (`tests.support.locked`); later
calls, and later test runs, reuse it. A fresh machine needs only Maven and
network access to Maven Central: the first fetch may take several minutes.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from tests.support.locked import dependency_plugin, pom_properties

POMS = Path(__file__).resolve().parent.parent / "java"
FETCH_TIMEOUT_SECONDS = 1800


def cache_root() -> Path:
    configured = os.environ.get("LANCE_ADAPTER_TEST_CACHE")
    root = Path(configured) if configured else Path.home() / ".cache" / "lance-namespace-adapter"
    root.mkdir(parents=True, exist_ok=True)
    return root


def maven_jars(name: str) -> Path:
    """The folder holding every jar `tests/java/<name>/pom.xml` depends on, fetched once."""
    pom = POMS / name / "pom.xml"
    versions = " ".join(pom_properties(name)).encode()
    digest = hashlib.sha256(pom.read_bytes() + versions).hexdigest()[:16]
    target = cache_root() / "maven" / f"{name}-{digest}"
    if (target / ".complete").exists():
        return target
    with open(cache_root() / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two test processes fetch once
        if not (target / ".complete").exists():
            _fetch(pom, pom_properties(name), target)
    return target


def maven_classpath(name: str) -> str:
    """A Java class path of every jar `tests/java/<name>/pom.xml` depends on."""
    return os.pathsep.join(str(jar) for jar in sorted(maven_jars(name).glob("*.jar")))


def _fetch(pom: Path, versions: list[str], target: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("mvn not found: the Java test servers are fetched with Maven")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    command = [mvn, "-q", "-B", "-f", str(pom), dependency_plugin("copy-dependencies"),
               *versions, f"-DoutputDirectory={partial}", "-DincludeScope=runtime"]
    fetched = subprocess.run(command, capture_output=True, text=True,
                             timeout=FETCH_TIMEOUT_SECONDS, check=False)
    if fetched.returncode != 0:
        raise RuntimeError(f"fetching the jars of {pom} failed:\n{fetched.stdout[-4000:]}"
                           f"{fetched.stderr[-4000:]}")
    (partial / ".complete").touch()
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
