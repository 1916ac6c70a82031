"""Reading backend configuration properties (string key/value pairs)."""

from __future__ import annotations

from collections.abc import Mapping

STORAGE_PREFIX = "storage."


class ConfigurationError(ValueError):
    """A backend was configured with a missing or malformed property."""


def require(properties: Mapping[str, str], key: str) -> str:
    value = properties.get(key)
    if value is None or str(value).strip() == "":
        raise ConfigurationError(f"missing required property '{key}'")
    return str(value)


def int_property(properties: Mapping[str, str], key: str, default: int) -> int:
    value = properties.get(key)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigurationError(f"property '{key}' must be an integer, got {value!r}") from None


def float_property(properties: Mapping[str, str], key: str, default: float) -> float:
    value = properties.get(key)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ConfigurationError(f"property '{key}' must be a number, got {value!r}") from None


def bool_property(properties: Mapping[str, str], key: str, default: bool) -> bool:
    value = properties.get(key)
    if value is None or value == "":
        return default
    lowered = str(value).strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ConfigurationError(f"property '{key}' must be true or false, got {value!r}")


def storage_options(properties: Mapping[str, str]) -> dict[str, str]:
    """The `storage.*` properties with the prefix removed, as Lance storage options."""
    return {
        key[len(STORAGE_PREFIX):]: str(value)
        for key, value in properties.items()
        if key.startswith(STORAGE_PREFIX)
    }
