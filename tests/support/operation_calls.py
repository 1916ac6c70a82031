"""One call of any operation of rest.yaml at either of its routes, with a bearer token: what
the tests that go over every operation (access, audit) send."""

from __future__ import annotations

import httpx

from app.spec import BodyKind, Operation
from tests.support.lance_data import arrow_stream, sample_table

ARROW = {"content-type": "application/vnd.apache.arrow.stream"}


def send_operation(url: str, operation: Operation, table_id: list[str], token: str,
                   by_id: bool) -> httpx.Response:
    """One call of `operation` on `table_id` with `token`, at its /v1/ route or its
    POST /<OperationId> route; the body is well-formed, not necessarily complete."""
    headers = {"authorization": f"Bearer {token}"}
    joined = "$".join(table_id)
    data = arrow_stream(sample_table(2, start=100))
    if by_id or operation.path is None:
        if operation.body is BodyKind.ARROW:
            return httpx.post(f"{url}/{operation.operation_id}", params={"id": joined},
                              content=data, headers={**headers, **ARROW}, timeout=60)
        body = {"id": table_id} if operation.has_id else {}  # no field it does not take
        return httpx.post(f"{url}/{operation.operation_id}", json=body,
                          headers=headers, timeout=60)
    path = operation.path.replace("{id}", joined).replace("{index_name}", "idx")
    if operation.body is BodyKind.ARROW:
        return httpx.post(f"{url}{path}", content=data, headers={**headers, **ARROW},
                          timeout=60)
    if operation.method == "GET":
        return httpx.get(f"{url}{path}", headers=headers, timeout=60)
    return httpx.post(f"{url}{path}", json={}, headers=headers, timeout=60)
