"""`backends/rest_catalog/client.py`, the HTTP client of the REST catalog backends (unity,
iceberg), tested once for all of them: status mapping, error replies, retries, stalls, bearer and
OAuth2 tokens, and forwarding the caller's token.

It runs against a bare REST catalog stand-in (`tests/support/rest_catalog_stand_in.py`: faults,
stalls and token checks on real HTTP); how each backend wires its properties into the client is
tested in its own file (`test_unity.py`, `test_iceberg.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from lance_namespace import (
    InternalError,
    NamespaceNotFoundError,
    PermissionDeniedError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    ThrottlingError,
    UnauthenticatedError,
)

from backends.rest_catalog import (
    OAuth2ClientCredentials,
    RestCatalogClient,
    RestCatalogSettings,
    error_for,
    parse_error_reply,
)
from tests.support.common import free_port
from tests.support.rest_catalog_stand_in import (
    StandInControl,
    install_control,
    install_token_route,
    serve,
)

TOKEN_PATH = "/oauth/tokens"
Factory = Callable[..., RestCatalogClient]


def error_body(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": status}}


def build_app(control: StandInControl) -> FastAPI:
    """A catalog with one resource: GET /items/{name} reads, POST /items writes."""
    app = FastAPI()
    install_control(app, control, error_body, open_paths=(TOKEN_PATH,))
    install_token_route(app, control, TOKEN_PATH)

    @app.get("/items/{name}")
    def read(name: str) -> dict[str, str]:
        return {"name": name}

    @app.post("/items")
    def write() -> dict[str, bool]:
        return {"written": True}

    return app


@pytest.fixture(scope="module")
def stand_in() -> Iterator[tuple[str, StandInControl]]:
    control = StandInControl()
    with serve(build_app(control)) as url:
        yield url, control


@pytest.fixture
def control(stand_in: tuple[str, StandInControl]) -> Iterator[StandInControl]:
    stand_in[1].reset()
    yield stand_in[1]
    stand_in[1].reset()


@pytest.fixture
def make_client(stand_in: tuple[str, StandInControl]) -> Iterator[Factory]:
    """Clients of the stand-in from backend properties; `credential` turns OAuth2 on."""
    url = stand_in[0]
    created: list[RestCatalogClient] = []

    def factory(
        auth_token: str | None = None, credential: str | None = None,
        clock: Callable[[], float] = time.monotonic, **properties: str
    ) -> RestCatalogClient:
        # A generous read timeout: a loaded machine must not time out ordinary calls.
        settings = RestCatalogSettings.from_properties({
            "endpoint": url, "client.read-timeout-ms": "15000",
            **({"auth_token": auth_token} if auth_token else {}), **properties,
        })
        oauth = (OAuth2ClientCredentials(f"{url}{TOKEN_PATH}", credential, clock=clock)
                 if credential else None)
        client = RestCatalogClient(url, settings, oauth=oauth)
        created.append(client)
        return client

    yield factory
    for client in created:
        client.close()


# Errors


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (401, UnauthenticatedError),
        (403, PermissionDeniedError),
        (429, ThrottlingError),
        (503, ServiceUnavailableError),
        (500, InternalError),
        (418, InternalError),
    ],
)
def test_status_mapping(
    control: StandInControl, make_client: Factory, status: int, error: type
) -> None:
    client = make_client(**{"client.max-retries": "0"})
    control.fail_next(1, status, method="GET", path="/items/")
    with pytest.raises(
        error, match=f"catalog returned HTTP {status}: InjectedFault: injected HTTP {status}"
    ) as raised:
        client.get_json("/items/a")
    assert f"injected HTTP {status}" in str(raised.value)
    assert raised.value.code == error.code


@pytest.mark.parametrize(
    ("response", "kind", "message"),
    [
        (httpx.Response(500, text="plain boom"), "", "plain boom"),
        (httpx.Response(409, json={"error": {"type": "T", "message": "m"}}), "T", "m"),
        (
            httpx.Response(400, json={"error_code": "INVALID_ARGUMENT", "message": "u"}),
            "INVALID_ARGUMENT",
            "u",
        ),
        (
            httpx.Response(401, json={"error": "invalid_client", "error_description": "d"}),
            "invalid_client",
            "d",
        ),
        (httpx.Response(502, json={"detail": "gateway"}), "", "gateway"),
    ],
)
def test_error_replies_of_every_shape_keep_the_server_message(
    response: httpx.Response, kind: str, message: str
) -> None:
    reply = parse_error_reply(response)
    assert (reply.kind, reply.message) == (kind, message)
    error = error_for(
        reply, {409: TableAlreadyExistsError, "INVALID_ARGUMENT": NamespaceNotFoundError}
    )
    assert message in str(error)
    expected = {500: InternalError, 409: TableAlreadyExistsError, 400: NamespaceNotFoundError}
    expected.update({401: UnauthenticatedError, 502: InternalError})
    assert type(error) is expected[response.status_code]


def test_connection_refused_is_service_unavailable() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    settings = RestCatalogSettings.from_properties({"endpoint": url, "client.max-retries": "1"})
    client = RestCatalogClient(url, settings)
    with pytest.raises(ServiceUnavailableError, match=r"is unreachable: .*Connection refused"):
        client.get_json("/items/a")
    client.close()


# Retries and stalls


def test_idempotent_call_is_retried_until_it_succeeds(
    control: StandInControl, make_client: Factory
) -> None:
    client = make_client()
    control.fail_next(2, 503, method="GET", path="/items/a")
    assert client.get_json("/items/a") == {"name": "a"}
    assert len(control.requests_to("/items/a", "GET")) == 3
    control.fail_next(1, 429, method="GET", path="/items/a")
    assert client.get_json("/items/a") == {"name": "a"}


def test_retries_give_up_after_max_retries(control: StandInControl, make_client: Factory) -> None:
    client = make_client()
    control.fail_next(10, 503, method="GET", path="/items/a")
    with pytest.raises(ServiceUnavailableError, match="catalog returned HTTP 503: InjectedFault"):
        client.get_json("/items/a")
    assert len(control.requests_to("/items/a", "GET")) == 4  # 1 + max_retries (3)
    control.reset()
    control.fail_next(9, 502, method="GET", path="/items/a")
    with pytest.raises(InternalError, match="catalog returned HTTP 502: InjectedFault"):
        client.get_json("/items/a")
    assert len(control.requests_to("/items/a", "GET")) == 4


def test_non_idempotent_call_is_not_retried(control: StandInControl, make_client: Factory) -> None:
    client = make_client()
    control.fail_next(1, 503, method="POST", path="/items")
    with pytest.raises(ServiceUnavailableError, match="catalog returned HTTP 503: InjectedFault"):
        client.request("POST", "/items", json={})
    assert len(control.requests_to("/items", "POST")) == 1


def test_stalled_server_times_out_within_read_timeout(
    control: StandInControl, make_client: Factory
) -> None:
    impatient = make_client(**{"client.read-timeout-ms": "1000"})
    control.stall_next(8.0, method="GET", path="/items/a")
    started = time.monotonic()
    with pytest.raises(ServiceUnavailableError, match=r"timed out \(ReadTimeout\)"):
        impatient.get_json("/items/a")
    # read_timeout is 1 s and stalls are not retried: well before the 8 s stall ends.
    assert time.monotonic() - started < 6


# Authentication


def test_bearer_token(control: StandInControl, make_client: Factory) -> None:
    control.required_token = "s3cret"
    with pytest.raises(
        UnauthenticatedError, match="401: NotAuthorizedException: missing or invalid token"
    ):
        make_client().get_json("/items/a")
    with pytest.raises(
        UnauthenticatedError, match="401: NotAuthorizedException: missing or invalid token"
    ):
        make_client(auth_token="wrong").get_json("/items/a")
    assert make_client(auth_token="s3cret").get_json("/items/a") == {"name": "a"}
    assert control.requests_to("/items/a", "GET")[-1].authorization == "Bearer s3cret"


def test_oauth2_client_credentials_token_is_fetched_reused_and_refreshed(
    control: StandInControl, make_client: Factory
) -> None:
    control.oauth_enabled = True
    control.oauth_clients["client"] = "secret"
    control.token_lifetime_seconds = 3
    now = [100.0]
    client = make_client(credential="client:secret", clock=lambda: now[0])
    for _ in range(3):
        client.get_json("/items/a")
    assert control.token_requests == 1
    now[0] += 2.3  # before 80% of the 3 s lifetime: the same token
    client.get_json("/items/a")
    assert control.token_requests == 1
    now[0] += 0.2  # past 80%: refreshed before it expires
    client.get_json("/items/a")
    assert control.token_requests == 2
    tokens = {entry.authorization for entry in control.requests_to("/items/a", "GET")}
    assert len(tokens) == 2


def test_oauth2_token_rejected_by_catalog_is_fetched_again(
    control: StandInControl, make_client: Factory
) -> None:
    control.oauth_enabled = True
    control.oauth_clients["client"] = "secret"
    client = make_client(credential="client:secret")
    client.get_json("/items/a")
    control.issued_tokens.clear()  # the catalog revokes every token
    assert client.get_json("/items/a") == {"name": "a"}
    assert control.token_requests == 2


def test_oauth2_bad_credential_is_unauthenticated(
    control: StandInControl, make_client: Factory
) -> None:
    control.oauth_enabled = True
    control.oauth_clients["client"] = "secret"
    with pytest.raises(UnauthenticatedError, match="401: invalid_client: bad client credentials"):
        make_client(credential="client:wrong").get_json("/items/a")


def test_forwarding_sends_the_callers_token_instead_of_the_static_one(
    control: StandInControl, make_client: Factory
) -> None:
    control.required_token = "caller-token"
    forwarding = make_client(auth_token="static-token", forward_caller_token="true")
    forwarding.as_caller("caller-token").get_json("/items/a")
    assert control.requests_to("/items/a", "GET")[-1].authorization == "Bearer caller-token"
    refused = "401: NotAuthorizedException: missing or invalid token"
    with pytest.raises(UnauthenticatedError, match=refused):
        forwarding.as_caller(None).get_json("/items/a")  # no caller token: the static one
    with pytest.raises(UnauthenticatedError, match=refused):
        forwarding.get_json("/items/a")  # the client itself never sends a caller's token
    not_forwarding = make_client(auth_token="static-token")
    with pytest.raises(UnauthenticatedError, match=refused):
        not_forwarding.as_caller("caller-token").get_json("/items/a")  # forwarding is off
    assert control.requests_to("/items/a", "GET")[-1].authorization == "Bearer static-token"
