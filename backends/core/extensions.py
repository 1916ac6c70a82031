"""Request and response models of the spec operations the official 0.13 clients lack.

The Lance Namespace spec (`namespace-spec.md`) names ListOperations, AlterNamespace and
AlterTable; the generated client has no model for them. These follow the official models'
conventions: `identity` and `context` on every request, `id` as a list of names, and
`to_dict` / `from_dict` like the generated models.
"""

from __future__ import annotations

from typing import Any, Self

from lance_namespace_urllib3_client.models import Identity
from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, validate_assignment=True)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)

    @classmethod
    def from_dict(cls, payload: dict[str, Any] | None) -> Self | None:
        return None if payload is None else cls.model_validate(payload)


class ListOperationsRequest(_Model):
    identity: Identity | None = None
    context: dict[str, str] | None = None


class ListOperationsResponse(_Model):
    """The operation ids the configured backend supports, sorted."""

    operations: list[str]
    context: dict[str, str] | None = None


class AlterNamespaceRequest(_Model):
    identity: Identity | None = None
    context: dict[str, str] | None = None
    id: list[str] | None = None
    set_properties: dict[str, str] | None = None
    unset_properties: list[str] | None = None


class AlterNamespaceResponse(_Model):
    """The namespace's properties after the change."""

    properties: dict[str, str] | None = None
    context: dict[str, str] | None = None


class AlterTableRequest(_Model):
    identity: Identity | None = None
    context: dict[str, str] | None = None
    id: list[str] | None = None
    set_properties: dict[str, str] | None = None
    unset_properties: list[str] | None = None


class AlterTableResponse(_Model):
    """The table's properties after the change."""

    properties: dict[str, str] | None = None
    context: dict[str, str] | None = None
