"""Options of the `lance` data source and the namespace connection they describe."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the client is imported only where a namespace is called
    from lance_namespace import LanceNamespace

NAMESPACE_PROPERTY_PREFIX = "ns."
WRITE_MODES = ("append", "overwrite", "errorifexists", "ignore")
WRITE_MODE_ALIASES = {"error": "errorifexists", "default": "errorifexists"}
DEFAULT_ROWS_PER_PARTITION = 128 * 1024
DEFAULT_MAX_ROWS_PER_FILE = 1024 * 1024
DEFAULT_BATCH_SIZE = 8192


class LanceSourceError(Exception):
    """An error a Spark user of the `lance` data source can act on; the message says what."""


@dataclass(frozen=True)
class LanceOptions:
    """The parsed, validated options of one read or write."""

    table_id: list[str]
    table_name: str
    uri: str | None = None
    impl: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    version: int | None = None
    # Set by the driver (read_table) with `version`, so tasks skip the namespace lookup.
    location: str | None = None
    vector_columns: dict[str, int | None] = field(default_factory=dict)
    write_mode: str | None = None
    # None: DEFAULT_ROWS_PER_PARTITION, or for an aggregated read as many as its bytes allow.
    rows_per_partition: int | None = None
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE
    batch_size: int = DEFAULT_BATCH_SIZE
    commit_retries: int = 20
    # Off by default: Spark 4.3 reuses a filtered Python reader for a later unfiltered query
    # on the same loaded DataFrame (see docs/spark.md, Known limits).
    pushdown: bool = False
    # The table's local path is one file system shared by the driver and every executor.
    shared_storage: bool = False

    @property
    def namespace_description(self) -> str:
        return f"the Lance REST namespace at {self.uri}" if self.uri else f"namespace '{self.impl}'"


def parse_options(options: Mapping[str, str]) -> LanceOptions:
    """Validate the user's options; raise LanceSourceError naming the bad one."""
    lowered = {str(key).lower(): str(value) for key, value in options.items()}
    table_name = lowered.get("table") or lowered.get("path")
    if not table_name:
        raise LanceSourceError("option 'table' is required (a table identifier such as 'db.t')")
    delimiter = lowered.get("delimiter", ".")
    table_id = [part for part in table_name.split(delimiter)]
    if any(not part for part in table_id):
        raise LanceSourceError(f"table identifier '{table_name}' has an empty part")
    uri, impl = lowered.get("uri"), lowered.get("impl")
    if bool(uri) == bool(impl):
        raise LanceSourceError(
            "give exactly one of option 'uri' (a Lance REST namespace URL) or 'impl' "
            "(a namespace implementation such as 'dir', with its properties as 'ns.<name>')"
        )
    properties = {
        key[len(NAMESPACE_PROPERTY_PREFIX) :]: value
        for key, value in lowered.items()
        if key.startswith(NAMESPACE_PROPERTY_PREFIX)
    }
    location = lowered.get("pinned_location") or None
    version = _optional_int(lowered, "version")
    if location and version is None:
        raise LanceSourceError("option 'pinned_location' needs option 'version' as well")
    return LanceOptions(
        table_id=table_id,
        table_name=table_name,
        uri=uri.rstrip("/") if uri else None,
        impl=impl,
        properties=properties,
        version=version,
        location=location,
        vector_columns=_vector_columns(lowered.get("vector_columns", "")),
        write_mode=_write_mode(lowered.get("write_mode")),
        rows_per_partition=_optional_positive_int(lowered, "rows_per_partition"),
        max_rows_per_file=_positive_int(lowered, "max_rows_per_file", DEFAULT_MAX_ROWS_PER_FILE),
        batch_size=_positive_int(lowered, "batch_size", DEFAULT_BATCH_SIZE),
        commit_retries=_positive_int(lowered, "commit_retries", 20),
        pushdown=_boolean(lowered, "pushdown", False),
        shared_storage=_boolean(lowered, "shared_storage", False),
    )


def connect(options: LanceOptions) -> LanceNamespace:
    """A namespace client for the options: REST for `uri`, the direct implementation for `impl`."""
    if options.uri:
        from lance.namespace import RestNamespace

        return RestNamespace(uri=options.uri)
    from backends import load_namespace

    try:
        return load_namespace(options.impl or "", options.properties)
    except Exception as error:
        raise LanceSourceError(f"cannot load namespace '{options.impl}': {error}") from error


def _optional_int(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise LanceSourceError(f"option '{name}' must be an integer, got '{raw}'") from None


def _positive_int(options: Mapping[str, str], name: str, default: int) -> int:
    value = _optional_positive_int(options, name)
    return default if value is None else value


def _optional_positive_int(options: Mapping[str, str], name: str) -> int | None:
    value = _optional_int(options, name)
    if value is not None and value <= 0:
        raise LanceSourceError(f"option '{name}' must be positive, got {value}")
    return value


def _boolean(options: Mapping[str, str], name: str, default: bool) -> bool:
    """Spark's own spelling of a boolean option, `true` or `false`. (Not the server's parser
    in `backends.core.settings`: this package runs on executors without the server's packages.)"""
    raw = options.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() not in ("true", "false"):
        raise LanceSourceError(f"option '{name}' must be true or false, got '{raw}'")
    return raw.lower() == "true"


def _write_mode(raw: str | None) -> str | None:
    if raw is None:
        return None
    mode = raw.lower().replace("_", "").replace("-", "")
    mode = WRITE_MODE_ALIASES.get(mode, mode)
    if mode not in WRITE_MODES:
        raise LanceSourceError(f"option 'write_mode' must be one of {', '.join(WRITE_MODES)}")
    return mode


def _vector_columns(raw: str) -> dict[str, int | None]:
    """`'emb:128,other'` -> {'emb': 128, 'other': None}; a missing size comes from the table."""
    columns: dict[str, int | None] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        name, _, size = item.partition(":")
        if size and not size.strip().isdigit():
            raise LanceSourceError(f"vector column '{item}' must look like name or name:dimension")
        columns[name.strip()] = int(size) if size else None
    return columns
