"""moto with IAM enforcement on, in a process of its own (fixture `moto_enforcing`): its
first `SET_UP_REQUESTS` requests are answered as the admin (the set-up: a bucket, an IAM user,
its policy and keys), every later one is checked against the caller's IAM policies. The
suite's other moto servers run in the test process and keep answering anyone, which is why
this one is a process: moto reads `INITIAL_NO_AUTH_ACTION_COUNT` when it starts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.support.common import free_port
from tests.support.glue import REGION, TEST_ACCESS_KEY, TEST_SECRET_KEY

# The requests moto answers before it checks identities: `user_holding`'s four.
SET_UP_REQUESTS = 4
START_TIMEOUT_SECONDS = 60


@dataclass
class Moto:
    url: str
    process: subprocess.Popen[bytes]

    def admin(self, service: str) -> Any:
        return boto3.client(service, endpoint_url=self.url, region_name=REGION,
                            aws_access_key_id=TEST_ACCESS_KEY,
                            aws_secret_access_key=TEST_SECRET_KEY)

    def user_holding(self, policy: dict[str, Any], bucket: str) -> tuple[str, str]:
        """The set-up, as the admin: `bucket`, and an IAM user holding exactly `policy`; its
        access key id and secret."""
        self.admin("s3").create_bucket(Bucket=bucket)
        iam = self.admin("iam")
        iam.create_user(UserName="lance-adapter")
        iam.put_user_policy(UserName="lance-adapter", PolicyName="documented",
                            PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName="lance-adapter")["AccessKey"]
        with pytest.raises(Exception, match="InvalidAccessKeyId"):  # enforcement is on
            self.admin("s3").list_buckets()
        return key["AccessKeyId"], key["SecretAccessKey"]


@pytest.fixture
def moto_enforcing() -> Iterator[Moto]:
    port = free_port()
    environment = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(SET_UP_REQUESTS)}
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
        env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, "moto did not start"
            time.sleep(0.1)
    try:
        yield Moto(f"http://127.0.0.1:{port}", process)
    finally:
        process.terminate()
        process.wait(timeout=30)
