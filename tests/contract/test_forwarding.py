"""Forwarding the caller's bearer token to the catalog over HTTP, on the backends that forward
(`Conventions.forwards_tokens`, served by `ContractBackend.forwarding`): the catalog gets the
caller's token from a backend that forwards and the configured one from a backend that does not,
for namespace operations and for the table operations every backend inherits."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from lance_namespace import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    CreateTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    UnauthenticatedError,
)

from tests.support.contract_backends import (
    FORWARDING_BACKENDS,
    STATIC_TOKEN,
    ContractBackend,
    Forwarding,
)
from tests.support.lance_data import arrow_stream, sample_table
from tests.support.official_client import OfficialClient

pytestmark = pytest.mark.parametrize("backend", FORWARDING_BACKENDS, indirect=True)

CALLER_TOKEN = "caller-token"
REFUSED = "missing or invalid token"  # the catalog's answer to a token it does not take


@pytest.fixture
def forwarding(backend: ContractBackend) -> Iterator[Forwarding]:
    """The backend's forwarding adapters, their catalog checking no token before and after."""
    assert backend.forwarding is not None, f"{backend.name} forwards tokens"
    backend.forwarding.control.required_token = None
    yield backend.forwarding
    backend.forwarding.control.required_token = None


def fresh_namespace(backend: ContractBackend, forwarding: Forwarding) -> list[str]:
    """A new namespace in the forwarding adapters' catalog."""
    token = uuid.uuid4().hex[:10]
    forwarding.prepare(token)
    namespace = backend.conventions.namespace(token, "forwarded")
    client = OfficialClient(forwarding.forwarding_url, CALLER_TOKEN)
    client.create_namespace(CreateNamespaceRequest(id=namespace))
    return namespace


def last_authorization(forwarding: Forwarding) -> str | None:
    return forwarding.control.log[-1].authorization


def test_the_static_token_or_the_forwarded_callers_token_reaches_the_catalog(
    backend: ContractBackend, forwarding: Forwarding
) -> None:
    namespace = fresh_namespace(backend, forwarding)
    describe = DescribeNamespaceRequest(id=namespace)
    forwards = OfficialClient(forwarding.forwarding_url, CALLER_TOKEN)
    static = OfficialClient(forwarding.static_url, CALLER_TOKEN)

    forwarding.control.required_token = CALLER_TOKEN
    forwards.describe_namespace(describe)
    assert last_authorization(forwarding) == f"Bearer {CALLER_TOKEN}"
    with pytest.raises(UnauthenticatedError, match=REFUSED):  # the caller's token is not sent
        static.describe_namespace(describe)
    assert last_authorization(forwarding) == f"Bearer {STATIC_TOKEN}"

    forwarding.control.required_token = STATIC_TOKEN
    static.describe_namespace(describe)
    assert last_authorization(forwarding) == f"Bearer {STATIC_TOKEN}"
    with pytest.raises(UnauthenticatedError, match=REFUSED):  # the static token is not sent
        forwards.describe_namespace(describe)
    assert last_authorization(forwarding) == f"Bearer {CALLER_TOKEN}"


def test_forwarding_covers_the_inherited_table_operations(
    backend: ContractBackend, forwarding: Forwarding
) -> None:
    table = [*fresh_namespace(backend, forwarding), "t"]
    forwards = OfficialClient(forwarding.forwarding_url, CALLER_TOKEN)
    created = forwards.create_table(CreateTableRequest(id=table), arrow_stream(sample_table(3)))

    forwarding.control.required_token = CALLER_TOKEN
    described = forwards.describe_table(DescribeTableRequest(id=table))
    assert described.location == created.location
    assert last_authorization(forwarding) == f"Bearer {CALLER_TOKEN}"
    assert forwards.count_table_rows(CountTableRowsRequest(id=table)).count == 3
    assert last_authorization(forwarding) == f"Bearer {CALLER_TOKEN}"
    static = OfficialClient(forwarding.static_url, CALLER_TOKEN)
    with pytest.raises(UnauthenticatedError, match=REFUSED):
        static.count_table_rows(CountTableRowsRequest(id=table))
