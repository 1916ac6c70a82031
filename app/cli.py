"""`lance-adapter`: `serve` starts the REST server on one configured backend, `config`
validates a configuration and prints it with its secrets masked, `maintain` runs one table
maintenance pass (`backends.maintenance`, e.g. from a scheduled job), `record-owners` writes
the ownership records of tables made before records (`backends.owner_backfill`), `check URL`
runs the conformance kit (`app.conformance`) against any Lance REST namespace server."""

from __future__ import annotations

import argparse
import errno
import json
import logging
import logging.config
import socket
import sys
import typing
from collections.abc import Mapping
from dataclasses import asdict
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uvicorn
import yaml
from lance_namespace import LanceNamespace, LanceNamespaceError

from app.auth import check_forwarding
from app.config import catalog_parts, lance_session, load_settings, served_backend
from app.connections import uvicorn_options
from app.credentials import load_rules
from app.maintenance import maintains, maintenance_policy
from app.malloc_arenas import limit_malloc_arenas
from app.observability import log_config
from app.server import create_app
from app.settings import Settings
from app.tls import check_tls, tls_on, uvicorn_tls_options
from app.workers import prepare_worker_environment
from backends import ConfigurationError, resolve_impl
from backends.core.secrets import is_credential
from backends.maintenance import maintain_all
from backends.owner_backfill import DONE
from backends.owner_backfill import record_owners as backfill
from backends.vending import check_vending

if TYPE_CHECKING:
    from backends.guard import GuardedNamespace

MASK = "****"  # what `config` prints for a secret


def _property(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lance-adapter", description=__doc__)
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {version('lance-namespace-adapter')}")
    commands = parser.add_subparsers(dest="command", required=True)
    _settings_options(commands.add_parser(
        "serve", help="serve the Lance REST namespace protocol"))
    _settings_options(commands.add_parser(
        "config", help="validate the settings and print them, secrets masked"))
    _settings_options(commands.add_parser(
        "maintain", help="compact, re-index and clean up every table once, with the "
        "maintenance settings; one JSON line a table"))
    _settings_options(commands.add_parser(
        "record-owners", help="record the owner of every table made before ownership "
        "records that one entry alone names; one JSON line a table"))
    check = commands.add_parser("check", help="run the conformance kit against a Lance REST "
                                "namespace server")
    check.add_argument("url", help="the server's base URL, e.g. http://127.0.0.1:2333")
    check.add_argument("--under", default="", help="the namespace the kit makes its own "
                       "namespace in, joined by $ (e.g. a Unity catalog); default the root")
    return parser


def _settings_options(serve: argparse.ArgumentParser) -> None:
    """A flag for each setting that declares one (`app.settings`), and --prop and --config."""
    serve.add_argument("--config", type=Path, help="YAML or JSON settings file")
    hints = typing.get_type_hints(Settings)
    for _, declared in Settings.declared():
        if not declared.cli:
            continue
        if declared.key == "properties":
            serve.add_argument("--prop", action="append", type=_property, default=[],
                               metavar="KEY=VALUE", help=declared.cli)
            continue
        serve.add_argument("--" + declared.key.replace("_", "-"), help=declared.cli,
                           type=hints[declared.key])


# The connections the kernel queues before the server takes them (uvicorn's own default).
LISTEN_BACKLOG = 2048


def _listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound once here and handed to uvicorn: a taken port is one
    clear sentence, and with `--port 0` the start-up line names the port the system chose."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as error:
        listener.close()
        reason = "is already in use" if error.errno == errno.EADDRINUSE else error.strerror
        raise ConfigurationError(f"cannot listen on {host}:{port}: {reason}") from None
    return listener


def _announce(namespace: LanceNamespace, settings: Settings, port: int) -> None:
    """One start-up line naming the backend, its root or endpoint, and the address."""
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    logging.getLogger("lance_adapter").info(
        "serving impl '%s' (%s) at %s://%s:%d%s",
        "catalogs" if settings.catalogs else settings.impl, namespace.namespace_id(),
        "https" if tls_on(settings) else "http", host, port, settings.root_path,
    )


def settings_from_arguments(arguments: argparse.Namespace) -> Settings:
    overrides = {declared.key: getattr(arguments, declared.key, None)
                 for _, declared in Settings.declared() if declared.cli}
    overrides["properties"] = dict(arguments.prop) or None
    return load_settings(arguments.config, overrides=overrides)


def served_namespace(settings: Settings) -> GuardedNamespace:
    """The backend `serve` loads: checked before workers start, and the one that serves with
    one worker, so it opens its tables with a Lance session as every worker does."""
    return served_backend(settings, lance_session(settings))


def serve(settings: Settings) -> None:
    # Logging first: what loading the backend logs (e.g. a deprecated property) is JSON too.
    logging.config.dictConfig(log_config(settings.log_level))
    limit_malloc_arenas(settings.malloc_arenas)  # the supervisor, or the one worker
    # The backend's checks before it is built and before serving (`backends.hooks`; a plain
    # plug-in class has none until `load_namespace` adapts it).
    start_check = getattr(resolve_impl(settings.impl), "check_properties_at_start", None)
    if start_check is not None:
        start_check(settings.properties)
    namespace = served_namespace(settings)
    check_forwarding(namespace, settings)  # before any worker starts
    check_vending(settings.properties)
    namespace.check_reachable_at_start()
    load_rules(settings)
    check_tls(settings)
    listener = _listen(settings.host, settings.port)
    # Listening before the line is written: a client that reads it and connects at once is
    # queued until the application answers, not refused while uvicorn starts (seconds).
    listener.listen(LISTEN_BACKLOG)
    _announce(namespace, settings, listener.getsockname()[1])
    options = {
        "fd": listener.fileno(),
        "log_level": settings.log_level,
        "log_config": log_config(settings.log_level),
        "access_log": False,
        "proxy_headers": False,
        "server_header": False,
        "timeout_keep_alive": settings.timeout_keep_alive,
        "backlog": LISTEN_BACKLOG,
        # Bounds each request head's time and size (uvicorn bounds neither with httptools).
        **uvicorn_options(settings),
        **uvicorn_tls_options(settings),
        "timeout_graceful_shutdown": settings.timeout_graceful_shutdown or None,
    }
    with listener:
        if settings.workers > 1:
            prepare_worker_environment(settings)
            # A worker imports the backend libraries before it answers the supervisor's pings:
            # give it longer than uvicorn's 5 s on a small, busy machine.
            uvicorn.run("app.workers:create_app_from_environment", factory=True,
                        workers=settings.workers, timeout_worker_healthcheck=30, **options)
        else:
            uvicorn.run(create_app(namespace, settings), **options)


def effective_settings(settings: Settings) -> dict[str, Any]:
    """`settings`, its backend's properties (each catalog's) checked as the backend reads them
    (without connecting), as a config file would hold them, with every secret masked."""
    effective = asdict(settings)
    effective["properties"] = _masked(settings.impl, settings.properties)
    effective["catalogs"] = {}
    for name, configured in settings.catalogs.items():
        impl, properties = catalog_parts(configured)
        effective["catalogs"][name] = {"impl": impl, **_masked(impl, properties)}
    if settings.auth_tokens:
        effective["auth_tokens"] = MASK
    return effective


def _masked(impl: str, properties: Mapping[str, str]) -> dict[str, str]:
    """The properties of backend `impl`, checked, their secrets masked."""
    settings_class = getattr(resolve_impl(impl), "settings_class", None)
    if settings_class is not None:
        settings_class.from_properties(properties)
    check_vending(properties)
    secret_keys = {
        declared.key for _, declared in (settings_class.declared() if settings_class else [])
        if declared.secret and not declared.is_prefix
    }
    return {key: MASK if key in secret_keys or is_credential(key) else value
            for key, value in properties.items()}


def print_config(settings: Settings) -> None:
    print(yaml.safe_dump(effective_settings(settings), sort_keys=False), end="")


def maintain(settings: Settings) -> int:
    """One maintenance pass over every table; 1 if a table failed (the others were done)."""
    logging.config.dictConfig(log_config(settings.log_level))
    namespace = served_backend(settings)
    if not maintains(namespace):
        raise ConfigurationError(f"the {settings.impl} backend cannot be maintained: it does "
                                 "not list and open its tables")
    try:
        outcomes = maintain_all(namespace, maintenance_policy(settings),
                                lambda done: print(json.dumps(asdict(done)), flush=True))
    except LanceNamespaceError as error:  # the catalog did not list its tables
        print(f"lance-adapter: maintenance could not list the tables: {error}", file=sys.stderr)
        return 1
    return 1 if any(outcome.error for outcome in outcomes) else 0


def record_owners(settings: Settings) -> int:
    """Ownership records for tables made before them; 1 if a table was left unrecorded."""
    logging.config.dictConfig(log_config(settings.log_level))
    served = served_backend(settings)
    # A server of several catalogs: each catalog's tables, each line naming its catalog.
    catalogs = getattr(served, "catalogs", None) or {"": served}
    outcomes = []
    for name, namespace in catalogs.items():
        def report(done: Any, catalog: str = name) -> None:
            print(json.dumps({**({"catalog": catalog} if catalog else {}), **asdict(done)}),
                  flush=True)

        outcomes += backfill(namespace, report)
    return 0 if all(done.outcome in DONE for done in outcomes) else 1


def main(argv: list[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    if arguments.command == "check":
        from app.conformance import run_check

        return run_check(arguments.url, arguments.under)
    try:
        settings = settings_from_arguments(arguments)
        if arguments.command == "config":
            print_config(settings)
        elif arguments.command == "maintain":
            return maintain(settings)
        elif arguments.command == "record-owners":
            return record_owners(settings)
        else:
            serve(settings)
    except ConfigurationError as error:
        print(f"lance-adapter: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
