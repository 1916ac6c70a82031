"""What the REST catalog backends share for reading Lance requests: a table location."""

from __future__ import annotations

from lance_namespace import InvalidInputError


def validate_location(location: str | None) -> str:
    """A table location from a request: non-empty, no control characters, no trailing slash."""
    if not isinstance(location, str) or not location.strip():
        raise InvalidInputError("location must not be empty")
    if any(ord(character) < 32 or ord(character) == 127 for character in location):
        raise InvalidInputError("location must not contain control characters")
    return location.rstrip("/") or "/"
