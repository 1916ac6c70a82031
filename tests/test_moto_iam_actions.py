"""moto's IAM enforcement checks each S3 request against the IAM action AWS checks it by,
which tests/test_least_privilege.py relies on to judge the documented policy. moto 5.2.6
checks the request's API name instead (s3:ListObjectsV2, s3:HeadObject, s3:ListObjects: no
such IAM actions), so pyproject.toml keeps moto below 5.2.6; this test, run on a newer moto,
says when the bound can go (the report: docs/contributing.md, Upstream reports)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.support.glue import REGION
from tests.support.moto_iam import Moto

BUCKET = "bucket"
# Each request and the IAM action AWS authorizes it by (Amazon S3 User Guide, "Actions,
# resources, and condition keys for Amazon S3": ListObjectsV2 and ListObjects need
# s3:ListBucket, HeadObject and GetObject need s3:GetObject).
AWS_ACTIONS = {
    "list_objects_v2": ("s3:ListBucket", {"Bucket": BUCKET}),
    "list_objects": ("s3:ListBucket", {"Bucket": BUCKET}),
    "head_object": ("s3:GetObject", {"Bucket": BUCKET, "Key": "k"}),
    "get_object": ("s3:GetObject", {"Bucket": BUCKET, "Key": "k"}),
}


def user_s3(moto: Moto, actions: list[str]) -> Any:
    """An S3 client of a user holding `actions` on the bucket and its objects, and an object."""
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:PutObject", *actions],
         "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"]}]}
    key, secret = moto.user_holding(policy, bucket=BUCKET)
    s3 = boto3.client("s3", endpoint_url=moto.url, region_name=REGION,
                      aws_access_key_id=key, aws_secret_access_key=secret)
    s3.put_object(Bucket=BUCKET, Key="k", Body=b"x")
    return s3


@pytest.mark.parametrize("request_name", list(AWS_ACTIONS))
def test_an_s3_request_is_allowed_by_the_iam_action_aws_checks(
        moto_enforcing: Moto, request_name: str) -> None:
    action, parameters = AWS_ACTIONS[request_name]
    s3 = user_s3(moto_enforcing, [action])
    getattr(s3, request_name)(**parameters)  # raises AccessDenied / 403 where moto is wrong


@pytest.mark.parametrize("request_name", list(AWS_ACTIONS))
def test_without_that_action_the_request_is_refused(
        moto_enforcing: Moto, request_name: str) -> None:
    _, parameters = AWS_ACTIONS[request_name]
    s3 = user_s3(moto_enforcing, [])
    with pytest.raises(ClientError) as refused:
        getattr(s3, request_name)(**parameters)
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
