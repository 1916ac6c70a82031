"""Object names and identifiers: validated once per request, by the backend's one guard.

An identifier is *parsed* once, at the edge: the HTTP layer turns the route's `a$b` (or the
body's list) into a list of names and checks only its shape (an operation on one object needs a
non-empty id); it does not judge the names. Names are *validated* by the guard every loaded
backend stands behind (`backends.guard.GuardedNamespace`), so a backend used from Python
through `backends.load_namespace` refuses bad names just as the server does: the request's
`id` and `new_namespace_id` are validated with `validate_identifier` before the backend sees
them. A catalog's own name rules (Glue's, Hive's, Unity's) then apply only their stricter
rules, on names already validated (`object_identifier` gives the shape).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from lance_namespace import InvalidInputError

MAX_NAME_LENGTH = 256
# Joins the parts of an id wherever one is kept as one string: a route's path segment (the
# default of its `delimiter`), a ListAllTables answer, the directory backend's manifest key.
# A name holding it would collide with a nested id.
ID_DELIMITER = "$"
_FORBIDDEN_CHARACTERS = ("/", "\\", ID_DELIMITER)
# Control, format (zero-width, bidi overrides), line/paragraph separators, unassigned.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cn", "Cs"})


def joined_id(parts: Sequence[str] | None) -> str:
    """An identifier as one string: ["a", "b"] -> "a$b"."""
    return ID_DELIMITER.join(parts or [])


def validate_name(name: object, kind: str = "name") -> str:
    """`name` in Unicode NFC if it can name a namespace or table anywhere, else
    InvalidInputError: look-alike spellings of one name are one name, and characters that
    hide or reorder text (zero-width, bidirectional overrides) are refused."""
    return check_name(name, kind)


def check_name(name: object, kind: str) -> str:
    """The rules of `validate_name` (tests count the calls of this one function)."""
    if not isinstance(name, str):
        raise InvalidInputError(f"{kind} must be a string, got {type(name).__name__}")
    name = unicodedata.normalize("NFC", name)
    if name == "" or name.strip() == "":
        raise InvalidInputError(f"{kind} must not be empty")
    if name in (".", ".."):
        raise InvalidInputError(f"{kind} must not be '{name}'")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidInputError(f"{kind} is longer than {MAX_NAME_LENGTH} characters")
    for character in name:
        if character in _FORBIDDEN_CHARACTERS:
            raise InvalidInputError(f"{kind} {name!r} must not contain {character!r}")
        if unicodedata.category(character) in _INVISIBLE_CATEGORIES:
            raise InvalidInputError(
                f"{kind} {name!r} must not contain control or format characters"
            )
    return name


def validate_identifier(parts: Sequence[str] | None, kind: str = "identifier") -> list[str]:
    """Validate every part of a list identifier; the root namespace is the empty list."""
    if parts is None:
        return []
    if isinstance(parts, str) or not isinstance(parts, Sequence):
        raise InvalidInputError(f"{kind} must be a list of names")
    return [validate_name(part, f"{kind} part") for part in parts]


def object_identifier(parts: Sequence[str] | None, kind: str = "table") -> list[str]:
    """A table (or non-root namespace) id the guard has validated, as a list: non-empty.
    A catalog's name rules use it to apply only their own rules on top."""
    if not parts:
        raise InvalidInputError(f"{kind} identifier must not be empty")
    return list(parts)
