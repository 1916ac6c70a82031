"""The layers: app/ knows HTTP and no catalog. No module of app/ imports a catalog's package
(`backends.directory`, `backends.glue`, ...); what the server needs of a backend it asks
through `backends.hooks`."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CATALOG_PACKAGES = ("directory", "glue", "hive", "unity", "iceberg", "rest_catalog")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def catalog_imports(directory: Path) -> list[str]:
    """`path: module` for each import of a catalog's package under `directory`."""
    return sorted(f"{path.relative_to(directory)}: {module}"
                  for path in directory.rglob("*.py") for module in imported_modules(path)
                  if module.split(".")[:2] in (["backends", name] for name in CATALOG_PACKAGES))


def test_no_module_of_app_imports_a_catalogs_package() -> None:
    assert catalog_imports(ROOT / "app") == []


def test_the_check_finds_a_catalog_import(tmp_path: Path) -> None:
    (tmp_path / "module.py").write_text(
        "from backends.directory.stamps import directory_stamper\nimport backends.glue\n"
        "from backends.core.operations import traits_of\n")
    assert catalog_imports(tmp_path) == ["module.py: backends.directory.stamps",
                                         "module.py: backends.glue"]
