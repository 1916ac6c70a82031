"""The server's settings: one declaration per setting (its key, default, checks, command-line
flag and documentation), read by `app.config` from a config file, the environment and the
command line, and documented by the table in docs/configuration.md generated from it
(`scripts/readme_tables.py`); the same mechanism as every backend's properties
(`backends.core.settings`).

Also what the checks across settings need: web origins and the access policy.
"""

from __future__ import annotations

import json
import os
import typing
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import ClassVar
from urllib.parse import urlsplit

from lance_namespace import LanceNamespaceError

from backends.core.access import AccessPolicy
from backends.core.settings import (
    ConfigurationError,
    DeclaredSettings,
    default_text,
    is_mapping,
    setting,
)

AUTH_MODES = ("off", "token", "forward")
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")



def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True, kw_only=True)
class Settings(DeclaredSettings):
    """Every server setting; made by `app.config.load_settings` (or directly, in tests)."""

    noun: ClassVar[str] = "setting"
    blank_is_unset: ClassVar[bool] = False

    impl: str = setting(
        "", 'dir',
        'Backend: `dir`, `hive2`, `hive3`, `glue`, `unity`, `iceberg`, or a `module.Class` path',
        cli='backend alias (dir, hive2, hive3, glue, unity, iceberg) or module.Class path; '
            'default dir',
    )
    properties: Mapping[str, str] = setting(
        "", {},
        'Backend properties (below)',
        cli='backend property (repeatable)',
        flag="--prop KEY=VALUE",
        shown_default='`{}` (`dir`: `root=./lance-data`)',
    )
    host: str = setting(
        "", '127.0.0.1',
        'Address to bind (`0.0.0.0` in the image)',
        cli='address to bind (default 127.0.0.1)',
    )
    port: int = setting(
        "", 2333,
        'Port to bind; `0` lets the system choose a free one, which the start-up line names',
        minimum=0, cli='port to bind (default 2333)',
    )
    workers: int = setting(
        "", None,
        'Worker processes (metrics are aggregated across them; the metadata cache is invalidated '
        'across them)',
        minimum=1,
        cli='worker processes (default: one per CPU the process may use)', factory=usable_cpus,
        shown_default='one per CPU the process may use (`os.sched_getaffinity`, so a '
        '`taskset`/cgroup cpuset limit counts)',
    )
    log_level: str = setting(
        "", 'info',
        '`critical`, `error`, `warning`, `info`, `debug`, `trace`; access lines are `info`',
        choices=LOG_LEVELS,
        cli='log level: critical, error, warning, info, debug or trace (default info)',
    )
    max_concurrency: int = setting(
        "", 32,
        'Backend calls running at once per worker (thread pool size)',
        minimum=1,
    )
    max_body_bytes: int = setting(
        "", 536870912,
        'Largest request body; larger gets 413 / code 13. An Arrow body (CreateTable, '
        'InsertIntoTable, MergeInsertIntoTable) is also refused (413) when it decodes '
        '(decompresses) to more, which is read from its metadata before anything is decoded (see '
        '[Limits](operations.md#limits))',
        minimum=1,
    )
    max_json_body_bytes: int = setting(
        "", 1048576,
        'Largest JSON body (the smaller of this and `max_body_bytes` applies); larger gets 413 / '
        'code 13. The largest real ones, a query with a vector of a few thousand floats, are '
        'about 100 KB',
        minimum=1,
    )
    max_json_containers: int = setting(
        "", 10000,
        'Objects and arrays in one JSON body, counted by their opening brackets (also inside '
        'strings) before it is decoded; more is 400 / code 13',
        minimum=1,
    )
    max_nesting_depth: int = setting(
        "", 32,
        "How deep a JSON body, or an Arrow body's schema, may nest; deeper is 400 / code 13",
        minimum=1,
    )
    max_arrow_rows: int = setting(
        "", 100000000,
        'Rows of one Arrow body; more is 413 / code 13',
        minimum=1,
    )
    max_arrow_columns: int = setting(
        "", 10000,
        'Columns of one Arrow body, nested fields counted; more is 400 / code 13',
        minimum=1,
    )
    max_expression_bytes: int = setting(
        "", 16384,
        'Bytes of one SQL expression a request carries (a filter, a predicate, an update value, a'
        ' computed or aliased column); longer is 400 / code 13',
        minimum=1,
    )
    max_projection_columns: int = setting(
        "", 1024,
        'Output columns of one query (names and aliased expressions together); more is 400 / code'
        ' 13',
        minimum=1,
    )
    max_expression_expansion: int = setting(
        "", 1024,
        'How many times the functions that repeat their input (`repeat`, `lpad`, `rpad`, '
        '`array_repeat`, `range`, `generate_series`) may multiply a value over one expression; '
        'their counts must be integer literals. More is 400 / code 13',
        minimum=1,
    )
    malloc_arenas: int = setting(
        "", 2,
        'glibc malloc arenas of each server process (`mallopt` at start; the workers of a '
        "supervisor get `MALLOC_ARENA_MAX`). glibc's default, 8 per CPU, let a worker's memory "
        'grow steadily under a mixed load (`bench/README.md`, Soak); 0 keeps that default',
        minimum=0,
    )
    lance_index_cache_bytes: int = setting(
        "", 1073741824,
        "Bytes of Lance's index cache in each worker, shared by every table it opens: a vector or"
        " full-text index is loaded once (by the first search, or LanceDB's `prewarm_index`) and "
        'serves every later request. Entries are keyed by the index files, so a changed table is '
        'never answered from a stale index',
        minimum=1,
    )
    lance_metadata_cache_bytes: int = setting(
        "", 268435456,
        "Bytes of Lance's metadata cache (manifests, fragment and deletion files) in each worker,"
        " shared the same way; every request still reads the table's latest version from storage",
        minimum=1,
    )
    body_read_timeout: float = setting(
        "", 30.0,
        "Seconds a request's whole body may take to arrive; a slower one gets 408 / code 13 and "
        'its connection is closed. `0`: no limit',
        minimum=0,
    )
    max_in_flight_body_bytes: int = setting(
        "", 1073741824,
        'Bytes one worker holds for request bodies at once: bodies as their bytes arrive (never a'
        ' declared `Content-Length`), plus what each decodes to, reserved before it is decoded; '
        'past it a request gets 503 / code 17 with `Retry-After: 1` (see '
        '[Limits](operations.md#limits))',
        minimum=1,
    )
    header_read_timeout: float = setting(
        "", 10.0,
        "Seconds a request's head (request line and headers) may take to arrive, from the "
        "connection's opening or the next request's first byte; then the connection gets 408 / "
        'code 13 (no answer if it sent nothing) and is closed. `0`: no limit',
        minimum=0,
    )
    max_header_bytes: int = setting(
        "", 65536,
        'Largest request head; a larger one gets 431 / code 13 and its connection is closed',
        minimum=1,
    )
    timeout_keep_alive: int = setting(
        "", 5,
        'Seconds an idle keep-alive connection stays open',
        minimum=0,
    )
    timeout_graceful_shutdown: int = setting(
        "", 30,
        'Seconds in-flight requests get to finish after SIGTERM (`0`: wait for all)',
        minimum=0,
    )
    readiness_timeout: float = setting(
        "", 5.0,
        'Seconds `/readyz` waits for the backend before answering 503',
    )
    backend_timeout: float = setting(
        "", 60.0,
        'Seconds a read-only backend call (Describe*, List*, *Exists, CountTableRows, QueryTable)'
        ' may take before the request gets 503 / code 17; writes are always awaited. `0`: no '
        'limit',
        minimum=0,
    )
    tls_cert_file: str = setting(
        "", '',
        'HTTPS served by the server itself: its certificate chain (PEM). Set with `tls_key_file`;'
        ' usually TLS ends at the gateway instead ([Security](security.md#tls))',
    )
    tls_key_file: str = setting(
        "", '',
        'The private key of `tls_cert_file` (PEM, unencrypted)',
    )
    tls_client_ca_file: str = setting(
        "", '',
        "CA certificates (PEM) that every client's certificate must be signed by: with it set, a "
        'client without such a certificate cannot connect (mutual TLS)',
    )
    root_path: str = setting(
        "", '',
        'Path prefix behind a gateway, e.g. `/lance`',
        cli='path prefix behind a gateway, e.g. /lance',
    )
    trusted_proxies: str = setting(
        "", '',
        'Comma-separated IPs/networks (or `*`) whose `X-Forwarded-For`/`-Proto` are honoured',
        cli='comma-separated addresses or networks whose X-Forwarded-* headers are honoured '
            '(default none)',
    )
    access_log: bool = setting(
        "", True,
        'One JSON line per request',
    )
    access_log_sample: float = setting(
        "", 1.0,
        'Share of successful requests that get an access line (e.g. `0.01`); failed requests are '
        'always logged',
        minimum=0,
    )
    auth_mode: str = setting(
        "", 'off',
        '`off`, `token` or `forward` (see Authentication)',
        choices=AUTH_MODES, cli='caller authentication (default off)',
    )
    auth_tokens: str = setting(
        "", '',
        'Accepted tokens, comma-separated (prefer the file)',
        secret=True,
    )
    auth_tokens_file: str = setting(
        "", '',
        'File of accepted tokens, one a line, `#` comments; a line `<identity> <token>` names the'
        ' caller (for [credential vending](security.md#credential-vending)); format under '
        '[Authentication](security.md#authentication)',
        cli='file of accepted tokens, one a line',
    )
    auth_forward_unchecked: bool = setting(
        "", False,
        'With `auth_mode: forward` and no tokens, start even though the backend judges no caller '
        '(any bearer token may then do everything); without it such a server refuses to start '
        '([Authentication](security.md#authentication))',
    )
    allowed_origins: str = setting(
        "", '',
        'With auth off: comma-separated web origins (`https://app.example.com`, '
        '`http://localhost:8080`) whose pages may call the server from a browser besides its own '
        'origin; their hosts are also accepted as `Host` on a loopback-bound server (see '
        '[Authentication](security.md#authentication)). A malformed entry stops the start',
    )
    access: Mapping[str, str] = setting(
        "", {},
        'With `auth_mode: token`: each identity\'s grants, e.g. `{"etl": "read, write@sales"}` '
        '(see [Authentication](security.md#authentication)); refused at start with another '
        '`auth_mode`',
    )
    access_default: str = setting(
        "", 'admin',
        'Grants of bare tokens and of identities without an `access` entry (`read`, `write@ns`, '
        '`none`, ...)',
    )
    external_locations: Mapping[str, str] = setting(
        "", {},
        "Storage prefixes outside the backend's root where existing data may be registered, each "
        'bound to the namespace subtree allowed to register there, e.g. `{"s3://legacy/hr/": '
        '"hr", "s3://shared/features/": "ml$features"}` (empty namespace: every one); see '
        '[External locations](security.md#external-locations). A bad entry stops the start',
    )
    external_locations_purge: bool = setting(
        "", False,
        'Whether DropTable of a table in an external location deletes its data (only when its '
        'ownership record names the table); off, the table is deregistered and its data left',
    )
    metrics_identities: bool = setting(
        "", False,
        'Whether `/metrics` (answered without credentials) names the identities of '
        '`auth_tokens_file` in the `identity` label of `lance_adapter_credentials_vended_total`; '
        'off, a named caller is `hidden` (an unnamed one is `none` either way)',
    )
    metadata_cache: bool = setting(
        "", True,
        'Cache DescribeTable, TableExists, ListTables, ListNamespaces and DescribeNamespace '
        'answers of the built-in backends (see [Metadata cache](operations.md#metadata-cache))',
    )
    metadata_cache_ttl: float = setting(
        "", 0.0,
        'Seconds an answer nothing validates (catalog backends, object-store roots) is served '
        'without asking its source. `0`: such answers are not cached, so changes made by other '
        'tools are seen by the next request; above 0, they stay hidden up to that long (opt in '
        'only where that lag is acceptable)',
        minimum=0,
    )
    metadata_cache_validated_ttl: float = setting(
        "", 30.0,
        'Seconds an answer of a local `dir` root, re-checked against the storage on every hit, is'
        ' kept at most',
        minimum=0,
    )
    metadata_cache_entries: int = setting(
        "", 10000,
        'Entries per worker; the oldest goes first',
        minimum=1,
    )
    lancedb_root_database: str = setting(
        "", 'lance',
        'The LanceDB database (`lancedb.connect("db://<name>", ...)`) whose tables are the '
        "root's; every other database is the root's child namespace of that name, as LanceDB's "
        '`connect_catalog` makes them (see [Clients](clients.md#lancedb)). Empty: every database '
        'is a child namespace',
    )
    maintenance: bool = setting(
        "", True,
        'Table maintenance in the server: passes that compact small fragments, bring indexes up '
        'to date and remove old versions (see [Table '
        'maintenance](operations.md#table-maintenance)); `lance-adapter maintain` runs one pass '
        'from a scheduled job',
    )
    maintenance_interval: float = setting(
        "", 600.0,
        'Seconds between two maintenance passes; must be positive (turn maintenance off with '
        '`maintenance: false`)',
    )
    maintenance_min_small_fragments: int = setting(
        "", 8,
        'A table is compacted once it holds this many fragments of fewer rows than '
        '`maintenance_target_rows_per_fragment`',
        minimum=1,
    )
    maintenance_target_rows_per_fragment: int = setting(
        "", 1048576,
        'Rows a compacted fragment holds',
        minimum=1,
    )
    maintenance_version_retention: float = setting(
        "", 604800.0,
        'Seconds a version is kept; older ones (not the latest, nor tagged ones) are removed. '
        '`0`: keep every version',
        minimum=0,
    )
    maintenance_abandoned_after: float = setting(
        "", 3600.0,
        "Seconds after which a pass removes a `dir` local root's table directory left by a killed"
        ' create (no manifest entry, no committed version, nothing in it changed for that long); '
        "a create in flight, also another replica's, is never that old",
        minimum=0,
    )

    def check(self) -> None:
        """The checks across settings, and those a minimum cannot say."""
        if self.port > 65535:
            raise ConfigurationError(f"port must be between 0 and 65535, got {self.port}")
        if self.root_path and (not self.root_path.startswith("/") or self.root_path.endswith("/")):
            raise ConfigurationError(
                "root_path must start with '/' and not end with '/', e.g. /lance")
        if self.readiness_timeout <= 0:
            raise ConfigurationError("setting 'readiness_timeout' must be positive")
        if self.maintenance_interval <= 0:
            raise ConfigurationError("setting 'maintenance_interval' must be positive; turn "
                                     "maintenance off with 'maintenance: false'")
        allowed_origin_list(self)
        access_policy(self)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Settings:
        return cls(**json.loads(text))


def settings_table() -> str:
    """docs/configuration.md's table of the server's settings, from their declarations."""
    lines = ["| Setting (config file key) | Environment variable | CLI flag | Default | Meaning |",
             "| --- | --- | --- | --- | --- |"]
    for declared_field, declared in Settings.declared():
        variable = f"`LANCE_ADAPTER_{declared.key.upper()}`"
        if is_mapping(typing.get_type_hints(Settings)[declared.key]):
            variable += " (JSON object)"
        if declared.key == "properties":
            variable += ", `LANCE_ADAPTER_PROP_<KEY>`"
        flag = declared.flag or ("--" + declared.key.replace("_", "-") if declared.cli else "")
        lines.append(f"| `{declared.key}` | {variable} | {f'`{flag}`' if flag else ''} | "
                     f"{default_text(declared_field, declared)} | {declared.doc} |")
    return "\n".join(lines)


def access_policy(settings: Settings) -> AccessPolicy | None:
    """What each caller may do, judged by the server with `auth_mode: token`; None when the
    server does not judge (auth off: no identities to tell apart; forward: the catalog does)."""
    if settings.access and settings.auth_mode != "token":
        raise ConfigurationError(
            "setting 'access' names identities, which need auth_mode 'token'")
    try:
        policy = AccessPolicy.parse(settings.access_default, settings.access)
    except (ValueError, LanceNamespaceError) as error:
        raise ConfigurationError(f"setting 'access': {error}") from None
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
            raise ConfigurationError(
                f"allowed_origins entry {entry!r} is not an origin like "
                "https://app.example.com or http://localhost:8080")
        origins.add(origin)
    return frozenset(origins)
