"""Lance namespace backends, and their registration with `lance_namespace`'s own registry.

`register_aliases()` registers the catalog backends' aliases with
`lance_namespace.register_namespace_impl`, so any Lance program builds them by name:

    import backends, lance_namespace
    backends.register_aliases()
    ns = lance_namespace.connect("hive2", {"uri": "thrift://metastore:9083"})

(lance_namespace 0.13 discovers no entry points; importing `backends` registers nothing, and
the server needs no registration: it builds its backends by class path.) `dir` is one of
lance_namespace's native aliases, which win over registered ones, so `connect("dir", …)`
stays pylance's `DirectoryNamespace`; the server serves `dir` with
`backends.directory.DirectoryBackend`, which holds that class and adds this adapter's fixes.

`load_namespace` builds what the server serves through `lance_namespace.connect`, gives a
plain `LanceNamespace` plug-in the generic table operations (`backends.plugin`) and puts the
backend behind its one guard (`backends.guard.GuardedNamespace`: names validated, and the
location checks of `backends.containment`). The catalog backends are
`backends.base.MetadataNamespace` subclasses.

A backend's package, and the client library of its extra (`CATALOG_EXTRAS`), is imported only
when that backend is built or resolved, never by `import backends`: without the extra, building
it is one `ConfigurationError` naming the install command, and every other backend still works.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

import lance_namespace
from lance_namespace import LanceNamespace, register_namespace_impl

from backends.core.extras import GLUE, HIVE, Extra
from backends.core.messages import without_source_location
from backends.core.settings import ConfigurationError

if TYPE_CHECKING:
    from lance import Session

    from backends.core.bounds import RequestBounds
    from backends.core.external import ExternalLocation
    from backends.guard import GuardedNamespace

# The registry lines: one alias and class path per catalog backend.
CATALOG_IMPLS: dict[str, str] = {
    "hive2": "backends.hive.Hive2Namespace",
    "hive3": "backends.hive.Hive3Namespace",
    "glue": "backends.glue.GlueNamespace",
    "unity": "backends.unity.UnityNamespace",
    "iceberg": "backends.iceberg.IcebergNamespace",
}
# The extra that installs a catalog backend's client library (unity and iceberg need none).
CATALOG_EXTRAS: dict[str, Extra] = {"hive2": HIVE, "hive3": HIVE, "glue": GLUE}



def register_aliases() -> None:
    """Register each catalog backend's alias (`hive2`, `glue`, ...) with lance_namespace, so
    that `lance_namespace.connect(alias, properties)` builds it. The registry is global: a
    library registering the same alias later (lance-namespace-impls) wins there."""
    for alias, class_path in CATALOG_IMPLS.items():
        register_namespace_impl(alias, class_path)


# What the server serves as `dir` (lance_namespace's `dir` is pylance's own class).
DIRECTORY_BACKEND = "backends.directory.DirectoryBackend"
# Every alias the server serves, in the order the docs list them.
IMPLS: tuple[str, ...] = ("dir", *CATALOG_IMPLS)


def served_class_path(impl: str) -> str:
    """What the server builds for `impl`: an alias's class path, or `impl` itself."""
    if impl == "dir":
        return DIRECTORY_BACKEND
    return CATALOG_IMPLS.get(impl) or lance_namespace.NATIVE_IMPLS.get(impl) or impl


def resolve_impl(impl: str) -> type[LanceNamespace]:
    """The class the server builds for `impl`, without building it (the docs' support
    table and the image check ask for it)."""
    module_name, _, class_name = served_class_path(impl).rpartition(".")
    try:
        namespace_class = getattr(importlib.import_module(module_name), class_name, None)
    except (ImportError, ValueError) as error:
        raise _configuration_error(impl, error) from error
    if not (isinstance(namespace_class, type) and issubclass(namespace_class, LanceNamespace)):
        raise ConfigurationError(f"impl '{impl}' is not a lance_namespace.LanceNamespace class")
    return namespace_class


def _configuration_error(impl: str, cause: BaseException) -> ConfigurationError:
    """The one-line start-up error for an impl that could not be built because of `cause`."""
    if isinstance(cause, ConfigurationError):
        return cause
    if "." not in served_class_path(impl):
        known = ", ".join(IMPLS)
        return ConfigurationError(f"unknown impl '{impl}' (use one of {known} or module.Class)")
    if isinstance(cause, ImportError):
        extra = CATALOG_EXTRAS.get(impl)
        missing = extra.missing(f"the {impl} backend", cause) if extra else None
        return missing or ConfigurationError(f"cannot import impl '{impl}': {cause}")
    if isinstance(cause, OSError):  # e.g. an unreachable object-store root
        reason = without_source_location(str(cause))
        return ConfigurationError(f"cannot open the storage of impl '{impl}': {reason}")
    return ConfigurationError(f"cannot configure impl '{impl}': {cause}")


def load_namespace(
    impl: str,
    properties: Mapping[str, str] | None = None,
    bounds: RequestBounds | None = None,
    external: tuple[ExternalLocation, ...] = (),
    session: Session | None = None,
    catalog: str | None = None,
) -> GuardedNamespace:
    """Build the backend `impl` with `properties`, with every generic table operation, opening
    its tables with the Lance `session`, behind its one guard (which holds each request within
    `bounds`, and lets tables register in the `external` locations); `catalog` is its name on
    a server of several."""
    from backends.guard import GuardedNamespace
    from backends.plugin import with_table_operations

    merged = dict(properties or {})
    # The class path, not the alias: another library may register the same alias (as
    # lance-namespace-impls does for hive2, glue, ...) and must not change what is served.
    target = served_class_path(impl)
    try:
        namespace = lance_namespace.connect(target, merged)
    except ValueError as wrapped:
        cause = wrapped.__context__ or wrapped  # connect wraps every failure in a ValueError
        raise _configuration_error(impl, cause) from cause
    served = with_table_operations(namespace)
    served.use_lance_session(session)
    return GuardedNamespace(served, bounds, external, catalog)


__all__ = [
    "CATALOG_EXTRAS",
    "CATALOG_IMPLS",
    "IMPLS",
    "ConfigurationError",
    "load_namespace",
    "resolve_impl",
]
