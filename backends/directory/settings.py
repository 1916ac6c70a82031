"""The `dir` backend's settings: what it reads itself, and pylance's `DirectoryNamespace`
switches, checked here because the native layer takes any text (`manifest_enabled=maybe`
would silently mean false)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from lance_namespace import InvalidInputError

from backends.core.locations import local_directory, storage_root
from backends.core.settings import (
    BackendSettings,
    ConfigurationError,
    root_setting,
    setting,
    storage_settings,
)

DEFAULT_ROOT = "./lance-data"


@dataclass(frozen=True, kw_only=True)
class DirectorySettings(BackendSettings):
    # The native credential vending keys (credential_vendor.*) are issue-18 territory: passed
    # on, documented with vending.
    passthrough_keys: ClassVar[frozenset[str]] = frozenset({"credential_vendor."})

    root: str = root_setting(
        DEFAULT_ROOT, "The directory of the tables: a path or a URI such as `s3://bucket/prefix`."
    )
    storage: Mapping[str, str] = storage_settings()
    manifest_enabled: bool | None = setting(
        "manifest_enabled", None, "Track tables and namespaces in the `__manifest` table "
        "(pylance's default: true). Nested namespaces need it."
    )
    dir_listing_enabled: bool | None = setting(
        "dir_listing_enabled", None, "Also find root tables by listing the directory "
        "(pylance's default: true)."
    )
    inline_optimization_enabled: bool | None = setting(
        "inline_optimization_enabled", None, "Compact the manifest table as it is written."
    )
    table_version_tracking_enabled: bool | None = setting(
        "table_version_tracking_enabled", None, "Track table versions in the manifest."
    )
    rename_recovery_after: float = setting(
        "rename_recovery_after", 60.0, "A root table's rename cut off half-way (a kill) is "
        "finished by the first request served once its intent is this old: far longer than "
        "any rename takes, so a rename under way in another replica is never touched.",
        unit="seconds", minimum=0)

    def local_root(self) -> Path | None:
        """The root's directory when it is on the local file system; None on object storage."""
        try:
            return local_directory(self.root)
        except InvalidInputError as error:
            raise ConfigurationError(f"property 'root' {self.root!r}: {error}") from None

    def native_properties(self, properties: Mapping[str, str]) -> dict[str, str]:
        """The properties for `DirectoryNamespace`, with the switches spelled as it parses."""
        native = {key: str(value) for key, value in properties.items()}
        native["root"] = storage_root(self.root)  # answers locations clients can open
        for declared_field, declared in self.declared():
            value = getattr(self, declared_field.name)
            if isinstance(value, bool):
                native[declared.key] = "true" if value else "false"
        return native
