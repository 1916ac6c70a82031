"""A fixture backend for the service tests (health, auth, gateway); this module holds no test.

`RecordingNamespace` records the identity each call receives and can be switched to fail
(a spec error, or an unexpected error whose message holds a secret) or to hang. A table
named `slow` takes SLOW_SECONDS to describe. Instances are kept by their `name` property so
a test can reach the instance the adapter built.
"""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

from lance_namespace import (
    DescribeTableRequest,
    DescribeTableResponse,
    LanceNamespace,
    ListNamespacesRequest,
    ListNamespacesResponse,
    ListTablesRequest,
    ListTablesResponse,
    ServiceUnavailableError,
)

SLOW_SECONDS = 2.0
LEAKY_SECRET = "leaky-backend-secret-7f3a"


class RecordingNamespace(LanceNamespace):
    instances: ClassVar[dict[str, RecordingNamespace]] = {}

    def __init__(self, name: str = "default", **_: str) -> None:
        self.name = name
        self.mode = "ok"
        self.identities: list[dict[str, Any] | None] = []
        self._lock = threading.Lock()
        RecordingNamespace.instances[name] = self

    def namespace_id(self) -> str:
        return f"recording:{self.name}"

    def _behave(self, request: Any) -> None:
        identity = request.identity.model_dump(exclude_none=True) if request.identity else None
        with self._lock:
            self.identities.append(identity)
        if self.mode == "down":
            raise ServiceUnavailableError("the backend is down")
        if self.mode == "broken":
            raise RuntimeError(f"connect failed: password={LEAKY_SECRET} Bearer {LEAKY_SECRET}")
        if self.mode == "hang":
            time.sleep(5)

    def list_namespaces(self, request: ListNamespacesRequest) -> ListNamespacesResponse:
        self._behave(request)
        return ListNamespacesResponse(namespaces=[])

    def list_tables(self, request: ListTablesRequest) -> ListTablesResponse:
        self._behave(request)
        return ListTablesResponse(tables=["t"])

    def describe_table(self, request: DescribeTableRequest) -> DescribeTableResponse:
        self._behave(request)
        if request.id and request.id[-1] == "slow":
            time.sleep(SLOW_SECONDS)
        return DescribeTableResponse(location=f"memory://{'/'.join(request.id or [])}")
