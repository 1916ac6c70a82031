"""Tag and branch names, checked before any storage is touched (`check_ref_names`, at every
backend's guard, `backends.guard.call_with_valid_id`).

The rules are Lance's, plus one: a new tag's name is ASCII. Lance keeps a tag as the file
`_refs/tags/<name>.json`, percent-encoding a non-ASCII name when it writes the file and again
when it lists the tags, so one such tag would make every tag listing (and branch deletion) of
the table fail until it is deleted. Branches keep their names whatever their letters.

- a tag: letters, digits, `.`, `-` and `_`; not starting or ending with `.`, no `..`, not
  ending with `.lock`; a new one ASCII only;
- a branch: `/`-separated segments of letters, digits, `.`, `-` and `_`; no empty segment,
  no `..` or `\\`, not ending with `.lock`; `main` names the main branch, so a branch
  created or deleted cannot be called that.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from lance_namespace import (
    CreateTableBranchRequest,
    CreateTableTagRequest,
    DeleteTableBranchRequest,
    InvalidInputError,
)

MAIN_BRANCH = "main"
# Longest file name of common file systems; a ref is one file, its name percent-encoded.
MAX_FILE_NAME_BYTES = 255
_REF_FILE_SUFFIX = ".json"
_PUNCTUATION = frozenset(".-_")


def _fits_a_file_name(name: str) -> bool:
    return len(quote(name, safe="")) + len(_REF_FILE_SUFFIX) <= MAX_FILE_NAME_BYTES


def _word(text: str, ascii_only: bool = False) -> bool:
    """True when `text` is letters, digits, `.`, `-` and `_` (ASCII ones if `ascii_only`)."""
    return bool(text) and all(
        (character.isalnum() or character in _PUNCTUATION)
        and (character.isascii() or not ascii_only)
        for character in text
    )


def check_tag(tag: object, new: bool = False) -> None:
    """InvalidInputError unless `tag` can name a tag (a `new` one: ASCII only)."""
    if not isinstance(tag, str) or not _word(tag, ascii_only=new):
        letters = "ASCII letters" if new else "letters"
        raise InvalidInputError(
            f"tag {tag!r} is not a valid tag name: use {letters}, digits, '.', '-' and '_'"
        )
    if tag.startswith(".") or tag.endswith(".") or ".." in tag or tag.endswith(".lock"):
        raise InvalidInputError(
            f"tag {tag!r} is not a valid tag name: it may not start or end with '.', hold "
            "'..' or end with '.lock'"
        )
    if not _fits_a_file_name(tag):
        raise InvalidInputError(f"tag {tag[:40]!r}... is too long")


def check_branch(branch: object, field: str = "branch", may_be_main: bool = True) -> None:
    """InvalidInputError unless `branch` can name a branch (`main` only if `may_be_main`)."""
    if not isinstance(branch, str) or branch == "":
        raise InvalidInputError(f"{field} must be a non-empty branch name")
    if branch == MAIN_BRANCH:
        if may_be_main:
            return
        raise InvalidInputError(f"{field} may not be '{MAIN_BRANCH}', the main branch")
    if not all(_word(segment) for segment in branch.split("/")):
        raise InvalidInputError(
            f"{field} {branch!r} is not a valid branch name: use '/'-separated segments of "
            "letters, digits, '.', '-' and '_'"
        )
    if ".." in branch or branch.endswith(".lock"):
        raise InvalidInputError(
            f"{field} {branch!r} is not a valid branch name: it may not hold '..' or end "
            "with '.lock'"
        )
    if not _fits_a_file_name(branch):
        raise InvalidInputError(f"{field} {branch[:40]!r}... is too long")


def check_ref_names(request: Any) -> None:
    """Check every tag and branch `request` names: the new tag or branch it creates, the one
    it deletes, and those it reads at."""
    if isinstance(request, (CreateTableBranchRequest, DeleteTableBranchRequest)):
        check_branch(request.name, "name", may_be_main=False)
    tag = getattr(request, "tag", None)
    if tag is not None:
        check_tag(tag, new=isinstance(request, CreateTableTagRequest))
    for field in ("branch", "from_branch"):
        branch = getattr(request, field, None)
        if branch is not None:
            check_branch(branch, field)
