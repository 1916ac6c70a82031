"""Handling files at a table's location with pyarrow's file systems, reached with the storage
options Lance is given (the Spark source cleans files with it). The server has the same
helper (`backends/core/filesystems.py`): executors receive this package alone, and the
server's image installs the server's packages without this one."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow.fs as pafs


def table_filesystem(
    location: str, storage: Mapping[str, str] | None = None
) -> tuple[pafs.FileSystem, str]:
    """A pyarrow file system reaching the table's location, and the location's path in it.

    S3 locations use the storage options the namespace gave (pylance's `aws_*` keys:
    endpoint, keys, region), so cleaning and checking files reach the same bucket as
    Lance; anything else is what pyarrow makes of the URI with the environment's
    credentials.
    """
    scheme, separator, path = location.partition("://")
    options = {key.lower(): value for key, value in (storage or {}).items()}
    if not separator or scheme.lower() not in ("s3", "s3a") or not options:
        return pafs.FileSystem.from_uri(location)

    def option(*names: str) -> str | None:
        return next((options[name] for name in names if options.get(name)), None)

    arguments: dict[str, object] = {
        "access_key": option("aws_access_key_id", "access_key_id"),
        "secret_key": option("aws_secret_access_key", "secret_access_key"),
        "session_token": option("aws_session_token", "session_token"),
        "region": option("aws_region", "region"),
    }
    endpoint = option("aws_endpoint", "endpoint", "aws_endpoint_url", "endpoint_url")
    if endpoint:
        endpoint_scheme, has_scheme, host = endpoint.partition("://")
        arguments["endpoint_override"] = host if has_scheme else endpoint
        plain = option("allow_http", "aws_allow_http") == "true"
        arguments["scheme"] = endpoint_scheme if has_scheme else ("http" if plain else "https")
    present = {key: value for key, value in arguments.items() if value is not None}
    return pafs.S3FileSystem(**present), path
