"""Credential vending (opt-in): temporary S3 credentials scoped to one table.

`credential_vendor(properties, backend)` builds the vendor the `vending.*` properties configure
(None when off), and `check_vending(properties)` checks them at start-up (boto3, the `vending`
extra, included when they mint); `CredentialVendor.vend` relays the catalog's credentials (a
backend that `RelaysCredentials`), or mints or reuses STS credentials for a table location and
an identity's access; `with_vended` puts them into a DescribeTable / DeclareTable answer.
"""

from backends.vending.policy import TablePrefix, session_policy
from backends.vending.settings import READ, READ_WRITE, VENDING_PREFIX, VendingSettings
from backends.vending.vendor import (
    CredentialVendor,
    RelaysCredentials,
    S3Credentials,
    VendedCredentials,
    VendRecord,
    check_vending,
    credential_vendor,
    with_vended,
)

__all__ = [
    "READ",
    "READ_WRITE",
    "VENDING_PREFIX",
    "CredentialVendor",
    "RelaysCredentials",
    "S3Credentials",
    "TablePrefix",
    "VendRecord",
    "VendedCredentials",
    "VendingSettings",
    "check_vending",
    "credential_vendor",
    "session_policy",
    "with_vended",
]
