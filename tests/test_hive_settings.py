"""HiveSettings: the Hive backends' properties, their defaults, the old keys in seconds."""

from __future__ import annotations

import logging

import pytest

from backends.core.settings import ConfigurationError
from backends.hive import Hive2Namespace, Hive3Namespace, HiveSettings
from backends.hive.client import MetastoreAddress


def test_defaults() -> None:
    settings = HiveSettings.from_properties({})
    assert settings.uri == ("thrift://localhost:9083",)
    assert settings.pool_size == 3
    assert (settings.connect_timeout_ms, settings.read_timeout_ms) == (10_000, 60_000)
    assert settings.root is None and settings.owner is None and settings.storage == {}


def test_old_timeout_keys_are_deprecated_aliases_in_seconds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="backends.core.settings"):
        settings = HiveSettings.from_properties(
            {"client.connect-timeout": "2.5", "client.read-timeout": "7"}
        )
    assert (settings.connect_timeout_ms, settings.read_timeout_ms) == (2500, 7000)
    assert "'client.read-timeout' is deprecated: use 'client.read-timeout-ms'" in caplog.text
    assert "(in ms, not s)" in caplog.text


def test_new_timeout_keys_win_over_the_old_ones() -> None:
    settings = HiveSettings.from_properties(
        {"client.read-timeout-ms": "1500", "client.read-timeout": "9"}
    )
    assert settings.read_timeout_ms == 1500


def test_several_uris_are_tried_in_order() -> None:
    settings = HiveSettings.from_properties({"uri": "thrift://a:1, thrift://b,"})
    assert settings.addresses() == [MetastoreAddress("a", 1), MetastoreAddress("b", 9083)]


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"uri": " , "}, "'uri' must name at least one metastore"),
        ({"uri": "thrift://a:1,http://b:2"}, "must be thrift://host:port"),
        ({"client.pool-size": "0"}, "'client.pool-size' must be at least 1"),
        ({"client.read-timeout-ms": "0"}, "'client.read-timeout-ms' must be at least 1"),
        ({"client.connect-timeout": "soon"}, "'client.connect-timeout' must be"),
    ],
)
def test_bad_properties_are_refused(properties: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        HiveSettings.from_properties(properties)


@pytest.mark.parametrize("namespace_class", [Hive2Namespace, Hive3Namespace])
def test_the_namespaces_declare_and_parse_their_settings(
    namespace_class: type[Hive2Namespace], caplog: pytest.LogCaptureFixture
) -> None:
    """Built lazily: no metastore is needed until the first call."""
    with caplog.at_level(logging.WARNING, logger="backends.core.settings"):
        namespace = namespace_class(
            uri="thrift://127.0.0.1:1", owner="ana", **{"client.connect-timeout": "1"}
        )
    try:
        assert namespace_class.settings_class is HiveSettings
        assert namespace.settings.connect_timeout_ms == 1000
        assert namespace.settings.owner == "ana"
        assert "'client.connect-timeout' is deprecated" in caplog.text
    finally:
        namespace.close()
