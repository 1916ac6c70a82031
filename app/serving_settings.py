"""The server's settings about serving: the backend, where to listen, the limits of one
request, time-outs, TLS, the gateway and the access log. `app.settings.Settings` adds the
callers' authentication and grants, the caches and maintenance; both are declared with the
backends' mechanism (`backends.core.settings`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from backends.core.settings import ConfigurationError, DeclaredSettings, setting

LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True, kw_only=True)
class ServingSettings(DeclaredSettings):
    """The first part of the server's settings (the order of the documentation's table)."""

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
    catalogs: Mapping[str, Mapping[str, str]] = setting(
        "", {},
        'Several catalogs in one server, each a top-level namespace: its name -> its `impl` '
        'and properties, e.g. `{"lake": {"impl": "hive2", "uri": "thrift://hms:9083"}, '
        '"scratch": {"impl": "dir", "root": "/data"}}`; instead of `impl` and `properties` '
        '(see [Several catalogs](operations.md#several-catalogs))',
    )
    catalogs_nested_roots: bool = setting(
        "", False,
        'Whether catalogs whose storage roots are one, or lie one inside the other, may be '
        'served (off: the start is refused, since one catalog\'s tables could then register '
        'and delete another\'s data); see [Several catalogs](operations.md#several-catalogs)',
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
    malloc_trim_interval: float = setting(
        "", 30.0,
        'Seconds between the times each worker hands the memory glibc holds free back to the '
        "system (`malloc_trim`): without it a worker's memory follows the largest write, "
        'compaction or scan it has done (`bench/README.md`, Soak); 0 never',
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
        "", 67108864,
        "Bytes of Lance's metadata cache (manifests, fragment and deletion files) in each worker,"
        " shared the same way; every request still reads the table's latest version from "
        "storage, so what fills it beyond the tables' latest versions (each write's new version "
        "adds about 45 KiB) is rarely read again",
        minimum=1,
    )
    lance_session_renewal: float = setting(
        "", 60.0,
        "Seconds between the times each worker checks whether the table versions it opened "
        "since its Lance session began have filled the metadata cache, and if so starts a fresh"
        " session (the indexes prewarmed are loaded into it first): Lance's caches admit a new "
        "entry only when it is read more often than the one it would evict, so under steady "
        "writes the entries of past versions keep the new ones out (`bench/README.md`, Soak); "
        "0 never",
        minimum=0,
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

    def check(self) -> None:
        if self.port > 65535:
            raise ConfigurationError(f"port must be between 0 and 65535, got {self.port}")
        if self.root_path and (not self.root_path.startswith("/") or self.root_path.endswith("/")):
            raise ConfigurationError(
                "root_path must start with '/' and not end with '/', e.g. /lance")
        if self.readiness_timeout <= 0:
            raise ConfigurationError("setting 'readiness_timeout' must be positive")
