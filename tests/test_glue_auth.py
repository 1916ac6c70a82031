"""Authentication methods, IAM-checked errors, STS assume-role and an unreachable endpoint.

moto checks signatures and IAM policies while `enable_iam_authentication` is active, so a
wrong key, a bad signature and a missing permission are rejected by the server itself.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    ListNamespacesRequest,
    PermissionDeniedError,
    ServiceUnavailableError,
    UnauthenticatedError,
)
from moto.core.authorization import enable_iam_authentication

from backends.glue import GlueNamespace
from tests.support.common import free_port
from tests.support.glue import (
    MOTO_ACCOUNT_ID,
    MotoEndpoint,
    create_lance_role,
    create_user_keys,
    glue_properties,
    start_moto,
)


def keyed(url: str, access_key: str, secret_key: str, **extra: str) -> dict[str, str]:
    return glue_properties(url, access_key_id=access_key, secret_access_key=secret_key, **extra)


def roundtrip(namespace: GlueNamespace, name: str) -> list[str]:
    namespace.create_namespace(CreateNamespaceRequest(id=[name]))
    return namespace.list_namespaces(ListNamespacesRequest()).namespaces


def test_static_credentials_checked_by_iam(clean_moto: MotoEndpoint):
    allowed = create_user_keys(clean_moto, "writer", ["glue:*"])
    denied = create_user_keys(clean_moto, "nobody", [])
    url = clean_moto.url
    with enable_iam_authentication():
        assert roundtrip(GlueNamespace(**keyed(url, *allowed)), "granted") == ["granted"]
        with pytest.raises(
            PermissionDeniedError, match=r"user/nobody is not authorized .* glue:GetDatabases"
        ) as raised:
            GlueNamespace(**keyed(url, *denied)).list_namespaces(ListNamespacesRequest())
        assert raised.value.code == 15
        unknown = GlueNamespace(**keyed(url, "AKIAUNKNOWNKEY000000", "secret"))
        with pytest.raises(
            UnauthenticatedError, match=r"InvalidClientTokenId.*security token .* is invalid"
        ) as raised:
            unknown.list_namespaces(ListNamespacesRequest())
        assert raised.value.code == 16
        bad_signature = GlueNamespace(**keyed(url, allowed[0], "not-the-secret"))
        with pytest.raises(UnauthenticatedError, match="SignatureDoesNotMatch"):
            bad_signature.list_namespaces(ListNamespacesRequest())


def test_default_provider_chain(clean_moto: MotoEndpoint, monkeypatch, tmp_path):
    access_key, secret_key = create_user_keys(clean_moto, "env-user", ["glue:*"])
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret_key)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    properties = glue_properties(clean_moto.url)
    for key in ("access_key_id", "secret_access_key", "region"):
        properties.pop(key)
    with enable_iam_authentication():
        assert roundtrip(GlueNamespace(**properties), "from-env") == ["from-env"]
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
        with pytest.raises(UnauthenticatedError, match="SignatureDoesNotMatch"):
            GlueNamespace(**properties).list_namespaces(ListNamespacesRequest())


def test_assume_role_with_session_name_and_external_id(clean_moto: MotoEndpoint):
    base = create_user_keys(clean_moto, "assumer", ["sts:AssumeRole"])
    assumer = f"arn:aws:iam::{MOTO_ACCOUNT_ID}:user/assumer"
    role_arn = create_lance_role(clean_moto, trusted=assumer, external_id="ext-42")
    url = clean_moto.url
    properties = keyed(
        url,
        *base,
        assume_role_arn=role_arn,
        assume_role_region="us-east-1",
        assume_role_session_name="lance-test-session",
        assume_role_external_id="ext-42",
    )
    with enable_iam_authentication():
        # The user alone may not touch Glue; only the role's credentials can.
        with pytest.raises(
            PermissionDeniedError, match=r"user/assumer is not authorized .* glue:GetDatabases"
        ):
            GlueNamespace(**keyed(url, *base)).list_namespaces(ListNamespacesRequest())
        namespace = GlueNamespace(**properties)
        assert roundtrip(namespace, "via-role") == ["via-role"]
        identity = namespace.session.client("sts", endpoint_url=url).get_caller_identity()
    assert identity["Arn"].endswith(":assumed-role/lance-glue/lance-test-session")


def test_session_credentials(clean_moto: MotoEndpoint):
    role_arn = create_lance_role(clean_moto)
    sts = clean_moto.client("sts")
    credentials = sts.assume_role(RoleArn=role_arn, RoleSessionName="session")["Credentials"]  # type: ignore[attr-defined]
    properties = keyed(
        clean_moto.url,
        credentials["AccessKeyId"],
        credentials["SecretAccessKey"],
        session_token=credentials["SessionToken"],
    )
    with enable_iam_authentication():
        assert roundtrip(GlueNamespace(**properties), "with-token") == ["with-token"]


def test_assumed_role_credentials_are_refreshed_before_expiry(clean_moto: MotoEndpoint):
    role_arn = create_lance_role(clean_moto)
    url = clean_moto.url

    def access_keys(timeout: str) -> tuple[str, str]:
        namespace = GlueNamespace(
            **glue_properties(url, assume_role_arn=role_arn, assume_role_timeout_sec=timeout)
        )
        credentials = namespace.session.get_credentials()
        first = credentials.get_frozen_credentials().access_key
        namespace.list_namespaces(ListNamespacesRequest())
        return first, credentials.get_frozen_credentials().access_key

    # 900 s is inside botocore's 15-minute refresh window: every use fetches a new session.
    first, second = access_keys("900")
    assert first != second
    first, second = access_keys("3600")
    assert first == second


def test_failed_assume_role_is_a_typed_error_per_request(clean_moto: MotoEndpoint):
    base = create_user_keys(clean_moto, "no-sts", [])
    role_arn = create_lance_role(clean_moto)
    with enable_iam_authentication():
        # Built without calling STS; the refused AssumeRole shows on the first request.
        namespace = GlueNamespace(**keyed(clean_moto.url, *base, assume_role_arn=role_arn))
        with pytest.raises(
            PermissionDeniedError, match="user/no-sts is not authorized to perform: sts:AssumeRole"
        ):
            namespace.list_namespaces(ListNamespacesRequest())


def test_sts_down_is_service_unavailable(clean_moto: MotoEndpoint):
    role_arn = create_lance_role(clean_moto)
    properties = glue_properties(
        clean_moto.url,
        assume_role_arn=role_arn,
        sts_endpoint=f"http://127.0.0.1:{free_port()}",
    )
    namespace = GlueNamespace(**properties)
    with pytest.raises(
        ServiceUnavailableError, match="unreachable: Could not connect to the endpoint URL"
    ):
        namespace.list_namespaces(ListNamespacesRequest())


def test_clients_are_bounded(clean_moto: MotoEndpoint):
    namespace = GlueNamespace(
        **glue_properties(
            clean_moto.url,
            **{
                "client.connect_timeout_sec": "1.5",
                "client.read_timeout_sec": "7",
                "client.max_attempts": "4",
                "client.max_pool_connections": "6",
            },
        )
    )
    config = namespace.glue_client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (1.5, 7.0)
    assert config.max_pool_connections == 6
    assert config.retries == {"total_max_attempts": 4, "mode": "standard"}


# -- endpoint down ---------------------------------------------------------------------------


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers: every read times out."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for connection in accepted:
            connection.close()
        listener.close()


def test_endpoint_down_is_service_unavailable_then_recovers():
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    namespace = GlueNamespace(**glue_properties(url))
    started = time.monotonic()
    with pytest.raises(
        ServiceUnavailableError, match="unreachable: Could not connect to the endpoint URL"
    ) as raised:
        namespace.list_namespaces(ListNamespacesRequest())
    assert raised.value.code == 17
    assert time.monotonic() - started < 5

    server, _ = start_moto(port)
    try:
        assert roundtrip(namespace, "back") == ["back"]
    finally:
        server.stop()


def test_endpoint_that_never_answers_times_out(silent_server: str):
    namespace = GlueNamespace(
        **glue_properties(silent_server, **{"client.read_timeout_sec": "0.5"})
    )
    started = time.monotonic()
    with pytest.raises(ServiceUnavailableError, match="unreachable: Read timeout on endpoint URL"):
        namespace.list_namespaces(ListNamespacesRequest())
    assert time.monotonic() - started < 5
