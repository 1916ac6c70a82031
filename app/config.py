"""Where the server's settings (`app.settings.Settings`) come from: their defaults, then a
config file, then environment variables, then the command line; and the values built from them
once (the request bounds, the Lance session, the external locations, the access policy, the
web origins allowed)."""

from __future__ import annotations

import json
import os
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lance
import yaml
from lance_namespace import LanceNamespaceError

from app.settings import Settings
from backends import IMPLS, load_namespace, resolve_impl
from backends.core.access import AccessPolicy
from backends.core.bounds import RequestBounds
from backends.core.external import ExternalLocation, parse_external_locations
from backends.core.names import check_name
from backends.core.settings import ConfigurationError, is_mapping
from backends.federation import (
    FederatedNamespace,
    externals_by_catalog,
    refuse_nested_roots,
)
from backends.vending import CredentialVendor, check_vending, credential_vendor
from backends.vending.catalogs import CatalogVendors

ENV_PREFIX = "LANCE_ADAPTER_"
ENV_PROPERTY_PREFIX = "LANCE_ADAPTER_PROP_"


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        values = yaml.safe_load(path.read_text())
    except OSError as error:
        raise ConfigurationError(f"cannot read config file {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ConfigurationError(f"config file {path} is not valid YAML/JSON: {error}") from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigurationError(f"config file {path} must hold a mapping")
    return values


def environment_values(environ: Mapping[str, str]) -> dict[str, Any]:
    """LANCE_ADAPTER_<SETTING> (a JSON object for a mapping: LANCE_ADAPTER_PROPERTIES,
    LANCE_ADAPTER_ACCESS, ...) and LANCE_ADAPTER_PROP_<KEY>.

    In LANCE_ADAPTER_PROP_<KEY>, KEY is lower-cased and `__` stands for `.`:
    LANCE_ADAPTER_PROP_STORAGE__REGION=eu-west-1 sets `storage.region`. An empty one sets
    nothing: it clears a default of the environment (the image's LANCE_ADAPTER_PROP_ROOT
    where `catalogs` replace the one backend).
    """
    values: dict[str, Any] = {}
    for name in _SETTING_NAMES:
        variable = ENV_PREFIX + name.upper()
        if variable not in environ:
            continue
        values[name] = _json_object(variable, environ[variable]) if name in _MAPPINGS else (
            environ[variable])
    properties = {
        name[len(ENV_PROPERTY_PREFIX):].lower().replace("__", "."): value
        for name, value in environ.items() if name.startswith(ENV_PROPERTY_PREFIX) and value
    }
    if properties:
        values["properties"] = {**values.get("properties", {}), **properties}
    return values


def _json_object(variable: str, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise ConfigurationError(f"{variable} must be a JSON object")
    return value


_SETTING_NAMES = tuple(declared.key for _, declared in Settings.declared())
_MAPPINGS = frozenset(
    name for name, hint in typing.get_type_hints(Settings).items() if is_mapping(hint))


def load_settings(
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """The settings of the layers merged, a later one winning (a mapping merged key by key),
    checked once; ConfigurationError names the first bad one."""
    merged: dict[str, Any] = {}
    layers = [read_config_file(config_file) if config_file is not None else {},
              environment_values(os.environ if environ is None else environ),
              {k: v for k, v in (overrides or {}).items() if v is not None}]
    for layer in layers:
        for name, value in layer.items():
            if name in _MAPPINGS and isinstance(value, Mapping) and isinstance(
                    merged.get(name), Mapping):
                value = {**merged[name], **value}
            merged[name] = value
    settings = Settings.from_properties(merged)
    allowed_origin_list(settings)
    access_policy(settings)
    return settings


def request_bounds(settings: Settings) -> RequestBounds:
    """What one request may make the backend compute, as the guard checks it."""
    return RequestBounds(settings.max_expression_bytes, settings.max_projection_columns,
                         settings.max_expression_expansion)


def lance_session(settings: Settings) -> lance.Session:
    """The Lance session (index and metadata caches) of one worker process."""
    return lance.Session(index_cache_size_bytes=settings.lance_index_cache_bytes,
                         metadata_cache_size_bytes=settings.lance_metadata_cache_bytes)


def served_backend(settings: Settings, session: lance.Session | None = None) -> Any:
    """The backend the server serves: `impl` with its `properties` behind the guard, or with
    `catalogs`, each catalog so, under a top-level namespace of its name
    (`backends.federation`)."""
    bounds, external = request_bounds(settings), external_locations(settings)
    if not settings.catalogs:
        return load_namespace(settings.impl, settings.properties, bounds, external, session)
    if settings.properties:
        raise ConfigurationError("set either 'properties' (one backend) or 'catalogs' "
                                 "(several), not both")
    if settings.lancedb_root_database in settings.catalogs:
        raise ConfigurationError(
            f"setting 'catalogs': catalog {settings.lancedb_root_database!r} has the name of "
            "the LanceDB root database (`lancedb_root_database`), which names the root: "
            "rename the catalog or set lancedb_root_database to another name")
    catalogs, impls = {}, {}
    externals = externals_by_catalog(list(settings.catalogs), external)
    for name, configured in settings.catalogs.items():
        impl, properties = catalog_parts(configured)
        impls[name] = impl
        _check_catalog(name, impl, properties)
        try:
            catalogs[name] = load_namespace(impl, properties, bounds, externals[name], session,
                                            name)
        except ConfigurationError as error:  # which of the catalogs, as the file names it
            raise _in_catalog(name, error) from None
    if not settings.catalogs_nested_roots:
        refuse_nested_roots({name: [catalog.storage_root(),
                                    *(entry.prefix.uri for entry in externals[name])]
                             for name, catalog in catalogs.items()})
    # A catalog's probe ends in time for `/readyz` to answer within its own bound.
    return FederatedNamespace(catalogs, impls, settings.readiness_timeout * 0.8)


def served_vendor(settings: Settings, namespace: Any) -> CredentialVendor | CatalogVendors | None:
    """The credential vending `vending.*` configures: the backend's, or each catalog's own
    (`backends.vending.catalogs`); None when nothing vends."""
    if not settings.catalogs:
        return credential_vendor(settings.properties, namespace)
    vendors = {}
    for name, configured in settings.catalogs.items():
        vendor = credential_vendor(catalog_parts(configured)[1], namespace.catalogs[name])
        if vendor is not None:
            vendors[name] = vendor
    return CatalogVendors(vendors) if vendors else None


def backend_properties(settings: Settings) -> list[Mapping[str, str]]:
    """The properties of every backend served: `properties`, or each catalog's (whose
    credentials no log line shows)."""
    if not settings.catalogs:
        return [settings.properties]
    return [dict(catalog) for catalog in settings.catalogs.values()]


def catalog_parts(configured: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """A configured catalog's `impl` and its backend properties (the rest)."""
    properties = dict(configured)
    return properties.pop("impl", ""), properties


def _check_catalog(name: str, impl: str, properties: Mapping[str, str]) -> None:
    try:
        check_name(name, "catalog name")
    except LanceNamespaceError as error:
        raise ConfigurationError(f"setting 'catalogs': {error}") from None
    if impl not in IMPLS:
        raise ConfigurationError(f"setting 'catalogs': catalog {name!r} needs an 'impl' of "
                                 f"{', '.join(IMPLS)}, got {impl!r}")
    try:
        check_vending(properties)
        start_check = getattr(resolve_impl(impl), "check_properties_at_start", None)
        if start_check is not None:
            start_check(properties)
    except ConfigurationError as error:
        raise _in_catalog(name, error) from None


def _in_catalog(name: str, error: ConfigurationError) -> ConfigurationError:
    """A catalog's configuration error, saying which catalog it is."""
    return ConfigurationError(f"setting 'catalogs': catalog {name!r}: {error}")


def external_locations(settings: Settings) -> tuple[ExternalLocation, ...]:
    """The parsed `external_locations`; a bad entry stops the start with one sentence."""
    try:
        return parse_external_locations(
            settings.external_locations, settings.external_locations_purge)
    except ValueError as error:
        raise ConfigurationError(f"setting 'external_locations': {error}") from None


def access_policy(settings: Settings) -> AccessPolicy | None:
    """What each caller may do, judged by the server with `auth_mode: token`; None when the
    server does not judge (auth off: no identities to tell apart; forward: the catalog does)."""
    judged = settings.auth_mode in ("token", "oidc")
    if settings.access and not judged:
        raise ConfigurationError(
            "setting 'access' names identities, which need auth_mode 'token' or 'oidc'")
    if settings.access_groups and settings.auth_mode != "oidc":
        raise ConfigurationError("setting 'access_groups' names groups of OIDC tokens, which "
                                 "need auth_mode 'oidc'")
    default = settings.access_default or ("none" if settings.auth_mode == "oidc" else "admin")
    try:
        policy = AccessPolicy.parse(default, settings.access, settings.access_groups)
    except (ValueError, LanceNamespaceError) as error:
        raise ConfigurationError(f"setting 'access': {error}") from None
    return policy if judged else None


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
