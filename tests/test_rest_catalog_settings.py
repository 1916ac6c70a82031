"""UnitySettings and IcebergSettings: one spelling for the client settings, the old keys (same
unit, milliseconds) as deprecated aliases, and each backend's own defaults and checks."""

from __future__ import annotations

import logging

import pytest

from backends.core.settings import ConfigurationError
from backends.iceberg import IcebergSettings
from backends.unity import UnitySettings


def test_each_backend_has_its_own_defaults() -> None:
    unity = UnitySettings.from_properties({"endpoint": "http://u"})
    iceberg = IcebergSettings.from_properties({"endpoint": "http://i"})
    assert (unity.read_timeout_ms, unity.root) == (300_000, "/tmp/lance")
    assert (iceberg.read_timeout_ms, iceberg.root) == (30_000, None)
    for settings in (unity, iceberg):
        assert (settings.connect_timeout_ms, settings.max_retries) == (10_000, 3)
        assert settings.forward_caller_token is False


@pytest.mark.parametrize("settings_class", [UnitySettings, IcebergSettings])
def test_old_client_keys_are_deprecated_aliases_in_the_same_unit(
    settings_class: type[UnitySettings], caplog: pytest.LogCaptureFixture
) -> None:
    old = {"connect_timeout": "1500", "read_timeout": "2500", "max_retries": "0"}
    with caplog.at_level(logging.WARNING, logger="backends.core.settings"):
        settings = settings_class.from_properties({"endpoint": "http://h", **old})
    assert (settings.connect_timeout_ms, settings.read_timeout_ms) == (1500, 2500)
    assert settings.max_retries == 0
    assert "'connect_timeout' is deprecated: use 'client.connect-timeout-ms'" in caplog.text
    assert "'max_retries' is deprecated: use 'client.max-retries'" in caplog.text


def test_iceberg_reads_its_warehouses_and_credential() -> None:
    settings = IcebergSettings.from_properties(
        {"endpoint": "https://i", "warehouses": "a, b", "credential": "id:secret"}
    )
    assert settings.warehouses == ("a", "b")
    assert settings.credential == "id:secret"


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"endpoint": "ftp://h"}, "endpoint must start with http:// or https://"),
        ({"endpoint": "http://h", "auth_token": "t", "credential": "a:b"}, "only one of"),
        ({"endpoint": "http://h", "client.max-retries": "-1"}, "must be at least 0"),
        ({"endpoint": "http://h", "read_timeout": "soon"}, "'read_timeout' must be an integer"),
    ],
)
def test_iceberg_refuses_bad_properties(properties: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        IcebergSettings.from_properties(properties)


def test_unity_needs_an_endpoint() -> None:
    with pytest.raises(ConfigurationError, match="missing required property 'endpoint'"):
        UnitySettings.from_properties({"endpoint": " "})
