"""Validation of object names and identifiers, done before any backend or storage sees them."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from lance_namespace import InvalidInputError

MAX_NAME_LENGTH = 256
# `$` joins the parts of an id wherever one is kept as a single key (the directory
# backend's manifest): a name holding it would collide with a nested id.
_FORBIDDEN_CHARACTERS = ("/", "\\", "$")
# Control, format (zero-width, bidi overrides), line/paragraph separators, unassigned.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cn", "Cs"})


def validate_name(name: object, kind: str = "name") -> str:
    """`name` in Unicode NFC if it can name a namespace or table anywhere, else
    InvalidInputError: look-alike spellings of one name are one name, and characters that
    hide or reorder text (zero-width, bidirectional overrides) are refused."""
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


def joined_identifier(parts: Sequence[str] | None) -> str:
    """An identifier as one string, its parts joined by `$` (as in messages and routes)."""
    return "$".join(parts or [])
