"""Every module, attribute and file a docstring or comment of the code names in backticks
exists: `backends.guard.GuardedNamespace`, `app.cache`, `tests/support/table_steps.py`."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "backends", "lance_adapter_spark", "tests", "bench", "examples")
_PACKAGE = "|".join(PACKAGES)
_PLACES = "|".join((*PACKAGES, "docs", "helm", "deploy", "scripts", "shared"))
DOTTED = re.compile(rf"`((?:{_PACKAGE})(?:\.\w+)+)")
FILE = re.compile(rf"`((?:{_PLACES})/[\w/.-]+\.(?:py|md|yaml|yml|json|xml|toml|sh))`")
SOURCES = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
           if ".venv" not in path.parts and path.name != "test_references.py"]


def resolves(dotted: str) -> bool:
    """Whether `dotted` names a module, or an attribute (at any depth) of one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def stale_references(path: Path) -> list[str]:
    text = path.read_text()
    stale = [f"{path.relative_to(ROOT)}: {name}" for name in set(DOTTED.findall(text))
             if not resolves(name)]
    stale += [f"{path.relative_to(ROOT)}: {name}" for name in set(FILE.findall(text))
              if "*" not in name and not (ROOT / name).exists()]
    return stale


def test_every_module_attribute_and_file_named_in_the_code_exists() -> None:
    assert len(SOURCES) > 100
    assert sorted(line for path in SOURCES for line in stale_references(path)) == []


def test_the_check_finds_a_stale_name(tmp_path: Path) -> None:
    module = ROOT / "tests" / "support" / "_stale_probe.py"
    module.write_text('"""See `backends.data`, `backends.guard.NoSuchThing`, '
                      '`tests/table_steps.py` and `backends.guard.GuardedNamespace`."""\n')
    try:
        assert sorted(stale_references(module)) == [
            "tests/support/_stale_probe.py: backends.data",
            "tests/support/_stale_probe.py: backends.guard.NoSuchThing",
            "tests/support/_stale_probe.py: tests/table_steps.py"]
    finally:
        module.unlink()
