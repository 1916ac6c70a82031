"""pylance's native `DirectoryNamespace` as the `dir` backend calls it: an operation as it is
(`as_is`) or with its errors given the spec's codes (`call`), and the native lookups the
backend builds on: a table's native entry (`describe`) and whether the native lookup finds a
table (`finds`). The root's manifest read directly, for what the native lookup misses, is
`backends.directory.root_manifest`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lance.namespace import DirectoryNamespace
from lance_namespace import DescribeTableResponse, TableExistsRequest, TableNotFoundError

from backends.core.names import joined_id
from backends.directory.layout import as_lance_opens, storable_id
from backends.tables.errors import translate_native
from backends.tables.lifecycle import caller

if TYPE_CHECKING:
    from lance import Session


class Pylance:
    """One native `DirectoryNamespace` over `root` (a storage root), built from its native
    `properties`, opening tables with a Lance `session` when given one."""

    def __init__(self, properties: dict[str, str], root: str,
                 session: Session | None = None) -> None:
        self._properties, self._root = properties, root
        extra = {} if session is None else {"session": session}
        self.native = DirectoryNamespace(**extra, **properties)

    def with_session(self, session: Session) -> Pylance:
        """The same namespace opening its tables (queries among them) with `session`."""
        return Pylance(self._properties, self._root, session)

    def as_is(self, name: str, *arguments: Any) -> Any:
        """The native operation `name` as it is."""
        return getattr(self.native, name)(*arguments)

    def call(self, name: str, *arguments: Any) -> Any:
        """The native operation `name`, its errors given the spec's codes (a name too long
        for the file system is bad input, not an internal error)."""
        try:
            return self.as_is(name, *arguments)
        except BaseException as error:  # a native panic is a BaseException
            translated = translate_native(error, self._root)
            if translated is error:
                raise
            raise translated from error

    def describe(self, request: Any) -> DescribeTableResponse:
        """The table's native entry, its location as Lance opens it."""
        if not storable_id(list(request.id or [])):
            # No such table can be stored; the native lookup would fail walking for it.
            raise TableNotFoundError(f"table {joined_id(request.id)[:40]}... not found")
        described = self.call("describe_table", request)
        described.location = as_lance_opens(self._root, described.location)
        return described

    def finds(self, request: Any) -> bool:
        """Whether the native lookup finds the table of `request`."""
        try:
            self.call("table_exists", TableExistsRequest(id=request.id, **caller(request)))
        except TableNotFoundError:
            return False
        return True
