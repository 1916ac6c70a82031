"""The settings convention of backends/core/settings.py, on a settings class made for the test
and on the server's own settings (app/settings.py), and the secrets every backend declares."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from app.cli import build_parser, settings_from_arguments
from app.config import load_settings
from app.settings import Settings
from app.settings import settings_table as server_table
from backends import IMPLS, resolve_impl
from backends.core.secrets import is_credential
from backends.core.settings import (
    Alias,
    BackendSettings,
    ConfigurationError,
    connect_timeout_ms,
    max_retries,
    setting,
    settings_table,
    storage_settings,
)
from backends.vending import VendingSettings


@dataclass(frozen=True, kw_only=True)
class SampleSettings(BackendSettings):
    endpoint: str = setting("endpoint", doc="The catalog.", required=True)
    mode: str = setting("mode", "fast", "How.", choices=("fast", "safe"))
    connect_timeout_ms: int = connect_timeout_ms(
        10_000, Alias.seconds("client.connect-timeout"), Alias("connect_timeout", int)
    )
    max_retries: int = max_retries(3, Alias.attempts("client.max_attempts"))
    warehouses: tuple[str, ...] = setting("warehouses", (), "Names.")
    verbose: bool = setting("verbose", False, "Talk more.")
    token: str | None = setting("token", None, "A secret.", secret=True)
    storage: Mapping[str, str] = storage_settings()


def test_defaults_and_parsing() -> None:
    settings = SampleSettings.from_properties(
        {"endpoint": "http://x", "warehouses": "a, b,", "verbose": "YES", "storage.region": "r"}
    )
    assert settings.endpoint == "http://x"
    assert settings.mode == "fast"
    assert settings.connect_timeout_ms == 10_000
    assert settings.max_retries == 3
    assert settings.warehouses == ("a", "b")
    assert settings.verbose is True
    assert settings.token is None
    assert settings.storage == {"region": "r"}


def test_deprecated_aliases_convert_units_and_warn(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="backends.core.settings"):
        settings = SampleSettings.from_properties(
            {"endpoint": "e", "client.connect-timeout": "2.5", "client.max_attempts": "5"}
        )
    assert settings.connect_timeout_ms == 2500
    assert settings.max_retries == 4
    assert "'client.connect-timeout' is deprecated: use 'client.connect-timeout-ms'" in caplog.text
    assert "'client.max_attempts' is deprecated" in caplog.text


def test_an_alias_out_of_range_is_named_with_what_it_became() -> None:
    """The error names the deprecated key as written, its value and today's key and value."""
    cases = [
        ({"client.max_attempts": "0"},
         "property 'client.max_attempts' is 0, that is 'client.max-retries' -1, "
         "which must be at least 0"),
        ({"client.connect-timeout": "0"},
         "property 'client.connect-timeout' is 0 s, that is 'client.connect-timeout-ms' 0, "
         "which must be at least 1"),
    ]
    for extra, message in cases:
        with pytest.raises(ConfigurationError) as raised:
            SampleSettings.from_properties({"endpoint": "e", **extra})
        assert str(raised.value) == message
    with pytest.raises(ConfigurationError) as raised:  # today's key: the message as before
        SampleSettings.from_properties({"endpoint": "e", "client.max-retries": "-1"})
    assert str(raised.value) == "property 'client.max-retries' must be at least 0, got -1"


def test_current_key_wins_over_alias() -> None:
    settings = SampleSettings.from_properties(
        {"endpoint": "e", "client.connect-timeout-ms": "7", "connect_timeout": "9"}
    )
    assert settings.connect_timeout_ms == 7


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({}, "missing required property 'endpoint'"),
        ({"endpoint": "  "}, "missing required property 'endpoint'"),
        ({"endpoint": "e", "mode": "slow"}, "'mode' must be one of 'fast', 'safe'"),
        ({"endpoint": "e", "verbose": "maybe"}, "'verbose' must be true or false"),
        ({"endpoint": "e", "client.connect-timeout-ms": "0"}, "must be at least 1"),
        ({"endpoint": "e", "client.connect-timeout-ms": "ten"}, "must be an integer"),
        ({"endpoint": "e", "client.connect-timeout": "x"}, "'client.connect-timeout' must be"),
        ({"endpoint": "e", "client.max-retries": "-1"}, "must be at least 0"),
    ],
)
def test_bad_properties_are_configuration_errors(properties: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        SampleSettings.from_properties(properties)


@pytest.mark.parametrize("spelling", ["YES", "on", "1", " True "])
def test_the_server_and_the_backends_read_a_switch_alike(spelling: str) -> None:
    server = load_settings(environ={"LANCE_ADAPTER_METRICS_IDENTITIES": spelling})
    backend = SampleSettings.from_properties({"endpoint": "e", "verbose": spelling})
    assert server.metrics_identities is backend.verbose is True


def test_the_server_and_the_backends_refuse_a_switch_in_the_same_words() -> None:
    sentence = "must be true or false, got 'maybe'$"
    with pytest.raises(ConfigurationError, match=f"^setting 'metrics_identities' {sentence}"):
        load_settings(environ={"LANCE_ADAPTER_METRICS_IDENTITIES": "maybe"})
    with pytest.raises(ConfigurationError, match=f"^property 'verbose' {sentence}"):
        SampleSettings.from_properties({"endpoint": "e", "verbose": "maybe"})


def test_an_unknown_key_is_refused_naming_the_nearest_known_one() -> None:
    with pytest.raises(ConfigurationError, match=r"^unknown property 'endpiont': did you mean "
                       r"'endpoint'\?$"):
        SampleSettings.from_properties({"endpoint": "e", "endpiont": "typo", "storage.x": "1"})
    with pytest.raises(ConfigurationError, match=r"^unknown property 'zzz': the known ones are "
                       r"client.connect-timeout, client.connect-timeout-ms, "):
        SampleSettings.from_properties({"endpoint": "e", "zzz": "1"})
    # Keys under a declared prefix are the prefix's own.
    assert SampleSettings.from_properties({"endpoint": "e", "storage.x": "1"}).storage == {"x": "1"}


def test_table_documents_every_setting() -> None:
    table = settings_table(SampleSettings)
    assert "| `endpoint` | required |" in table
    assert "| `client.connect-timeout-ms` | `10000` | ms |" in table
    assert "Deprecated alias: `client.connect-timeout`, `connect_timeout`." in table
    assert "One of `fast`, `safe`." in table
    assert "| `storage.*` |" in table
    assert len(table.splitlines()) == 2 + len(SampleSettings.declared())


def test_secrets_are_masked_in_the_repr() -> None:
    settings = SampleSettings.from_properties(
        {"endpoint": "e", "token": "t0ps3cret", "storage.aws_secret_access_key": "k3y",
         "storage.region": "eu"}
    )
    shown = repr(settings)
    assert "t0ps3cret" not in shown and "k3y" not in shown
    assert "endpoint='e'" in shown


def test_choices_are_case_insensitive() -> None:
    assert SampleSettings.from_properties({"endpoint": "e", "mode": "SAFE"}).mode == "safe"


def _every_declared_setting() -> list[tuple[str, str, bool]]:
    classes = {VendingSettings}
    for impl in IMPLS:
        settings_class = getattr(resolve_impl(impl), "settings_class", None)
        if settings_class is not None:
            classes.add(settings_class)
    return sorted({(cls.__name__, declared.key, declared.secret)
                   for cls in classes for _, declared in cls.declared()})


# Declared keys that hold a credential word but no credential: `is_credential` errs on the
# side of caution (their values stay out of logs and `lance-adapter config` all the same),
# while the settings' repr shows them. And the `storage.` prefix, whose options are only
# partly credentials: masked whole in the repr, judged option by option elsewhere.
_SECRET_BY_KEY_ONLY = {
    "assume_role_session_name": "the name STS records for the session",
    "vending.session-name": "the name STS records for a vend",
    "forward_caller_token": "a switch",
}
_SECRET_BY_SETTING_ONLY = {"storage.": "a prefix of storage options, some of them credentials"}


def test_a_setting_is_secret_exactly_when_its_key_names_a_credential() -> None:
    """`Setting.secret` (masked in the repr) and `is_credential` (kept out of answers, logs
    and `lance-adapter config`) agree on every key a backend declares but the ones above."""
    declared = _every_declared_setting()
    assert len({name for name, _, _ in declared}) >= 6
    by_key_only = {key for _, key, secret in declared if is_credential(key) and not secret}
    by_setting_only = {key for _, key, secret in declared if secret and not is_credential(key)}
    assert by_key_only == set(_SECRET_BY_KEY_ONLY)
    assert by_setting_only == set(_SECRET_BY_SETTING_ONLY)


def test_the_server_refuses_an_unknown_setting_naming_the_nearest_known_one(tmp_path) -> None:
    config = tmp_path / "adapter.yaml"
    config.write_text("max_body_byte: 10\n")
    with pytest.raises(ConfigurationError, match=r"^unknown setting 'max_body_byte': did you "
                       r"mean 'max_body_bytes'\?$"):
        load_settings(config, environ={})


def test_the_server_reads_each_layer_with_the_same_declaration(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "adapter.yaml"
    config.write_text("auth_mode: off\naccess_log: no\nport: 3000\nworkers: 2\n"
                      "properties: {root: /data, a: 1}\nlancedb_root_database: ''\n")
    environment = {"LANCE_ADAPTER_PORT": "4000", "LANCE_ADAPTER_PROPERTIES": '{"b": "2"}',
                   "LANCE_ADAPTER_PROP_A": "3", "LANCE_ADAPTER_TEST_CACHE": "not a setting"}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    settings = settings_from_arguments(build_parser().parse_args(
        ["serve", "--config", str(config), "--workers", "3", "--prop", "c=4"]))
    assert (settings.auth_mode, settings.access_log, settings.port, settings.workers) == (
        "off", False, 4000, 3)
    assert settings.properties == {"root": "/data", "a": "3", "b": "2", "c": "4"}
    assert settings.lancedb_root_database == ""  # blank is a value here, not "unset"
    with pytest.raises(ConfigurationError, match=r"^LANCE_ADAPTER_ACCESS must be a JSON object$"):
        load_settings(environ={"LANCE_ADAPTER_ACCESS": "[1]"})


def test_every_server_setting_has_one_row_and_a_declared_flag_sets_it() -> None:
    table = server_table()
    assert len(table.splitlines()) == 2 + len(Settings.declared())
    assert "| `port` | `LANCE_ADAPTER_PORT` | `--port` | `2333` |" in table
    assert "| `access` | `LANCE_ADAPTER_ACCESS` (JSON object) |  | empty |" in table
    flagged = [declared.key for _, declared in Settings.declared() if declared.cli]
    assert "auth_tokens_file" in flagged
    for key in set(flagged) - {"properties"}:
        value = {"port": "1", "workers": "1", "log_level": "debug", "auth_mode": "token",
                 "root_path": "/x"}.get(key, "v")
        arguments = build_parser().parse_args(["serve", "--" + key.replace("_", "-"), value])
        assert str(getattr(arguments, key)) == value
