"""Properties, the string key/value pairs of backends' configuration and of catalog entries:
reading them, and telling which are credentials."""

from __future__ import annotations

from collections.abc import Mapping

STORAGE_PREFIX = "storage."


class ConfigurationError(ValueError):
    """A backend was configured with a missing or malformed property."""


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
# Words that mark a storage option as a credential: it never leaves the server.
_CREDENTIAL_WORDS = ("key", "secret", "token", "password", "credential", "sas", "session",
                     "service_account", "signature")


def is_credential(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in _CREDENTIAL_WORDS)


def credential_values(properties: Mapping[str, str]) -> list[str]:
    """The values of the properties that are credentials, by the same rule that keeps them
    out of answers: the server keeps them out of every log line too. A switch or a number
    (`true`, `30`) is no secret, and hiding it would blank that word in every log line."""
    return [str(value) for key, value in properties.items()
            if is_credential(key) and not _plain(str(value))]


def _plain(value: str) -> bool:
    return value.lower() in ("true", "false", "yes", "no", "on", "off") or value.isdigit()


def without_credentials(answer: object) -> object:
    """`answer` with no credential left in its storage_options (the server's own)."""
    options = getattr(answer, "storage_options", None)
    if isinstance(options, Mapping):
        public = {key: value for key, value in options.items() if not is_credential(key)}
        answer.storage_options = public or None  # type: ignore[attr-defined]
    return answer


def refused_client_storage_options(options: Mapping[str, object]) -> list[str]:
    """The keys of a client's storage_options it may not set, sorted."""
    return sorted(str(key) for key in options if key not in CLIENT_STORAGE_OPTIONS)
