"""Properties, the string key/value pairs of backends' configuration and of catalog entries:
reading them as strings, the `storage.*` ones as Lance storage options (and which of those a
client may set itself), and the validated changes of AlterNamespace and AlterTable."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from lance_namespace import InvalidInputError

STORAGE_PREFIX = "storage."


def string_map(values: object) -> dict[str, str]:
    """A map from a catalog or a request as strings; anything that is not a map is empty."""
    if not isinstance(values, Mapping):
        return {}
    return {str(key): str(value) for key, value in values.items()}


def storage_options(properties: Mapping[str, str]) -> dict[str, str]:
    """The `storage.*` properties with the prefix removed, as Lance storage options."""
    return {
        key[len(STORAGE_PREFIX):]: str(value)
        for key, value in properties.items()
        if key.startswith(STORAGE_PREFIX)
    }


# What a client may set in storage_options: nothing that changes where the server's requests
# go, which credentials sign them, or how TLS is checked.
CLIENT_STORAGE_OPTIONS = frozenset(
    {"timeout", "connect_timeout", "client_max_retries", "client_retry_timeout",
     "download_retry_count", "pool_idle_timeout"}
)
def refused_client_storage_options(options: Mapping[str, object]) -> list[str]:
    """The keys of a client's storage_options it may not set, sorted."""
    return sorted(str(key) for key in options if key not in CLIENT_STORAGE_OPTIONS)


@dataclass(frozen=True)
class PropertyChanges:
    """The `set_properties` and `unset_properties` of an Alter request, validated."""

    updates: dict[str, str]
    removals: frozenset[str]

    @classmethod
    def of(
        cls,
        set_properties: Mapping[str, str] | None,
        unset_properties: Sequence[str] | None,
        protected: Collection[str] = (),
        protected_because: str = "mark this as a Lance table",
    ) -> PropertyChanges:
        """Refuse empty keys, a key both set and unset, and any key in `protected`
        (compared case-insensitively: the catalogs match their markers that way)."""
        changes = cls(dict(set_properties or {}), frozenset(unset_properties or ()))
        for key in (*changes.updates, *changes.removals):
            if not isinstance(key, str) or not key.strip():
                raise InvalidInputError(f"property keys must be non-empty strings, got {key!r}")
        for key, value in changes.updates.items():
            if not isinstance(value, str):
                raise InvalidInputError(f"property {key!r} must have a string value")
        both = sorted(changes.removals & changes.updates.keys())
        if both:
            raise InvalidInputError(f"properties both set and unset: {', '.join(both)}")
        lowered = {key.lower() for key in protected}
        keys = (*changes.updates, *changes.removals)
        touched = sorted(key for key in keys if key.lower() in lowered)
        if touched:
            raise InvalidInputError(
                f"properties {', '.join(touched)} {protected_because} and cannot be changed"
            )
        return changes

    def applied_to(self, current: Mapping[str, str] | None) -> dict[str, str]:
        """`current` after the change; unsetting an absent key is not an error."""
        current = current or {}
        changed = {key: value for key, value in current.items() if key not in self.removals}
        changed.update(self.updates)
        return changed
