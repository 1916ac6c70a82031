"""One convention for settings, the server's (`app.settings.Settings`) and each backend's, and
`ConfigurationError`, the error of a missing or malformed one.

Settings are a frozen dataclass subclassing `DeclaredSettings`; every field is made by
`setting(...)` with its key, default, unit and documentation. `from_properties` parses and
validates all of them in one place, and the tables of docs/configuration.md are generated from
the same declarations (`scripts/readme_tables.py`), so code and documentation cannot drift apart.

The settings every remote backend shares have one spelling and unit: `client.connect-timeout-ms`,
`client.read-timeout-ms`, `client.max-retries` and `client.pool-size`, made by the field
helpers at the bottom. A key that was renamed stays readable as a deprecated `Alias`, converted
to today's unit, with a warning in the log. An unknown key is refused, naming the nearest
known one: a misspelt key would otherwise leave its setting at the default, unnoticed.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from backends.core.properties import STORAGE_PREFIX

logger = logging.getLogger(__name__)


class ConfigurationError(ValueError):
    """A setting or backend property that is missing, malformed or cannot be used; the
    message is one line for the operator."""

_SETTING = "lance.setting"
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")
# Every spelling of a switch's value: not worth hiding as a secret (backends.core.secrets).
SWITCH_WORDS = _TRUE + _FALSE
_SWITCH = "true or false"

CONNECT_TIMEOUT_KEY = "client.connect-timeout-ms"
READ_TIMEOUT_KEY = "client.read-timeout-ms"
MAX_RETRIES_KEY = "client.max-retries"
POOL_SIZE_KEY = "client.pool-size"
# Properties every backend accepts and leaves to the server (credential vending).
SHARED_PREFIXES = frozenset({"vending."})


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Alias:
    """A deprecated key of a setting; `to_current` turns its value into today's unit."""

    key: str
    parse: Callable[[str], Any] | None = None
    to_current: Callable[[Any], Any] = _same
    unit: str = ""

    @classmethod
    def seconds(cls, key: str) -> Alias:
        """An old key in seconds of a setting now in milliseconds."""
        return cls(key, float, lambda seconds: round(seconds * 1000), unit="s")

    @classmethod
    def attempts(cls, key: str) -> Alias:
        """An old key counting attempts of a setting now counting retries."""
        return cls(key, int, lambda attempts: attempts - 1)


@dataclass(frozen=True)
class Setting:
    """How one property is spelled, documented and checked."""

    key: str
    doc: str
    unit: str = ""
    aliases: tuple[Alias, ...] = ()
    required: bool = False
    minimum: float | None = None
    choices: tuple[str, ...] = ()
    secret: bool = False
    # The server's settings only: the command-line flag's help (empty: no flag), the flag as
    # the documentation writes it (default `--the-key`), and the default as it reads there.
    cli: str = ""
    flag: str = ""
    shown_default: str = ""

    @property
    def is_prefix(self) -> bool:
        """A key ending in `.` gathers every property under it (e.g. `storage.`)."""
        return self.key.endswith(".")


def setting(
    key: str,
    default: Any = None,
    doc: str = "",
    *,
    unit: str = "",
    aliases: tuple[Alias, ...] = (),
    required: bool = False,
    minimum: float | None = None,
    choices: tuple[str, ...] = (),
    secret: bool = False,
    factory: Callable[[], Any] | None = None,
    cli: str = "",
    flag: str = "",
    shown_default: str = "",
) -> Any:
    """A settings field read from key `key` (empty: the field's name); `factory` makes a
    default computed when the settings are made."""
    declared = Setting(key, doc, unit, aliases, required, minimum, choices, secret, cli, flag,
                       shown_default)
    metadata = {_SETTING: declared}
    if isinstance(default, (dict, list)):
        factory = lambda: type(default)(default)  # noqa: E731
    if factory is not None:
        return field(default_factory=factory, metadata=metadata, repr=not secret)
    return field(default=default, metadata=metadata, repr=not secret)


@dataclass(frozen=True, kw_only=True)
class DeclaredSettings:
    """Base of the server's and every backend's settings: frozen, keyword-only dataclasses."""

    # What one key is called in messages: a backend's are properties, the server's settings.
    noun: ClassVar[str] = "property"
    # Whether a blank value leaves a setting at its default (a backend's properties, often
    # written as empty environment variables), or is the value (the server's settings).
    blank_is_unset: ClassVar[bool] = True
    # Keys read by the code the backend wraps (e.g. pylance's DirectoryNamespace), passed on
    # untouched, and prefixes left to the server: not unknown, so not refused.
    passthrough_keys: ClassVar[frozenset[str]] = frozenset()
    shared_prefixes: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def declared(cls) -> list[tuple[dataclasses.Field[Any], Setting]]:
        """Every field with its `Setting` (its key filled in), in declaration order."""
        fields = dataclasses.fields(cls)
        return [(f, _keyed(f.metadata[_SETTING], f.name)) for f in fields
                if _SETTING in f.metadata]

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> Self:
        """Parse and validate `properties`; ConfigurationError names the first bad one."""
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for declared_field, declared in cls.declared():
            if declared.is_prefix:
                values[declared_field.name] = _prefixed(properties, declared.key)
                continue
            found = _lookup(properties, declared, cls)
            if found is None:
                if declared.required:
                    raise ConfigurationError(f"missing required {cls.noun} '{declared.key}'")
                continue
            values[declared_field.name] = _read(hints[declared_field.name], declared, cls.noun,
                                                *found)
        cls._refuse_unknown(properties)
        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        """Checks across settings; a subclass raises ConfigurationError."""

    @classmethod
    def known_keys(cls) -> set[str]:
        keys = set(cls.passthrough_keys) | cls.shared_prefixes
        for _, declared in cls.declared():
            keys.add(declared.key)
            keys.update(alias.key for alias in declared.aliases)
        return keys

    @classmethod
    def _refuse_unknown(cls, properties: Mapping[str, Any]) -> None:
        known = cls.known_keys()
        prefixes = tuple(key for key in known if key.endswith("."))
        unknown = sorted(
            key for key in properties if key not in known and not key.startswith(prefixes)
        )
        if not unknown:
            return
        nearest = difflib.get_close_matches(unknown[0], sorted(known), n=1, cutoff=0.6)
        hint = f"did you mean '{nearest[0]}'?" if nearest else (
            f"the known ones are {', '.join(sorted(known))}"
        )
        raise ConfigurationError(f"unknown {cls.noun} '{unknown[0]}': {hint}")


@dataclass(frozen=True, kw_only=True)
class BackendSettings(DeclaredSettings):
    """Base of every backend's settings, read from its string properties."""

    shared_prefixes: ClassVar[frozenset[str]] = SHARED_PREFIXES


def _keyed(declared: Setting, name: str) -> Setting:
    return declared if declared.key else dataclasses.replace(declared, key=name)


def _prefixed(properties: Mapping[str, Any], prefix: str) -> dict[str, str]:
    return {
        key[len(prefix):]: str(value) for key, value in properties.items() if key.startswith(prefix)
    }


def _lookup(
    properties: Mapping[str, Any], declared: Setting, settings_class: type[DeclaredSettings]
) -> tuple[Any, Alias | None] | None:
    """The raw value of a setting and the alias it came through, if any."""
    keys = [(declared.key, None)] + [(alias.key, alias) for alias in declared.aliases]
    for key, alias in keys:
        value = properties.get(key)
        if value is None or (settings_class.blank_is_unset and _blank(value)):
            continue
        if alias is not None:
            logger.warning(
                "%s '%s' is deprecated: use '%s'%s", settings_class.noun, alias.key, declared.key,
                f" (in {declared.unit}, not {alias.unit})" if alias.unit else "",
            )
        return (value.strip() if isinstance(value, str) else value), alias
    return None


def _blank(value: Any) -> bool:
    return isinstance(value, str) and value.strip() == ""


def _read(hint: Any, declared: Setting, noun: str, raw: Any, alias: Alias | None) -> Any:
    key = alias.key if alias else declared.key
    parse = (alias.parse if alias and alias.parse else None) or _parser(hint)
    try:
        value = parse(raw)
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"{noun} '{key}' must be {_describe(hint)}, got {raw!r}"
        ) from None
    if alias:
        value = alias.to_current(value)
    if declared.choices and isinstance(value, str):
        value = value.lower()
    problem = _problem(declared, value)
    if problem is None:
        return value
    if alias is None:
        raise ConfigurationError(f"{noun} '{key}' {problem}, got {value!r}")
    # Name the key the operator wrote and what its value became, not only today's key.
    unit = f" {alias.unit}" if alias.unit else ""
    raise ConfigurationError(
        f"property '{key}' is {raw}{unit}, that is '{declared.key}' {value!r}, which {problem}"
    )


def _parser(hint: Any) -> Callable[[Any], Any]:
    base = _without_none(hint)
    if base is bool:
        return parse_bool
    if base in (int, float):
        return lambda raw: _number(base, raw)
    if typing.get_origin(base) is tuple:
        return _listed
    if is_mapping(base):
        values = typing.get_args(base)
        return _mapping_of_mappings if values and is_mapping(values[-1]) else _mapping
    return _text


def is_mapping(hint: Any) -> bool:
    """Whether a setting's type is a mapping (read from a YAML mapping or a JSON object)."""
    return typing.get_origin(_without_none(hint)) in (dict, Mapping)


def _number(kind: type, raw: Any) -> Any:
    if isinstance(raw, bool) or (kind is int and isinstance(raw, float)):
        raise ValueError(raw)  # YAML's `true` is no count, 2.5 no integer
    return kind(raw)


def _listed(raw: Any) -> tuple[str, ...]:
    """Comma-separated text, or a YAML list."""
    parts = raw if isinstance(raw, list | tuple) else str(raw).split(",")
    return tuple(str(part).strip() for part in parts if str(part).strip())


def _mapping(raw: Any) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise ValueError(raw)
    return {str(key): str(value) for key, value in raw.items()}


def _mapping_of_mappings(raw: Any) -> dict[str, dict[str, str]]:
    if not isinstance(raw, Mapping):
        raise ValueError(raw)
    return {str(key): _mapping(value) for key, value in raw.items()}


def _text(raw: Any) -> str:
    if isinstance(raw, bool):  # YAML reads an unquoted `off` as false
        return "on" if raw else "off"
    if isinstance(raw, (Mapping, list)):
        raise ValueError(raw)
    return str(raw)


def _without_none(hint: Any) -> Any:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        rest = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return rest[0] if len(rest) == 1 else hint
    return hint


def _describe(hint: Any) -> str:
    base = _without_none(hint)
    if is_mapping(base):
        return "a mapping of strings"
    return {bool: _SWITCH, int: "an integer", float: "a number"}.get(base, "text")


def parse_bool(raw: object) -> bool:
    """`true`/`1`/`yes`/`on` or `false`/`0`/`no`/`off`, in any case (or a bool, as YAML reads
    one); otherwise ValueError, whose message ends the sentence naming the setting: the one
    spelling of a switch, and of its error, in every setting (the server's and the backends')."""
    if isinstance(raw, bool):
        return raw
    lowered = str(raw).strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"must be {_SWITCH}, got {raw!r}")


def _problem(declared: Setting, value: Any) -> str | None:
    """What is wrong with a parsed value ("must be ..."), or None when it is allowed."""
    if declared.minimum is not None and value < declared.minimum:
        return f"must be at least {declared.minimum:g}"
    if declared.choices and value not in declared.choices:
        return f"must be one of {', '.join(repr(choice) for choice in declared.choices)}"
    return None


# -- the settings remote backends share: one spelling, one unit ---------------------------------


def connect_timeout_ms(default: int, *aliases: Alias) -> Any:
    return setting(
        CONNECT_TIMEOUT_KEY, default, "How long to wait for a connection to the catalog.",
        unit="ms", aliases=aliases, minimum=1,
    )


def read_timeout_ms(default: int, *aliases: Alias) -> Any:
    return setting(
        READ_TIMEOUT_KEY, default, "How long to wait for the catalog's answer.",
        unit="ms", aliases=aliases, minimum=1,
    )


def max_retries(default: int, *aliases: Alias) -> Any:
    return setting(
        MAX_RETRIES_KEY, default, "Retries of a failed idempotent catalog call.",
        aliases=aliases, minimum=0,
    )


def pool_size(default: int, *aliases: Alias) -> Any:
    return setting(
        POOL_SIZE_KEY, default, "Connections kept open to the catalog.",
        aliases=aliases, minimum=1,
    )


def storage_settings() -> Any:
    return setting(
        STORAGE_PREFIX, {}, "Lance storage options for the tables' storage, e.g. "
        "`storage.aws_region`; answers to clients carry them without their credentials.",
        secret=True,
    )


def root_setting(default: str | None, doc: str = "Where new tables are stored.") -> Any:
    return setting("root", default, doc)


def settings_table(settings_class: type[BackendSettings]) -> str:
    """The documentation's table of a backend's properties."""
    lines = ["| property | default | unit | meaning |", "|---|---|---|---|"]
    for declared_field, declared in settings_class.declared():
        key = f"`{declared.key}*`" if declared.is_prefix else f"`{declared.key}`"
        default = default_text(declared_field, declared)
        meaning = declared.doc
        if declared.choices:
            meaning += " One of " + ", ".join(f"`{choice}`" for choice in declared.choices) + "."
        if declared.aliases:
            old = ", ".join(f"`{alias.key}`" for alias in declared.aliases)
            meaning += f" Deprecated alias: {old}."
        lines.append(f"| {key} | {default} | {declared.unit} | {meaning} |")
    return "\n".join(lines)


def default_text(declared_field: dataclasses.Field[Any], declared: Setting) -> str:
    """A setting's default as the documentation's tables write it."""
    if declared.shown_default:
        return declared.shown_default
    if declared.required:
        return "required"
    default = declared_field.default
    if declared.is_prefix or default is None:
        return ""
    if default is dataclasses.MISSING or default == "":  # an empty mapping, or no text
        return "empty"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, tuple):
        return ", ".join(default)
    return f"`{default:g}`" if isinstance(default, float) else f"`{default}`"
