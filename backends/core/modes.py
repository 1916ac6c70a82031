"""The mode-like request fields, parsed once into typed values shared by app/ and backends/.

The official clients spell a mode in several ways (`ExistOk`, `exist_ok`, `EXIST_OK`,
`exist-ok`); every spelling of a known value parses to one enum member, and anything else,
the empty string included, is invalid input (code 13) before anything changes.
"""

from __future__ import annotations

import enum
from typing import TypeVar

from lance_namespace import InvalidInputError


class CreateMode(enum.StrEnum):
    """CreateNamespace and CreateTable."""

    CREATE = "create"
    EXIST_OK = "exist_ok"
    OVERWRITE = "overwrite"


class RegisterMode(enum.StrEnum):
    """RegisterTable."""

    CREATE = "create"
    OVERWRITE = "overwrite"


class WriteMode(enum.StrEnum):
    """InsertIntoTable."""

    APPEND = "append"
    OVERWRITE = "overwrite"


class DropMode(enum.StrEnum):
    """DropNamespace: what a missing namespace means."""

    FAIL = "fail"
    SKIP = "skip"


class DropBehavior(enum.StrEnum):
    """DropNamespace: what a non-empty namespace means."""

    RESTRICT = "restrict"
    CASCADE = "cascade"


ModeT = TypeVar("ModeT", bound=enum.StrEnum)


def _compact(spelling: str) -> str:
    return spelling.replace("_", "").replace("-", "").lower()


def parse_mode(value: object, kind: type[ModeT], default: ModeT, field: str = "mode") -> ModeT:
    """`value` in any official spelling as a member of `kind`; None means `default`."""
    if value is None:
        return default
    if isinstance(value, kind):
        return value
    allowed = ", ".join(member.value for member in kind)
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be one of {allowed}, got {value!r}")
    wanted = _compact(value)
    for member in kind:
        if _compact(member.value) == wanted and wanted:
            return member
    raise InvalidInputError(f"{field} must be one of {allowed}, got {value!r}")
