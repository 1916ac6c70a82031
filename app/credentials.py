"""Who may call and what each caller may do, as the files say now: the accepted tokens
(`auth_tokens`, `auth_tokens_file`) and the access policy (`access`, `access_groups` and
`access_default`, from the settings or from `access_file`).

`CallerRules` is one consistent state of both. `Credentials` holds the current one and looks
at its files' identity (inode, size, modification time) at most every `auth_reload_interval`
seconds, on the next request: a changed file is read and checked whole, and only then
replaces the state, at once, for every later request of this worker. Each worker and each
replica looks for itself, so a change reaches all of them within that interval. A file that
cannot be read or holds a mistake keeps the previous state and logs one warning line; the
next change is tried again. At start, a mistake stops the server instead.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from app.auth import load_identities
from app.config import access_policy
from app.observability import Redactor
from app.settings import Settings
from backends.core.access import AccessPolicy
from backends.core.settings import ConfigurationError

logger = logging.getLogger("lance_adapter")
_ACCESS_FILE_KEYS = ("access", "access_groups", "access_default")
_MAX_FILE_BYTES = 4 << 20
Stamp = tuple[int, int, int] | None


@dataclass(frozen=True)
class CallerRules:
    """The accepted tokens (with the identity each names) and the access policy (None when
    the server does not judge callers)."""

    tokens: Mapping[bytes, str | None]
    policy: AccessPolicy | None


def load_rules(settings: Settings) -> CallerRules:
    """The rules the settings and their files give now; ConfigurationError names a mistake."""
    if settings.access_file:
        settings = dataclasses.replace(settings, **_access_file_values(settings.access_file))
    tokens = load_identities(settings) if settings.auth_mode != "off" else {}
    return CallerRules(tokens, access_policy(settings))


def _access_file_values(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            text = handle.read(_MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ConfigurationError(f"cannot read access_file {path}: {error.strerror}") from None
    if len(text) > _MAX_FILE_BYTES:
        raise ConfigurationError(f"access_file {path} is larger than 4 MiB")
    try:
        values = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        raise ConfigurationError(f"access_file {path} is not valid YAML/JSON: "
                                 f"{str(error).splitlines()[0]}") from None
    if not isinstance(values, dict):
        raise ConfigurationError(f"access_file {path} must hold a mapping")
    unknown = sorted(set(values) - set(_ACCESS_FILE_KEYS))
    if unknown:
        raise ConfigurationError(f"access_file {path} holds {unknown[0]!r}; it may hold "
                                 f"{', '.join(_ACCESS_FILE_KEYS)}")
    parsed = Settings.from_properties(values)
    return {key: getattr(parsed, key) for key in values}


def _stamp(path: str) -> Stamp:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_ino, status.st_size, status.st_mtime_ns)


class Credentials:
    """The current `CallerRules`, reloaded when one of their files changes."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic,
                 redactor: Redactor | None = None) -> None:
        self.settings = settings
        self.clock = clock
        self.redactor = redactor or Redactor()  # told every token, which no log line shows
        self.files = tuple(path for path in (settings.auth_tokens_file, settings.access_file)
                           if path)
        self._stamps = self._current_stamps()
        self.rules = self._adopted(load_rules(settings))
        self._looked_at = clock()

    def _adopted(self, rules: CallerRules) -> CallerRules:
        self.redactor.add(token.decode() for token in rules.tokens)
        return rules

    def current(self) -> CallerRules:
        """The rules now: the files are looked at when the interval has passed."""
        interval = self.settings.auth_reload_interval
        if self.files and interval > 0 and self.clock() - self._looked_at >= interval:
            self._looked_at = self.clock()
            self.reload_if_changed()
        return self.rules

    def reload_if_changed(self) -> bool:
        """Read the files again if one changed; whether the rules were replaced."""
        stamps = self._current_stamps()
        if stamps == self._stamps:
            return False
        self._stamps = stamps
        try:
            rules = load_rules(self.settings)
        except ConfigurationError as error:
            logger.warning("%s; the previous tokens and grants stay in force", error)
            return False
        self.rules = self._adopted(rules)
        logger.info("tokens and grants reloaded from %s", ", ".join(
            str(Path(path).name) for path in self.files))
        return True

    def _current_stamps(self) -> tuple[Stamp, ...]:
        return tuple(_stamp(path) for path in self.files)
