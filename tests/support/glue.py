"""Fixtures for the Glue backend tests: moto's server on loopback as Glue, STS, IAM and S3."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import pytest
from moto.moto_server.threaded_moto_server import ThreadedMotoServer

from backends.glue import GlueNamespace

REGION = "us-east-1"
TEST_ACCESS_KEY = "testing"
TEST_SECRET_KEY = "testing"
MOTO_ACCOUNT_ID = "123456789012"


@dataclass(frozen=True)
class MotoEndpoint:
    """A moto server answering every AWS service at `url`."""

    url: str

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST", data=b"")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def client(self, service: str, **credentials: str) -> object:
        return boto3.client(
            service,
            endpoint_url=self.url,
            region_name=REGION,
            aws_access_key_id=credentials.get("access_key", TEST_ACCESS_KEY),
            aws_secret_access_key=credentials.get("secret_key", TEST_SECRET_KEY),
        )


def start_moto(port: int = 0) -> tuple[ThreadedMotoServer, str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    host, bound_port = server.get_host_and_port()
    return server, f"http://{host}:{bound_port}"


def glue_properties(url: str, **extra: str) -> dict[str, str]:
    """Properties for a GlueNamespace talking to moto at `url` with static credentials."""
    return {
        "endpoint": url,
        "sts_endpoint": url,
        "region": REGION,
        "access_key_id": TEST_ACCESS_KEY,
        "secret_access_key": TEST_SECRET_KEY,
        "hierarchy": "databases",
        "client.connect_timeout_sec": "2",
        "client.read_timeout_sec": "10",
        "client.max_attempts": "2",
        **extra,
    }


def create_lance_role(
    endpoint: MotoEndpoint,
    name: str = "lance-glue",
    trusted: str = f"arn:aws:iam::{MOTO_ACCOUNT_ID}:root",
    external_id: str | None = None,
) -> str:
    """An IAM role allowed every Glue action, assumable by `trusted`; returns its ARN."""
    iam = endpoint.client("iam")
    statement: dict = {"Effect": "Allow", "Principal": {"AWS": trusted}, "Action": "sts:AssumeRole"}
    if external_id:
        statement["Condition"] = {"StringEquals": {"sts:ExternalId": external_id}}
    trust = {"Version": "2012-10-17", "Statement": [statement]}
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))  # type: ignore[attr-defined]
    iam.put_role_policy(  # type: ignore[attr-defined]
        RoleName=name,
        PolicyName="glue-all",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "glue:*", "Resource": "*"}],
            }
        ),
    )
    return role["Role"]["Arn"]


def create_user_keys(endpoint: MotoEndpoint, name: str, actions: list[str]) -> tuple[str, str]:
    """An IAM user allowed `actions` (none when empty); returns its access key pair."""
    iam = endpoint.client("iam")
    iam.create_user(UserName=name)  # type: ignore[attr-defined]
    if actions:
        iam.put_user_policy(  # type: ignore[attr-defined]
            UserName=name,
            PolicyName="allowed",
            PolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}],
                }
            ),
        )
    key = iam.create_access_key(UserName=name)["AccessKey"]  # type: ignore[attr-defined]
    return key["AccessKeyId"], key["SecretAccessKey"]


def s3_storage(moto_url: str) -> dict[str, str]:
    """pylance (object_store) options for moto's S3 on loopback."""
    return {
        "aws_endpoint": moto_url,
        "aws_region": REGION,
        "aws_access_key_id": TEST_ACCESS_KEY,
        "aws_secret_access_key": TEST_SECRET_KEY,
        "allow_http": "true",
    }


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[MotoEndpoint]:
    server, url = start_moto()
    try:
        yield MotoEndpoint(url)
    finally:
        server.stop()


@pytest.fixture
def clean_moto(moto_endpoint: MotoEndpoint) -> MotoEndpoint:
    """The shared moto server with every service's state wiped."""
    moto_endpoint.reset()
    return moto_endpoint


@pytest.fixture
def glue(clean_moto: MotoEndpoint, tmp_path) -> GlueNamespace:
    """A single-catalog (hierarchy=databases) backend on an empty moto Glue."""
    return GlueNamespace(**glue_properties(clean_moto.url, root=str(tmp_path / "warehouse")))
