"""Object names and identifiers: validated once per request, at the backend's front door.

An identifier is *parsed* once, at the edge: the HTTP layer turns the route's `a$b` (or the
body's list) into a list of names and checks only its shape (an operation on one object needs a
non-empty id); it does not judge the names. Names are *validated* by the backend, so a backend
used from Python without the server refuses bad names just as the server does:

- every operation method of a `backends.base.MetadataNamespace` subclass (every backend of this
  adapter, a wrapped plug-in's methods, and the location checks of `backends.containment`)
  runs through `backends.guard.call_with_valid_id`, which validates `request.id` with
  `validate_identifier` (and the tag and branch names and SQL expressions the request holds,
  `backends.tables.refs` and `backends.tables.sql`) before the method's body, so no catalog
  or storage sees an unvalidated name;
- inside that call (one operation, whatever other operations and helpers it calls), every
  name validated is remembered: a catalog's own helpers, which validate again on their way to
  their stricter rules (`validate_identifier`, `validate_name`), get the remembered answer.
  Each name of a request is validated once; outside an operation call nothing is remembered.
"""

from __future__ import annotations

import contextlib
import contextvars
import unicodedata
from collections.abc import Iterator, Sequence

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


# The names validated during the current operation call: raw name -> validated name.
_validated: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "validated_names", default=None
)


def validate_name(name: object, kind: str = "name") -> str:
    """`name` in Unicode NFC if it can name a namespace or table anywhere, else
    InvalidInputError: look-alike spellings of one name are one name, and characters that
    hide or reorder text (zero-width, bidirectional overrides) are refused."""
    validated = _validated.get()
    if validated is None or not isinstance(name, str):
        return check_name(name, kind)
    if name not in validated:
        validated[name] = check_name(name, kind)
    return validated[name]


def check_name(name: object, kind: str) -> str:
    """The rules of `validate_name`, applied (not remembered)."""
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


def require_object_identifier(parts: Sequence[str] | None, kind: str = "table") -> list[str]:
    """A table (or non-root namespace) identifier: validated and non-empty."""
    validated = validate_identifier(parts, f"{kind} identifier")
    if not validated:
        raise InvalidInputError(f"{kind} identifier must not be empty")
    return validated


@contextlib.contextmanager
def remembering_names() -> Iterator[None]:
    """Remember validated names until the outermost operation call ends."""
    if _validated.get() is not None:
        yield
        return
    token = _validated.set({})
    try:
        yield
    finally:
        _validated.reset(token)
