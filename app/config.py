"""Server settings: defaults, then a config file, then environment variables, then the CLI."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lance
import yaml
from lance_namespace import LanceNamespaceError

from backends.core.access import AccessPolicy
from backends.core.bounds import RequestBounds
from backends.core.external import ExternalLocation, parse_external_locations
from backends.core.settings import parse_bool

ENV_PREFIX = "LANCE_ADAPTER_"
ENV_PROPERTY_PREFIX = "LANCE_ADAPTER_PROP_"
ENV_PROPERTIES_JSON = "LANCE_ADAPTER_PROPERTIES"
ENV_ACCESS_JSON = "LANCE_ADAPTER_ACCESS"
ENV_EXTERNAL_JSON = "LANCE_ADAPTER_EXTERNAL_LOCATIONS"
DEFAULT_PORT = 2333


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class SettingsError(ValueError):
    """Settings that cannot be used; the message is one line for the operator."""


@dataclass
class Settings:
    impl: str = "dir"
    properties: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    # Worker processes; by default one per CPU the process may use.
    workers: int = field(default_factory=usable_cpus)
    log_level: str = "info"
    max_concurrency: int = 32
    # Largest request body, in bytes; an Arrow IPC body is also refused (413) when it decodes
    # (decompresses) to more, which is checked before it is decoded.
    max_body_bytes: int = 512 * 1024 * 1024
    # Largest JSON request body (the smaller of this and max_body_bytes applies): the largest
    # real ones, a query with a vector of a few thousand floats, are about 100 KB; what a body
    # holds is handled item by item, partly on the event loop, so 1 MiB keeps that short.
    max_json_body_bytes: int = 1024 * 1024
    # Objects and arrays in one JSON body: each costs the garbage collector, and a body of
    # a million would hold the event loop for a second. Real ones hold a handful.
    max_json_containers: int = 10_000
    # Rows, and columns (nested fields count), of one Arrow IPC request body.
    max_arrow_rows: int = 100_000_000
    max_arrow_columns: int = 10_000
    # What one request may make the server compute (backends.core.bounds): the bytes of one
    # SQL expression, a query's output columns, and how many times the functions that repeat
    # their input (repeat, lpad, rpad, array_repeat, range) may multiply a value.
    max_expression_bytes: int = 16 * 1024
    max_projection_columns: int = 1024
    max_expression_expansion: int = 1024
    # Bytes of Lance's caches in each worker, shared by every table it opens: indexes (a
    # vector search loads its index once, not per request) and metadata (manifests,
    # fragment and deletion files). Entries are keyed by the files read, so never stale.
    lance_index_cache_bytes: int = 1024 * 1024 * 1024
    lance_metadata_cache_bytes: int = 256 * 1024 * 1024
    # glibc malloc arenas of each server process (app.malloc_arenas): few keep a worker's
    # memory from growing under a steady load; 0 keeps glibc's default (8 per CPU).
    malloc_arenas: int = 2
    # How deeply a JSON body or an Arrow schema may nest.
    max_nesting_depth: int = 32
    # Seconds a request's whole body may take to arrive; a slower one is answered 408.
    body_read_timeout: float = 30.0
    # Bytes of request bodies one process holds at once: bodies as they arrive, plus what they
    # decode to. Past it a request is answered 503 / code 17 with Retry-After.
    max_in_flight_body_bytes: int = 1024 * 1024 * 1024
    # Seconds a request's head (request line and headers) may take to arrive, from the
    # connection's opening or the request's first byte; then the connection is closed (408).
    header_read_timeout: float = 10.0
    # Largest request head, in bytes; a larger one is answered 431 and its connection closed.
    max_header_bytes: int = 64 * 1024
    timeout_keep_alive: int = 5
    # Seconds uvicorn waits for in-flight requests after SIGTERM before closing them.
    timeout_graceful_shutdown: int = 30
    # Seconds /readyz waits for the backend's answer before reporting 503.
    readiness_timeout: float = 5.0
    # Seconds a read-only backend call (Describe*, List*, *Exists, Count, Query) may take
    # before the request is answered with 503 / code 17; 0 waits as long as the backend does.
    backend_timeout: float = 60.0
    # HTTPS served by the server itself (app.tls; usually TLS ends at the gateway instead):
    # the certificate chain and its private key (PEM), and CA certificates that every
    # client's certificate must be signed by (empty: clients present none).
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_client_ca_file: str = ""
    # Path prefix the service is reached under behind a gateway, e.g. "/lance".
    root_path: str = ""
    # Comma-separated addresses or networks whose X-Forwarded-* headers are honoured.
    trusted_proxies: str = ""
    # One JSON line per request on the "lance_adapter.access" logger.
    access_log: bool = True
    # Authentication of callers: "off", "token" (static tokens) or "forward".
    auth_mode: str = "off"
    # Accepted bearer tokens / API keys: comma-separated, and/or one per line in a file.
    auth_tokens: str = ""
    auth_tokens_file: str = ""
    # auth_mode forward without tokens of its own lets the catalog judge every caller; on a
    # backend that judges none (dir, glue, hive, a REST catalog without forward_caller_token)
    # any made-up token could do anything, so the server refuses to start unless this is set.
    auth_forward_unchecked: bool = False
    # With auth off: web origins (`scheme://host[:port]`, comma-separated) whose pages may
    # call the server from a browser besides its own (app.browser_guard).
    allowed_origins: str = ""
    # Whether /metrics names the identities of auth_tokens_file in its `identity` labels.
    metrics_identities: bool = False
    # With auth_mode token: what each identity of auth_tokens_file may do (backends.core.access),
    # and what a caller without its own entry (a bare token) may do.
    access: dict[str, str] = field(default_factory=dict)
    # Storage prefixes outside the backend's root where existing data may be registered, each
    # bound to the namespace subtree allowed to register there (`a$b`; empty: every one).
    external_locations: dict[str, str] = field(default_factory=dict)
    # Whether DropTable of a table in an external location deletes its data (off: the table
    # is deregistered and its data left, as data the server did not place).
    external_locations_purge: bool = False
    access_default: str = "admin"
    # The metadata cache (Describe/List/Exists answers); writes through the server clear it.
    metadata_cache: bool = True
    # Seconds an answer nothing validates (catalog backends, object stores) may be served
    # without asking its source: changes made by other tools stay hidden that long. 0: such
    # answers are not cached, so every answer is fresh.
    metadata_cache_ttl: float = 0.0
    # Seconds an answer re-checked against a local directory root on every hit is kept.
    metadata_cache_validated_ttl: float = 30.0
    metadata_cache_entries: int = 10_000
    # The share of requests that get an access log line (1 = all, 0.01 = one in a hundred).
    access_log_sample: float = 1.0
    # LanceDB's remote client names a database in every call (`x-lancedb-database`): each
    # database is the child namespace of that name of the root (LanceDB's connect_catalog),
    # except this one, whose tables are the root's (`lancedb.connect("db://lance", ...)`);
    # empty: every database is a child namespace.
    lancedb_root_database: str = "lance"
    # Table maintenance in the server (`app.maintenance`): every maintenance_interval seconds,
    # one pass over every table compacts small fragments, brings indexes up to date and
    # removes versions older than maintenance_version_retention seconds (0 keeps them all).
    maintenance: bool = True
    maintenance_interval: float = 600.0
    # A table is compacted once it holds this many fragments of fewer rows than
    # maintenance_target_rows_per_fragment; compaction writes fragments that large.
    maintenance_min_small_fragments: int = 8
    maintenance_target_rows_per_fragment: int = 1024 * 1024
    maintenance_version_retention: float = 7 * 24 * 3600.0
    # Seconds after which what an interrupted create left (a `dir` local root's table
    # directory without a committed version or a manifest entry) counts as abandoned and a
    # pass removes it; a create in flight, here or in another replica, is never that old.
    maintenance_abandoned_after: float = 3600.0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Settings:
        return cls(**json.loads(text))


AUTH_MODES = ("off", "token", "forward")
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")
_FIELD_TYPES = {f.name: str(f.type) for f in fields(Settings)}
_MAPPING_FIELDS = frozenset({"properties", "access", "external_locations"})
_SCALAR_FIELDS = set(_FIELD_TYPES) - _MAPPING_FIELDS


def _boolean(name: str, value: Any) -> bool:
    try:
        return parse_bool(value)
    except ValueError as error:
        raise SettingsError(f"setting '{name}' {error}") from None


def _typed(name: str, value: Any) -> Any:
    kind = _FIELD_TYPES[name]
    if kind == "bool":
        return _boolean(name, value)
    if kind not in ("int", "float"):
        if isinstance(value, bool):  # YAML reads an unquoted `off` as false
            return "on" if value else "off"
        return str(value)
    try:
        return int(value) if kind == "int" else float(value)
    except (TypeError, ValueError):
        wanted = "an integer" if kind == "int" else "a number"
        raise SettingsError(f"setting '{name}' must be {wanted}, got {value!r}") from None


def _apply(settings: Settings, values: Mapping[str, Any]) -> None:
    for name, value in values.items():
        if name in _MAPPING_FIELDS:
            if not isinstance(value, Mapping):
                raise SettingsError(f"setting '{name}' must be a mapping of strings")
            getattr(settings, name).update({str(k): str(v) for k, v in value.items()})
        elif name in _SCALAR_FIELDS:
            setattr(settings, name, _typed(name, value))
        else:
            raise SettingsError(f"unknown setting '{name}'")


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        values = yaml.safe_load(path.read_text())
    except OSError as error:
        raise SettingsError(f"cannot read config file {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise SettingsError(f"config file {path} is not valid YAML/JSON: {error}") from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise SettingsError(f"config file {path} must hold a mapping")
    return values


def environment_values(environ: Mapping[str, str]) -> dict[str, Any]:
    """LANCE_ADAPTER_<SETTING>, LANCE_ADAPTER_PROPERTIES (JSON) and LANCE_ADAPTER_PROP_<KEY>.

    In LANCE_ADAPTER_PROP_<KEY>, KEY is lower-cased and `__` stands for `.`:
    LANCE_ADAPTER_PROP_STORAGE__REGION=eu-west-1 sets `storage.region`.
    """
    values: dict[str, Any] = {}
    properties: dict[str, str] = {}
    if ENV_PROPERTIES_JSON in environ:
        try:
            properties.update(json.loads(environ[ENV_PROPERTIES_JSON]))
        except (json.JSONDecodeError, TypeError, ValueError):
            raise SettingsError(f"{ENV_PROPERTIES_JSON} must be a JSON object") from None
    for variable, setting in ((ENV_ACCESS_JSON, "access"),
                              (ENV_EXTERNAL_JSON, "external_locations")):
        if variable in environ:
            try:
                values[setting] = dict(json.loads(environ[variable]))
            except (json.JSONDecodeError, TypeError, ValueError):
                raise SettingsError(f"{variable} must be a JSON object") from None
    for name, value in environ.items():
        if name.startswith(ENV_PROPERTY_PREFIX):
            key = name[len(ENV_PROPERTY_PREFIX):].lower().replace("__", ".")
            properties[key] = value
        elif name.startswith(ENV_PREFIX) and name not in (
                ENV_PROPERTIES_JSON, ENV_ACCESS_JSON, ENV_EXTERNAL_JSON):
            setting = name[len(ENV_PREFIX):].lower()
            if setting in _SCALAR_FIELDS:
                values[setting] = value
    if properties:
        values["properties"] = properties
    return values


def load_settings(
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    settings = Settings()
    if config_file is not None:
        _apply(settings, read_config_file(config_file))
    _apply(settings, environment_values(os.environ if environ is None else environ))
    _apply(settings, {k: v for k, v in (overrides or {}).items() if v is not None})
    if not 0 <= settings.port <= 65535:
        raise SettingsError(f"port must be between 0 and 65535, got {settings.port}")
    for name in ("workers", "max_concurrency", "max_body_bytes", "max_in_flight_body_bytes",
                 "max_json_body_bytes", "max_json_containers", "max_arrow_rows",
                 "max_arrow_columns", "max_nesting_depth", "max_header_bytes",
                 "max_expression_bytes", "max_projection_columns", "max_expression_expansion",
                 "lance_index_cache_bytes", "lance_metadata_cache_bytes",
                 "maintenance_min_small_fragments", "maintenance_target_rows_per_fragment"):
        if getattr(settings, name) < 1:
            raise SettingsError(f"setting '{name}' must be at least 1")
    check_service_settings(settings)
    return settings


def check_service_settings(settings: Settings) -> None:
    """The gateway, timeout and auth settings must make sense together."""
    if settings.root_path and (
        not settings.root_path.startswith("/") or settings.root_path.endswith("/")
    ):
        raise SettingsError("root_path must start with '/' and not end with '/', e.g. /lance")
    if settings.log_level.lower() not in LOG_LEVELS:
        raise SettingsError(f"log_level must be one of {', '.join(LOG_LEVELS)}, "
                            f"got {settings.log_level!r}")
    for name in ("body_read_timeout", "header_read_timeout"):
        if getattr(settings, name) < 0:
            raise SettingsError(f"setting '{name}' must not be negative")
    if settings.readiness_timeout <= 0:
        raise SettingsError("setting 'readiness_timeout' must be positive")
    if settings.maintenance_interval <= 0:
        raise SettingsError("setting 'maintenance_interval' must be positive; turn maintenance "
                            "off with 'maintenance: false'")
    for name in ("maintenance_version_retention", "maintenance_abandoned_after"):
        if getattr(settings, name) < 0:
            raise SettingsError(f"setting '{name}' must not be negative")
    if settings.malloc_arenas < 0:
        raise SettingsError("setting 'malloc_arenas' must not be negative (0: glibc's default)")
    if settings.timeout_graceful_shutdown < 0:
        raise SettingsError("setting 'timeout_graceful_shutdown' must not be negative")
    if settings.auth_mode not in AUTH_MODES:
        raise SettingsError(f"auth_mode must be one of {', '.join(AUTH_MODES)}")
    allowed_origin_list(settings)
    access_policy(settings)


def request_bounds(settings: Settings) -> RequestBounds:
    """What one request may make the backend compute, as the guard checks it."""
    return RequestBounds(settings.max_expression_bytes, settings.max_projection_columns,
                         settings.max_expression_expansion)


def lance_session(settings: Settings) -> lance.Session:
    """The Lance session (index and metadata caches) of one worker process."""
    return lance.Session(index_cache_size_bytes=settings.lance_index_cache_bytes,
                         metadata_cache_size_bytes=settings.lance_metadata_cache_bytes)


def external_locations(settings: Settings) -> tuple[ExternalLocation, ...]:
    """The parsed `external_locations`; a bad entry stops the start with one sentence."""
    try:
        return parse_external_locations(
            settings.external_locations, settings.external_locations_purge)
    except ValueError as error:
        raise SettingsError(f"setting 'external_locations': {error}") from None


def access_policy(settings: Settings) -> AccessPolicy | None:
    """What each caller may do, judged by the server with `auth_mode: token`; None when the
    server does not judge (auth off: no identities to tell apart; forward: the catalog does)."""
    if settings.access and settings.auth_mode != "token":
        raise SettingsError("setting 'access' names identities, which need auth_mode 'token'")
    try:
        policy = AccessPolicy.parse(settings.access_default, settings.access)
    except (ValueError, LanceNamespaceError) as error:
        raise SettingsError(f"setting 'access': {error}") from None
    return policy if settings.auth_mode == "token" else None


_DEFAULT_PORTS = {"http": 80, "https": 443}


def normal_origin(text: str) -> str | None:
    """`scheme://host:port` (lower case, the port always written) of the web origin `text`,
    as a browser's `Origin` header or an `allowed_origins` entry names it; None if `text`
    is not exactly an http(s) origin (e.g. `null`, or anything with a path or user)."""
    if not text.isprintable() or " " in text:
        return None
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    if (parts.scheme not in _DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc
            or parts.path or parts.query or parts.fragment or text.endswith(("?", "#"))):
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}:{port or _DEFAULT_PORTS[parts.scheme]}"


def allowed_origin_list(settings: Settings) -> frozenset[str]:
    """The normal forms of the `allowed_origins` entries; a malformed entry is refused."""
    origins = set()
    for entry in (part.strip() for part in settings.allowed_origins.split(",")):
        if not entry:
            continue
        origin = normal_origin(entry.removesuffix("/"))
        if origin is None:
            raise SettingsError(f"allowed_origins entry {entry!r} is not an origin like "
                                "https://app.example.com or http://localhost:8080")
        origins.add(origin)
    return frozenset(origins)
