"""The `dir` backend: a catalog kept by pylance's `DirectoryNamespace` in a storage root.

`backend` (`DirectoryBackend`, what the server serves as `dir`), `pylance` (the native
`DirectoryNamespace` as it calls it), `delegated` (the operations handed to it), `native`
(what the native operations ignore), `root_manifest` (the root's manifest read directly),
`settings` (its properties), `layout` (where its tables lie, and renaming a root table),
`renames` (renames a kill cut off), `manifest_repair`, `orphans` (the sweep of abandoned
table directories, part of maintenance), `stamps` (the change stamps of a local root, which the
server's metadata cache validates its hits with).
"""

from backends.directory.backend import DirectoryBackend

__all__ = ["DirectoryBackend"]
