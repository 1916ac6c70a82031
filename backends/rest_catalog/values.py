"""What the REST catalog backends share for reading Lance requests and catalog answers."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from lance_namespace import InvalidInputError


def validate_location(location: str | None) -> str:
    """A table location from a request: non-empty, no control characters, no trailing slash."""
    if not isinstance(location, str) or not location.strip():
        raise InvalidInputError("location must not be empty")
    if any(ord(character) < 32 or ord(character) == 127 for character in location):
        raise InvalidInputError("location must not contain control characters")
    return location.rstrip("/") or "/"


def property_changes(
    set_properties: Mapping[str, str] | None,
    unset_properties: Collection[str] | None,
    protected: Collection[str] = (),
) -> tuple[dict[str, str], list[str]]:
    """The validated changes of an Alter request: string keys and values, no key both set and
    unset, and no key of `protected` (compared case-insensitively) touched at all."""
    updates = dict(set_properties or {})
    removals = list(dict.fromkeys(unset_properties or []))
    for key in [*updates, *removals]:
        if not isinstance(key, str) or not key.strip():
            raise InvalidInputError(f"property keys must be non-empty strings, got {key!r}")
    for key, value in updates.items():
        if not isinstance(value, str):
            raise InvalidInputError(f"the value of property {key!r} must be a string")
    both = sorted(set(updates) & set(removals))
    if both:
        raise InvalidInputError(f"properties both set and unset: {', '.join(both)}")
    guarded = {key.lower() for key in protected}
    touched = sorted(key for key in [*updates, *removals] if key.lower() in guarded)
    if touched:
        raise InvalidInputError(
            f"properties {', '.join(touched)} mark the entry as a Lance table and cannot change"
        )
    return updates, removals
