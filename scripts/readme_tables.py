"""The documentation's generated tables, written between their markers; a test checks them.

A table named NAME is written between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in whichever
file of the documentation holds those markers (README.md, docs/**/*.md, bench/README.md):
the routes, the support matrix and the error codes in docs/reference.md, every settings class's
property table in docs/configuration.md.

    .venv/bin/python scripts/readme_tables.py          # rewrite the files
    .venv/bin/python scripts/readme_tables.py --check  # exit 1 when a file is stale
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.spec import AnswerKind, BodyKind, Operation, load_operations  # noqa: E402

README = ROOT / "README.md"
DOCS = ROOT / "docs"


def documentation_files() -> list[Path]:
    """Every Markdown file of the documentation, README.md first."""
    return [README, *sorted(DOCS.rglob("*.md")), ROOT / "bench" / "README.md"]

_BODY = {
    BodyKind.JSON: "JSON",
    BodyKind.ARROW: "Arrow IPC stream",
    BodyKind.NONE: "none",
    BodyKind.FIELD: "JSON object",
}
_ANSWER = {
    AnswerKind.JSON: "JSON",
    AnswerKind.INTEGER: "bare integer",
    AnswerKind.STRING: "JSON string",
    AnswerKind.ARROW_FILE: "Arrow IPC file",
    AnswerKind.STATUS: "status only",
    AnswerKind.FIELD: "JSON object",
}


def _query(operation: Operation) -> str:
    names = [p.name for p in operation.query_parameters if p.name != "delimiter"]
    return ", ".join(f"`{name}`" for name in names)


def _request(operation: Operation) -> str:
    body = _BODY[operation.body]
    query = _query(operation)
    return f"{body}; query {query}" if query else body


def route_table() -> str:
    lines = [
        "| operation | `/v1/` route | request | answer |",
        "|---|---|---|---|",
    ]
    for operation in sorted(load_operations(), key=lambda op: op.operation_id):
        if operation.path is None:
            route = f"— (`POST /{operation.operation_id}` only)"
        else:
            route = f"`{operation.method} {operation.path}`"
        name = operation.operation_id
        if operation.target_id:
            name += f" (= {operation.target_id})"
        status = "" if operation.status == 200 else f" ({operation.status})"
        lines.append(
            f"| {name} | {route} | {_request(operation)} | {_ANSWER[operation.answer]}{status} |"
        )
    return "\n".join(lines)


def support_matrix() -> str:
    """Which backend supports which operation, as ListOperations computes it per class.

    A plug-in (`module.Class`) gets every generic table operation like the catalog backends.
    """
    from backends import IMPLS, resolve_impl
    from backends.capabilities import supported_operations

    supported = {impl: set(supported_operations(resolve_impl(impl))) for impl in IMPLS}
    aliases = {op.operation_id: op.target_id for op in load_operations() if op.target_id}
    lines = [
        "| operation | " + " | ".join(f"`{impl}`" for impl in IMPLS) + " |",
        "|---|" + "---|" * len(IMPLS),
    ]
    for operation in sorted(op.operation_id for op in load_operations()):
        backend_id = aliases.get(operation, operation)
        marks = ["✓" if backend_id in supported[impl] else "0" for impl in IMPLS]
        lines.append(f"| {operation} | " + " | ".join(marks) + " |")
    return "\n".join(lines)


def error_codes() -> str:
    """Each Lance error code with the HTTP status the server answers it with (app/errors.py)."""
    from lance_namespace import ErrorCode

    from app.errors import HTTP_STATUS_BY_CODE

    lines = ["| code | name | HTTP |", "|---|---|---|"]
    for code in sorted(ErrorCode, key=int):
        name = "".join(word.capitalize() for word in code.name.split("_"))
        lines.append(f"| {int(code)} | {name} | {HTTP_STATUS_BY_CODE.get(code, 500)} |")
    return "\n".join(lines)


def settings_tables() -> dict[str, Callable[[], str]]:
    """The server's settings table and each backend's property table, under a marker named
    after its settings class."""
    from app.settings import settings_table as server_settings_table
    from backends import IMPLS, resolve_impl
    from backends.core.settings import settings_table
    from backends.vending import VendingSettings

    tables: dict[str, Callable[[], str]] = {}
    for impl in IMPLS:
        settings_class = getattr(resolve_impl(impl), "settings_class", None)
        if settings_class is not None:
            tables[settings_class.__name__] = lambda c=settings_class: settings_table(c)
    tables["VendingSettings"] = lambda: settings_table(VendingSettings)  # every backend's
    tables["Settings"] = server_settings_table
    return tables


def all_tables() -> dict[str, Callable[[], str]]:
    return {
        "routes": route_table,
        "support": support_matrix,
        "errors": error_codes,
        **settings_tables(),
    }


def rendered(text: str) -> str:
    for name, build in all_tables().items():
        pattern = re.compile(
            rf"(<!-- {name}:begin -->\n)(?:.*?\n)?(<!-- {name}:end -->)", re.DOTALL
        )
        text = pattern.sub(
            lambda match, b=build: match.group(1) + b() + "\n" + match.group(2), text
        )
    return text


def stale_files() -> list[Path]:
    return [path for path in documentation_files()
            if path.exists() and rendered(path.read_text()) != path.read_text()]


def main() -> None:
    if "--check" in sys.argv[1:]:
        stale = stale_files()
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)}", file=sys.stderr)
        sys.exit(1 if stale else 0)
    for path in stale_files():
        path.write_text(rendered(path.read_text()))


if __name__ == "__main__":
    main()
