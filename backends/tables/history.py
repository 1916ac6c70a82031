"""A table's history: versions (list, describe, delete), RestoreTable, tags and branches."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lance import LanceDataset
from lance_namespace import (
    BatchDeleteTableVersionsRequest,
    BatchDeleteTableVersionsResponse,
    CreateTableBranchRequest,
    CreateTableTagRequest,
    DescribeTableVersionResponse,
    GetTableTagVersionResponse,
    InvalidInputError,
    ListTableBranchesRequest,
    ListTableBranchesResponse,
    ListTableTagsRequest,
    ListTableTagsResponse,
    ListTableVersionsRequest,
    ListTableVersionsResponse,
    TableBranchAlreadyExistsError,
    TableBranchNotFoundError,
    TableVersion,
    TableVersionNotFoundError,
    UpdateTableTagRequest,
)
from lance_namespace_urllib3_client.models import BranchContents, TagContents

from backends.core.paging import paginate
from backends.core.properties import string_map
from backends.tables.errors import lance_errors
from backends.tables.refs import MAIN_BRANCH

_U64_MAX = 2**64 - 1
VERSIONS_DIRECTORY = "_versions"
_MANIFEST_SUFFIX = ".manifest"


def manifest_path(version: int) -> str:
    """The manifest of `version`, relative to the table location (never a server path),
    in the V2 naming scheme pylance writes."""
    return f"{VERSIONS_DIRECTORY}/{_U64_MAX - version:020d}{_MANIFEST_SUFFIX}"


def _is_staged(segments: tuple[str, ...]) -> bool:
    """True for `_versions/<name>` where `name` is no committed manifest's."""
    if len(segments) != 2 or segments[0] != VERSIONS_DIRECTORY:
        return False
    name = segments[1]
    return (name.isprintable() and name not in ("", ".", "..") and "\\" not in name
            and not name.endswith(_MANIFEST_SUFFIX))


def staging_manifest_key(table_key: tuple[str, ...], manifest_path: str) -> str:
    """The storage key of the staging manifest CreateTableVersion commits, named relative to
    the table (`_versions/<name>`) or by its key below the storage root (object stores print
    it without a leading slash); else InvalidInputError.

    Committing moves the file: it must be one Lance stages, `_versions/<version>.manifest-
    <uuid>` of this table, never a committed manifest, a data file or anything elsewhere."""
    if not manifest_path or not manifest_path.strip():
        raise InvalidInputError("manifest_path must name the staging manifest to commit")
    segments = tuple(manifest_path.removeprefix("/").split("/"))
    if segments[: len(table_key)] == table_key:
        segments = segments[len(table_key) :]
    if not _is_staged(segments):
        raise InvalidInputError(
            f"manifest_path {manifest_path[:80]!r} is not a staging manifest of the table: "
            f"name {VERSIONS_DIRECTORY}/<version>.manifest-<id> in the table's directory"
        )
    return "/".join((*table_key, *segments))


def _millis(timestamp: datetime | int) -> int:
    if isinstance(timestamp, datetime):
        return int(timestamp.timestamp() * 1000)
    return int(timestamp) // 1_000_000


def _table_version(entry: dict[str, Any]) -> TableVersion:
    return TableVersion(
        version=entry["version"],
        manifest_path=manifest_path(entry["version"]),
        timestamp_millis=_millis(entry["timestamp"]),
        metadata=string_map(entry.get("metadata")),
    )


def _versions(dataset: LanceDataset) -> dict[int, dict[str, Any]]:
    with lance_errors(dataset.uri):
        return {entry["version"]: entry for entry in dataset.versions()}


def list_versions(
    dataset: LanceDataset, request: ListTableVersionsRequest
) -> ListTableVersionsResponse:
    history = _versions(dataset)
    descending = bool(request.descending)
    # paginate sorts names ascending: key each version so that sort order is the wanted one.
    keys = {f"{(_U64_MAX - number) if descending else number:020d}": number for number in history}
    token = None
    if request.page_token:
        if not request.page_token.isdigit():
            raise InvalidInputError(f"page_token {request.page_token!r} is not a version number")
        number = int(request.page_token)
        token = f"{(_U64_MAX - number) if descending else number:020d}"
    page, next_key = paginate(keys, token, request.limit)
    return ListTableVersionsResponse(
        versions=[_table_version(history[keys[key]]) for key in page],
        page_token=str(keys[next_key]) if next_key else None,
    )


def describe_version(dataset: LanceDataset, version: int | None) -> DescribeTableVersionResponse:
    history = _versions(dataset)
    wanted = dataset.version if version is None else version
    if wanted not in history:
        raise TableVersionNotFoundError(f"version {wanted} does not exist")
    return DescribeTableVersionResponse(version=_table_version(history[wanted]))


def delete_versions(
    dataset: LanceDataset, request: BatchDeleteTableVersionsRequest
) -> BatchDeleteTableVersionsResponse:
    """Delete the versions of the ranges (start inclusive, end exclusive). The latest version
    holds the table's current state, so it is never deleted: end -1 means up to it."""
    latest = dataset.latest_version
    # Ranges may be as wide as 2^63: test each existing version against them, never expand.
    bounds: list[tuple[int, int]] = []
    for version_range in request.ranges or []:
        end = latest if version_range.end_version == -1 else version_range.end_version
        if version_range.start_version < 0 or end < version_range.start_version:
            raise InvalidInputError(f"invalid version range {version_range.to_dict()}")
        bounds.append((version_range.start_version, end))
    if any(start <= latest < end for start, end in bounds):
        raise InvalidInputError(f"the latest version {latest} cannot be deleted")
    existing = sorted(
        version for version in set(_versions(dataset))
        if any(start <= version < end for start, end in bounds)
    )
    if existing:
        with lance_errors(dataset.uri):
            dataset.cleanup_old_versions(versions=existing, error_if_tagged_old_versions=True)
    return BatchDeleteTableVersionsResponse(deleted_count=len(existing))


def restore(dataset: LanceDataset) -> int:
    """Make the checked-out version the latest; the new version number."""
    with lance_errors(dataset.uri):
        dataset.restore()
        return dataset.latest_version


def _tag_contents(tag: dict[str, Any]) -> TagContents:
    return TagContents(
        branch=tag.get("branch"), version=tag["version"], manifest_size=tag["manifest_size"]
    )


def list_tags(dataset: LanceDataset, request: ListTableTagsRequest) -> ListTableTagsResponse:
    with lance_errors(dataset.uri):
        tags = dataset.tags.list()
    page, token = paginate(tags, request.page_token, request.limit)
    return ListTableTagsResponse(
        tags={name: _tag_contents(tags[name]) for name in page}, page_token=token
    )


def tag_version(dataset: LanceDataset, tag: str) -> GetTableTagVersionResponse:
    with lance_errors(dataset.uri):
        found = dataset.tags.list().get(tag)
        if found is None:
            dataset.tags.get_version(tag)  # raises pylance's own "tag does not exist"
    return GetTableTagVersionResponse(version=found["version"], branch=found.get("branch"))


def _reference(version: int, branch: str | None) -> int | tuple[str, int]:
    return (branch, version) if branch else version


def create_tag(dataset: LanceDataset, request: CreateTableTagRequest) -> None:
    with lance_errors(dataset.uri):
        dataset.tags.create(request.tag, _reference(request.version, request.branch))


def update_tag(dataset: LanceDataset, request: UpdateTableTagRequest) -> None:
    with lance_errors(dataset.uri):
        dataset.tags.update(request.tag, _reference(request.version, request.branch))


def delete_tag(dataset: LanceDataset, tag: str) -> None:
    with lance_errors(dataset.uri):
        dataset.tags.delete(tag)


def create_branch(dataset: LanceDataset, request: CreateTableBranchRequest) -> None:
    # pylance fails obscurely on a duplicate, and on a missing source branch
    with lance_errors(dataset.uri):
        branches = dataset.branches.list()
        if request.name in branches:
            raise TableBranchAlreadyExistsError(f"branch {request.name} already exists")
        source = request.from_branch
        if source not in (None, MAIN_BRANCH) and source not in branches:
            raise TableBranchNotFoundError(f"from_branch {source} does not exist")
        dataset.create_branch(request.name, (source, request.from_version))


def list_branches(
    dataset: LanceDataset, request: ListTableBranchesRequest
) -> ListTableBranchesResponse:
    with lance_errors(dataset.uri):
        branches = dataset.branches.list()
    page, token = paginate(branches, request.page_token, request.limit)
    return ListTableBranchesResponse(
        branches={
            name: BranchContents(
                parent_branch=branches[name].get("parent_branch"),
                parent_version=branches[name]["parent_version"],
                create_at=branches[name]["create_at"],
                manifest_size=branches[name]["manifest_size"],
                metadata=string_map(branches[name].get("metadata")) or None,
            )
            for name in page
        },
        page_token=token,
    )


def delete_branch(dataset: LanceDataset, name: str) -> None:
    with lance_errors(dataset.uri):
        dataset.branches.delete(name)
