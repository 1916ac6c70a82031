"""The `dir` backend: a catalog kept by pylance's `DirectoryNamespace` in a storage root.

`backend` (`DirectoryBackend`, what the server serves as `dir`: it holds a native
`DirectoryNamespace` and delegates a named list of operations to it), `settings` (its
properties), `layout` (where its tables lie, and renaming a root table), `orphans` (the
start-up sweep of a local root), `stamps` (the change stamps of a local root, which the
server's metadata cache validates its hits with).
"""

from backends.directory.backend import DirectoryBackend

__all__ = ["DirectoryBackend"]
