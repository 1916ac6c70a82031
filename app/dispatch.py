"""Calling the backend: one official request model in, one response model out."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lance_namespace import LanceNamespace, ServiceUnavailableError, UnsupportedOperationError

from app.cache import MISS, MetadataCache
from app.deadlines import Deadlines
from app.dialect import SPEC, Dialect
from app.spec import Operation
from app.streamed_bodies import ArrowBodyStream
from backends.core.access import Grants
from backends.core.operations import traits_of


def is_read_only(operation: Operation) -> bool:
    """An operation that changes nothing: when one outlasts the backend timeout the caller
    gets 17 at once and may retry safely. A write is always awaited, so its answer is never
    a guess."""
    return traits_of(operation.backend_id).read_only


class Dispatcher:
    """Runs blocking backend calls on a bounded thread pool, off the event loop.

    A plain `ThreadPoolExecutor` (its size is the bound) costs the event loop about half
    of what anyio's worker threads do per call; the call runs in a copy of the request's
    context, so context variables (e.g. the request id in log lines) reach the backend.
    Answers the metadata cache holds are returned at once, without a thread hand-off, and
    are not backend calls: `observe(operation_id, ok, seconds)` sees only real ones.
    """

    def __init__(
        self,
        namespace: LanceNamespace,
        max_concurrency: int,
        backend_timeout: float = 0,
        aliases: dict[str, str] | None = None,
        cache: MetadataCache | None = None,
        observe: Callable[[str, bool, float], None] | None = None,
        observe_catalog: Callable[[str, str, bool], None] = lambda *_: None,
        deadlines: Deadlines | None = None,
    ) -> None:
        self.namespace = namespace
        self.cache = cache
        self._observe = observe
        # A server of several catalogs names the catalog of each id (`catalog_of`): each
        # operation is counted by catalog, `observe_catalog(catalog, operation_id, ok)`.
        self._catalog_of = getattr(namespace, "catalog_of", None)
        self._observe_catalog = observe_catalog
        # The spec's other names of operations (GetTable -> DescribeTable), for ListOperations.
        self._aliases = aliases or {}
        self._pool = ThreadPoolExecutor(max_concurrency, thread_name_prefix="backend")
        # Calls reading a body as it arrives wait on their client: they get threads of their
        # own, so slow senders (up to `body_read_timeout` each) never hold the others' up.
        self._streaming = ThreadPoolExecutor(max(1, max_concurrency // 4),
                                             thread_name_prefix="backend-stream")
        self._backend_timeout = backend_timeout
        self._deadlines = deadlines or Deadlines()

    async def call(
        self, operation: Operation, fields: dict[str, Any], data: Any,
        dialect: Dialect = SPEC, grants: Grants | None = None,
    ) -> Any:
        """The operation's answer, the backend's tables opened for a caller with `grants`
        (None: a caller the server does not judge): a shallow clone reads its source only
        for a caller who may read it, so a cached answer is one given under the same grants."""
        catalog = None if self._catalog_of is None else self._catalog_of(fields.get("id"))
        if catalog is None:
            return await self._call(operation, fields, data, dialect, grants)
        ok = False
        try:
            answer = await self._call(operation, fields, data, dialect, grants)
            ok = True
            return answer
        finally:
            self._observe_catalog(catalog, operation.operation_id, ok)

    async def _call(
        self, operation: Operation, fields: dict[str, Any], data: Any, dialect: Dialect,
        grants: Grants | None,
    ) -> Any:
        key = None if self.cache is None else self.cache.key(
            operation.backend_id, fields, "" if grants is None else str(grants))
        if key is not None:
            answer = self.cache.lookup(key, operation.backend_id)
            if answer is not MISS:
                return answer
        namespace = (self.namespace if grants is None
                     else self.namespace.reading_as(grants.reader()))
        method, arguments = self._bind(namespace, operation, fields, data, dialect)
        if key is not None:
            pending_read = self.cache.begin(key, operation.backend_id, fields)
            answer = await self._read(operation.operation_id, method, arguments)
            self.cache.store(pending_read, answer)
            return answer
        if not is_read_only(operation):
            return await self._write(operation, fields, method, arguments)
        answer = await self._read(operation.operation_id, method, arguments)
        return self._with_aliases(answer) if operation.backend_id == "ListOperations" else answer

    async def resolve_source(
        self, operation: Operation, fields: dict[str, Any], identity: Any = None
    ) -> None:
        """For an operation that reads a table named by its location (CloneTable): that
        table's id in `source_id`, from the backend's ownership records, so that access is
        checked there too. A `source_id` the client gave is kept (the backend checks that
        it is the location's)."""
        location = fields.get("source_location")
        if (not traits_of(operation.backend_id).source_by_location
                or fields.get("source_id") is not None or not location):
            return
        table_at = getattr(self.namespace, "table_at", None)
        if table_at is None:
            raise UnsupportedOperationError(
                f"{operation.operation_id} is not supported by the "
                f"{type(self.namespace).__name__} backend")
        request = operation.request_model.model_validate({**fields, "identity": identity})
        fields["source_id"] = await self._read(
            operation.operation_id, functools.partial(table_at, str(location)), (request,))

    @staticmethod
    def _bind(
        namespace: Any, operation: Operation, fields: dict[str, Any], data: Any,
        dialect: Dialect,
    ) -> tuple[Any, tuple[Any, ...]]:
        """The method of `namespace` (the one the client's `dialect` means, else the one that
        streams its answer, where the backend has it) and its arguments: the request model
        (and the data)."""
        request = operation.request_model.model_validate(fields)
        streamed = traits_of(operation.backend_id).streamed_method
        method = (dialect.backend_call(namespace, operation.backend_id)
                  or (streamed and getattr(namespace, streamed, None))
                  or getattr(namespace, operation.backend_method, None))
        if method is None:
            raise UnsupportedOperationError(
                f"{operation.operation_id} is not supported by the "
                f"{type(namespace).__name__} backend"
            )
        return method, (request, data) if operation.takes_data else (request,)

    async def run(self, label: str, call: Callable[[], Any]) -> Any:
        """A blocking call of the backend's that is not an operation (credential vending):
        on the same bounded pool, within the backend timeout, observed as `label`."""
        return await self._read(label, call, ())

    def _submit(
        self, label: str, method: Any, arguments: tuple[Any, ...]
    ) -> asyncio.Future[Any]:
        context = contextvars.copy_context()
        streams = any(isinstance(argument, ArrowBodyStream) for argument in arguments[1:])
        pending = asyncio.get_running_loop().run_in_executor(
            self._streaming if streams else self._pool,
            functools.partial(context.run, method, *arguments)
        )
        if self._observe is not None:
            started, observe = time.perf_counter(), self._observe
            # Timed to the call's end, also when its caller stopped waiting (a timeout).
            pending.add_done_callback(lambda done: observe(
                label, not done.cancelled() and done.exception() is None,
                time.perf_counter() - started))
        return pending

    async def _read(self, label: str, method: Any, arguments: tuple[Any, ...]) -> Any:
        pending = self._submit(label, method, arguments)
        deadline = self._deadlines.within(self._backend_timeout)
        try:
            with deadline:
                return await pending
        except TimeoutError as error:
            if not deadline.expired:  # the backend's own: a catalog or storage call timed out
                raise ServiceUnavailableError(
                    f"the backend timed out answering {label}: {error}") from None
            raise ServiceUnavailableError(
                f"the backend did not answer {label} within "
                f"{self._backend_timeout:g} s"
            ) from None

    async def _write(
        self, operation: Operation, fields: dict[str, Any], method: Any,
        arguments: tuple[Any, ...],
    ) -> Any:
        pending = self._submit(operation.operation_id, method, arguments)
        if self.cache is None:
            return await pending
        # Invalidate when the backend call ends, even if this request was cancelled first;
        # the callback runs before the awaiting request resumes and answers.
        cache, operation_id = self.cache, operation.backend_id
        pending.add_done_callback(lambda _: cache.invalidate(operation_id, fields))
        return await pending

    def _with_aliases(self, response: Any) -> Any:
        supported = set(response.operations)
        supported |= {alias for alias, target in self._aliases.items() if target in supported}
        response.operations = sorted(supported)
        return response
