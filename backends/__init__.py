"""Lance namespace backends and the registry that loads one by name.

Every backend implements `lance_namespace.LanceNamespace`, so it works directly in
Python as well as behind the REST adapter. `load_namespace` picks one by alias or by
`module.Class` path. `dir` is `backends.directory.DirectoryBackend`; the catalog backends
are `backends.base.MetadataNamespace` subclasses, used as they are; a plug-in that is a plain
`LanceNamespace` gets the generic table operations through `backends.plugin.PluginNamespace`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from lance_namespace import LanceNamespace, LanceNamespaceError

from backends.properties import ConfigurationError

IMPLS: dict[str, str] = {
    "dir": "backends.directory.DirectoryBackend",
    "hive2": "backends.hive.Hive2Namespace",
    "hive3": "backends.hive.Hive3Namespace",
    "glue": "backends.glue.GlueNamespace",
    "unity": "backends.unity.UnityNamespace",
    "iceberg": "backends.iceberg.IcebergNamespace",
}

DEFAULT_PROPERTIES: dict[str, dict[str, str]] = {
    "dir": {"root": "./lance-data"},
}


def resolve_impl(impl: str) -> type[LanceNamespace]:
    """The class behind an alias or a `module.Class` path."""
    class_path = IMPLS.get(impl, impl)
    module_name, _, class_name = class_path.rpartition(".")
    if not module_name:
        known = ", ".join(sorted(IMPLS))
        raise ConfigurationError(f"unknown impl '{impl}' (use one of {known} or module.Class)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigurationError(f"cannot import impl '{impl}': {error}") from error
    namespace_class = getattr(module, class_name, None)
    if not (isinstance(namespace_class, type) and issubclass(namespace_class, LanceNamespace)):
        raise ConfigurationError(f"impl '{impl}' is not a lance_namespace.LanceNamespace class")
    return namespace_class


def load_namespace(impl: str, properties: Mapping[str, str] | None = None) -> LanceNamespace:
    """Build the backend `impl` with `properties`, with every generic table operation."""
    from backends.containment import contain
    from backends.plugin import with_table_operations
    from backends.tables.errors import without_source_location

    merged = {**DEFAULT_PROPERTIES.get(impl, {}), **(properties or {})}
    namespace_class = resolve_impl(impl)
    try:
        namespace = namespace_class(**merged)
    except ConfigurationError:
        raise
    except (TypeError, ValueError, LanceNamespaceError) as error:
        raise ConfigurationError(f"cannot configure impl '{impl}': {error}") from error
    except OSError as error:  # e.g. an unreachable object-store root
        reason = without_source_location(str(error))
        raise ConfigurationError(f"cannot open the storage of impl '{impl}': {reason}") from error
    loaded = with_table_operations(namespace)
    root_of = getattr(loaded, "storage_root", None)
    return contain(loaded, root_of() if root_of else None)


__all__ = ["IMPLS", "ConfigurationError", "load_namespace", "resolve_impl"]
