"""Credentials among properties and storage options: which keys hold one, their values (kept
out of every log line), and answers with them removed (they never leave the server)."""

from __future__ import annotations

from collections.abc import Mapping

from backends.core.settings import SWITCH_WORDS

# Words that mark a key (a property, a storage option, a field of a log line) as a credential:
# its value never leaves the server and never reaches a log (app.observability).
CREDENTIAL_WORDS = ("key", "secret", "token", "password", "credential", "sas", "session",
                     "service_account", "signature")


def is_credential(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in CREDENTIAL_WORDS)


def credential_values(properties: Mapping[str, str]) -> list[str]:
    """The values of the properties that are credentials, by the same rule that keeps them
    out of answers: the server keeps them out of every log line too. A switch or a number
    (`true`, `30`) is no secret, and hiding it would blank that word in every log line."""
    return [str(value) for key, value in properties.items()
            if is_credential(key) and not _plain(str(value))]


def _plain(value: str) -> bool:
    return value.lower() in SWITCH_WORDS or value.isdigit()


def without_credentials(answer: object) -> object:
    """`answer` with no credential left in its storage_options (the server's own)."""
    options = getattr(answer, "storage_options", None)
    if isinstance(options, Mapping):
        public = {key: value for key, value in options.items() if not is_credential(key)}
        answer.storage_options = public or None  # type: ignore[attr-defined]
    return answer
