"""Glue's properties on the settings convention: today's keys, the renamed ones as deprecated
aliases in their old units, and the checks, seen on the real botocore client they configure."""

from __future__ import annotations

import logging
import os

import pytest

from backends.core.settings import ConfigurationError
from backends.glue import GlueNamespace, GlueSettings

# Building the namespace sends nothing: no AssumeRole here, and clients connect on first call.
BASE = {
    "endpoint": "http://127.0.0.1:9",
    "region": "us-east-1",
    "access_key_id": "testing",
    "secret_access_key": "testing",
}


def client_config(**properties: str) -> object:
    return GlueNamespace(**BASE, **properties).glue_client.meta.config


def test_defaults() -> None:
    config = client_config()
    assert (config.connect_timeout, config.read_timeout) == (5.0, 30.0)
    assert config.retries == {"total_max_attempts": 3, "mode": "standard"}
    assert config.max_pool_connections == 10
    settings = GlueSettings.from_properties(BASE)
    assert settings.hierarchy == "catalogs"
    assert settings.assume_role_session_name == "lance-namespace-adapter"
    assert settings.assume_role_timeout_sec == 3600
    assert GlueNamespace(**BASE).storage_root() == os.getcwd()


def test_shared_client_settings_in_milliseconds_and_retries() -> None:
    config = client_config(
        **{
            "client.connect-timeout-ms": "1500",
            "client.read-timeout-ms": "7000",
            "client.max-retries": "0",
            "client.pool-size": "6",
        }
    )
    assert (config.connect_timeout, config.read_timeout) == (1.5, 7.0)
    assert config.retries == {"total_max_attempts": 1, "mode": "standard"}
    assert config.max_pool_connections == 6


def test_old_keys_are_deprecated_aliases_in_their_old_units(
    caplog: pytest.LogCaptureFixture,
) -> None:
    old = {
        "client.connect_timeout_sec": "2.5",
        "client.read_timeout_sec": "0.5",
        "client.max_attempts": "4",
        "client.max_pool_connections": "3",
    }
    with caplog.at_level(logging.WARNING, logger="backends.core.settings"):
        config = client_config(**old)
    assert (config.connect_timeout, config.read_timeout) == (2.5, 0.5)
    assert config.retries == {"total_max_attempts": 4, "mode": "standard"}
    assert config.max_pool_connections == 3
    for key in old:
        assert f"property '{key}' is deprecated" in caplog.text


def test_todays_key_wins_over_its_alias() -> None:
    config = client_config(**{"client.max-retries": "5", "client.max_attempts": "2"})
    assert config.retries["total_max_attempts"] == 6


def test_an_unknown_property_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown property 'catalogid': did you mean"):
        GlueSettings.from_properties({**BASE, "catalogid": "1", "storage.aws_region": "r"})


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"hierarchy": "flat"}, "'hierarchy' must be one of 'catalogs', 'databases'"),
        ({"client.max-retries": "-1"}, "'client.max-retries' must be at least 0"),
        ({"client.max_attempts": "0"}, "'client.max_attempts' is 0, that is 'client.max-retries'"),
        ({"client.read_timeout_sec": "soon"}, "'client.read_timeout_sec' must be"),
        ({"client.pool-size": "0"}, "'client.pool-size' must be at least 1"),
        ({"assume_role_timeout_sec": "60"}, "'assume_role_timeout_sec' must be at least 900"),
        ({"assume_role_timeout_sec": "43201"}, "'assume_role_timeout_sec' must be at most"),
        ({"secret_access_key": ""}, "access_key_id and secret_access_key must be set together"),
    ],
)
def test_bad_properties_are_configuration_errors(
    properties: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        GlueNamespace(**{**BASE, **properties})


def test_session_token_needs_the_keys() -> None:
    properties = {"endpoint": BASE["endpoint"], "region": "r", "session_token": "t"}
    with pytest.raises(ConfigurationError, match="session_token needs access_key_id"):
        GlueNamespace(**properties)
