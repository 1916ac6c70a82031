"""The `dir` backend: a catalog kept by pylance's `DirectoryNamespace` in a storage root.

`backend` (`DirectoryBackend`, what the server serves as `dir`; `native`, the native operations
it serves as they are), `settings` (its properties),
`layout` (where its tables lie, and renaming a root table), `orphans` (the start-up sweep of a
local root).
"""

from backends.directory.backend import DirectoryBackend

__all__ = ["DirectoryBackend"]
