"""The inline session policy of one table: its own S3 prefix, nothing else."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lance_namespace import InvalidInputError

from backends.core.locations import resolve_stored
from backends.owner_record import OWNER_FILE
from backends.vending.settings import READ_WRITE

READ_ACTIONS = ("s3:GetObject",)
WRITE_ACTIONS = ("s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload")
# IAM reads `*`, `?` and `$` in a Resource or StringLike value as wildcards / variables; these
# policy variables stand for the characters themselves.
_IAM_LITERALS = {"$": "${$}", "*": "${*}", "?": "${?}"}


@dataclass(frozen=True)
class TablePrefix:
    """A table's place in S3: its bucket, and its key prefix ending in `/`."""

    bucket: str
    prefix: str

    @classmethod
    def of(cls, location: str) -> TablePrefix | None:
        """The prefix of an S3 location, read as Lance opens it (`backends.core.locations`); None
        for any other storage and for a location that names no one place (query, fragment,
        wildcard or invalid bucket names are thereby never granted)."""
        if "?" in location or "#" in location:
            return None  # Lance would drop the rest: the place is not the one the text names
        try:
            place = resolve_stored(location)
        except InvalidInputError:
            return None
        if place.scheme != "s3" or not place.key:
            return None  # a table at a bucket's root would be granted the whole bucket
        return cls(place.bucket, "/".join(place.key) + "/")


def partition(region: str | None) -> str:
    if region and region.startswith("cn-"):
        return "aws-cn"
    if region and region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def iam_literal(text: str) -> str:
    return "".join(_IAM_LITERALS.get(character, character) for character in text)


def session_policy(table: TablePrefix, access: str, region: str | None = None,
                   bases: Sequence[TablePrefix] = ()) -> dict[str, Any]:
    """Objects under the table's prefix (read, or read and write) and listing only there; the
    server's ownership record and claim there never written (they name the table's owner and
    the only places a clone of the server's may read: `backends.ownership`). The same for
    each of the table's extra `bases` (a multi-base table's, recorded as its own)."""
    statements = _prefix_statements("Table", table, access, region)
    for number, base in enumerate(bases, start=1):
        statements += _prefix_statements(f"Base{number}", base, access, region)
    return {"Version": "2012-10-17", "Statement": statements}


def _prefix_statements(name: str, place: TablePrefix, access: str,
                       region: str | None) -> list[dict[str, Any]]:
    arn = f"arn:{partition(region)}:s3:::{place.bucket}"
    prefix = iam_literal(place.prefix)
    writes = access == READ_WRITE
    statements: list[dict[str, Any]] = [
        {"Sid": f"{name}Objects", "Effect": "Allow",
         "Action": list(READ_ACTIONS + (WRITE_ACTIONS if writes else ())),
         "Resource": f"{arn}/{prefix}*"},
        {"Sid": f"{name}Listing", "Effect": "Allow", "Action": "s3:ListBucket", "Resource": arn,
         "Condition": {"StringLike": {"s3:prefix": f"{prefix}*"}}},
    ]
    if writes:
        sid = "ServerRecords" if name == "Table" else f"{name}Records"
        statements.append({"Sid": sid, "Effect": "Deny", "Action": list(WRITE_ACTIONS),
                           "Resource": f"{arn}/{prefix}{iam_literal(OWNER_FILE)}*"})
    return statements
