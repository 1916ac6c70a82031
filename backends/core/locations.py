"""Storage locations as Lance resolves them: `StorageLocation`, `parse_location`, `parse_root`.

One parser for every location the server checks or opens. It accepts a form only when Lance
(pylance 14 and its object_store) opens exactly the place the parser returns, and refuses
with `InvalidInputError` every form Lance reads otherwise or that is ambiguous. The facts it
relies on, each checked against Lance by `tests/test_locations.py`:

- A plain absolute path is opened literally: `?`, `#`, `%`, `\\`, spaces and non-ASCII
  are ordinary characters, only `.`, `..`, empty segments and a leading `~` are resolved.
- A URI (`file:`, `s3://`, `gs://`, `az://`, `abfss://`) goes through a URL parser first:
  spaces at its ends are stripped, its query and fragment are dropped, `.`, `..` and their
  percent-encodings (`%2e%2e`) are resolved, the path is percent-decoded once (`%2F`
  becomes a separator), user and port are ignored; in `file:` URIs `\\` is a separator,
  tab and newline vanish, any host is ignored and `/C|` is read as the drive `/C:`.
- A URI the URL parser rejects (`s3://bad host/x`, `file://a b/x`) is opened as a path
  relative to the process's current directory.
- `s3a://` and `abfs://` are not storage Lance knows; `abfss://` reaches the same Azure
  container as `az://`.

`StorageLocation.uri` is the canonical text for Lance: a plain absolute path for local
storage (Lance reads it literally, so a name needs no escaping there), and
`scheme://bucket/key` for object stores, where what the URL parser would not keep (`%`,
`?`, `#`, and spaces ending the text, which it strips) is percent-encoded exactly once.
`parse_location` refuses `%`, `?` and `#` in any text and white space at its ends, so it
reads back every `uri` except one holding those; it never reads one as another location.

Also the text forms the catalogs store: a storage root made absolute (`storage_root`) and a
location joined below one (`join_location`); and the local directory a root or a stored
location names (`local_directory`), None on object storage.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from lance_namespace import InvalidInputError

SUPPORTED_SCHEMES = ("file", "s3", "gs", "az", "abfss")
# Spellings Lance resolves to the same store.
_SAME_STORE = {"abfss": "az"}
# What Lance's URL parser takes as a scheme (it is case-insensitive).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# The only characters Lance would not keep in an object-store URI's path, each escaped once.
_URI_ESCAPES = str.maketrans({"%": "%25", "?": "%3F", "#": "%23"})
_IP_ADDRESS = re.compile(r"\d+\.\d+\.\d+\.\d+")
_S3_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_S3_RESERVED_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_S3_RESERVED_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
_GCS_BUCKET = re.compile(r"[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]")
_AZURE_CONTAINER = re.compile(r"[a-z0-9](?:-?[a-z0-9]){2,62}")
_AZURE_ACCOUNT_HOST = re.compile(r"([a-z0-9]{3,24})\.(?:dfs|blob)\.core\.windows\.net")
# A first `file:` path segment the URL parser reads as a Windows drive (`C|` becomes `C:`).
_DRIVE_LETTER = re.compile(r"[A-Za-z][:|]")


@dataclass(frozen=True)
class StorageLocation:
    """A place on storage: `scheme` (`file`, `s3`, `gs` or `az`), `bucket` (bucket or
    container, `container@account` for an Azure account named in the URI; "" for `file`)
    and `key`, the path segments below it as stored (never empty, `.` or `..`)."""

    scheme: str
    bucket: str
    key: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.scheme not in SUPPORTED_SCHEMES or self.scheme in _SAME_STORE:
            raise InvalidInputError(_unsupported_scheme())
        if (self.scheme == "file") != (self.bucket == ""):
            raise InvalidInputError("a location has a bucket exactly when it is not local")
        for segment in self.key:
            _check_segment(segment)

    @property
    def uri(self) -> str:
        """The text Lance opens at this location (see the module's docstring)."""
        if self.scheme == "file":
            return "/" + "/".join(self.key)
        container, _, account = self.bucket.partition("@")
        authority = f"{container}@{account}.blob.core.windows.net" if account else container
        path = "/".join(segment.translate(_URI_ESCAPES) for segment in self.key)
        # The URL parser strips spaces from the end of the text, so those are escaped too.
        kept = path.rstrip(" ")
        return f"{self.scheme}://{authority}/{kept}" + "%20" * (len(path) - len(kept))

    def contains(self, other: StorageLocation) -> bool:
        """True when `other` is this location or lies below it."""
        same_store = (self.scheme, self.bucket) == (other.scheme, other.bucket)
        return same_store and other.key[: len(self.key)] == self.key

    def relative_to(self, root: StorageLocation) -> tuple[str, ...] | None:
        """The segments below `root` when strictly inside it, else None."""
        if not root.contains(self) or len(self.key) == len(root.key):
            return None
        return self.key[len(root.key) :]

    def child(self, *names: str) -> StorageLocation:
        """The location below this one named by table or namespace names, one segment each.

        A name is stored as it is (`?`, `#`, `%`, spaces and non-ASCII included); `uri`
        escapes it once where Lance would read it otherwise."""
        return StorageLocation(self.scheme, self.bucket, self.key + tuple(names))


def parse_location(text: str, root: StorageLocation | None = None) -> StorageLocation:
    """The location `text` names, as Lance will open it; a relative path lies below `root`
    (the directory backend's convention) and is refused without one."""
    _check_text(text)
    scheme = _SCHEME.match(text)
    if scheme is None:
        return _parse_path(text, root)
    name = scheme.group()[:-1].lower()
    rest = text[scheme.end() :]
    if name == "file":
        return _parse_file_uri(rest)
    if name not in SUPPORTED_SCHEMES:
        raise InvalidInputError(_unsupported_scheme())
    return _parse_object_uri(_SAME_STORE.get(name, name), rest)


def resolve_stored(text: str, root: StorageLocation | None = None) -> StorageLocation:
    """Where Lance opens a location a catalog already holds (written by this server, whose
    `dir` backend answers `file:` URIs percent-encoded, or by another tool), resolved as Lance
    resolves it: a plain path literally, a URI with its query and fragment dropped and its path
    percent-decoded once, `.` and `..` resolved. InvalidInputError when the result is no place
    a `StorageLocation` can name (an empty object-store segment, a bad bucket name, control
    characters): a caller must then treat the location as nobody's."""
    scheme = _SCHEME.match(text.lstrip())
    if scheme is None:
        if not text.startswith("/") and root is None:
            raise InvalidInputError("a location must be an absolute path or a URI")
        if text.startswith("/"):
            return _below(StorageLocation("file", ""), text[1:].split("/"))
        return _below(root, text.split("/"))
    name = _SAME_STORE.get(scheme.group()[:-1].lower(), scheme.group()[:-1].lower())
    # The URL parser strips white space at a URI's ends (a plain path keeps it).
    rest = re.split(r"[?#]", text.strip()[scheme.end():], maxsplit=1)[0]
    if name == "file":
        rest = re.sub(r"[\t\n\r]", "", rest).replace("\\", "/")
        if rest.startswith("//"):
            rest = "/" + rest[2:].partition("/")[2]  # Lance ignores a file: URI's host
        if not rest.startswith("/"):
            rest = "/" + rest  # `file:r/x`: Lance opens /r/x
        return _below(StorageLocation("file", ""), unquote(rest)[1:].split("/"))
    if name not in SUPPORTED_SCHEMES or not rest.startswith("//"):
        raise InvalidInputError(_unsupported_scheme())
    authority, _, path = rest[2:].partition("/")
    authority = authority.rpartition("@")[2].partition(":")[0] if name != "az" else authority
    bucket = _bucket(name, authority)
    return _below(StorageLocation(name, bucket), unquote(path).split("/"))


def storage_root(root: str | None) -> str:
    """A storage root without a trailing slash; unset means the working directory and a
    local path is made absolute (a catalog must not resolve it against its own directory)."""
    if not root:
        return os.getcwd()
    if _SCHEME.match(root):
        return root.rstrip("/")
    return os.path.abspath(os.path.expanduser(root))


def local_directory(text: str, root: Path | None = None) -> Path | None:
    """The local directory a root or a stored location names, as Lance opens it: a `file:`
    URI resolved (`resolve_stored`), an absolute path as it is, a relative one below `root`
    (the directory backend's convention) or, without one, made absolute (`storage_root`);
    None for object storage. InvalidInputError for a `file:` URI that names no place."""
    scheme = _SCHEME.match(text.lstrip())
    if scheme is None:
        return root / text if root is not None and is_relative(text) else Path(storage_root(text))
    if scheme.group()[:-1].lower() != "file":
        return None
    return Path(resolve_stored(text).uri)


def check_own_path(location: str, own: StorageLocation) -> None:
    """Code 13 unless `location`, a namespace location a client names (a Glue or Hive
    database's), is the namespace's own path `own`: the server puts the namespace's tables
    below it, and other engines do too, so any other place would put their tables in other
    tables' or namespaces' data, or outside the root."""
    if parse_location(location) != own:
        raise InvalidInputError(
            f"a namespace location given through the server must be its own path, {own.uri}")


def is_relative(text: str) -> bool:
    """Whether `text` is a relative path: neither a URI nor an absolute path."""
    return _SCHEME.match(text) is None and not text.startswith("/")


def join_location(base: str, *names: str) -> str:
    return "/".join([base.rstrip("/"), *names])


def _below(base: StorageLocation, segments: list[str]) -> StorageLocation:
    """`base` followed by `segments`, `.` and `..` resolved (never above `base`); an empty
    segment is refused (Lance refuses some, in paths and object stores alike)."""
    if segments and segments[-1] == "":
        segments = segments[:-1]  # one trailing '/'
    key: list[str] = []
    for segment in segments:
        if segment == "":
            raise InvalidInputError("a location must not contain empty segments ('//')")
        if segment == ".":
            continue
        if segment == "..":
            if key:
                key.pop()
            continue
        key.append(segment)
    return base.child(*key)


def _check_text(text: str) -> None:
    if not text:
        raise InvalidInputError("a location must not be empty")
    if any(_is_control(character) for character in text):
        raise InvalidInputError("a location must not contain control or format characters")
    if text != text.strip():
        raise InvalidInputError("a location must not begin or end with white space")
    if "\\" in text:
        raise InvalidInputError("a location must not contain '\\'; separate segments with '/'")
    if "?" in text or "#" in text:
        raise InvalidInputError(
            "a location must not contain '?' or '#': Lance drops a URI's query and fragment"
        )
    if "%" in text:
        raise InvalidInputError(
            "a location must not contain '%': Lance decodes percent-encoding in URIs only"
        )


def _parse_path(text: str, root: StorageLocation | None) -> StorageLocation:
    if text.startswith("/"):
        return StorageLocation("file", "", _segments(text[1:]))
    if root is None:
        raise InvalidInputError("a location must be an absolute path or a URI")
    if text.startswith("~"):
        raise InvalidInputError("a relative location must not begin with '~'")
    return root.child(*_segments(text))


def _parse_file_uri(rest: str) -> StorageLocation:
    if rest.startswith("//"):
        host, slash, path = rest[2:].partition("/")
        if host.lower() not in ("", "localhost"):
            raise InvalidInputError("a file: URI must not name a host other than localhost")
        rest = slash + path
    if not rest.startswith("/"):
        raise InvalidInputError("a file: URI must hold an absolute path: file:///srv/data")
    key = _segments(rest[1:])
    if key and _DRIVE_LETTER.fullmatch(key[0]):
        raise InvalidInputError("a file: URI must not begin with a drive letter such as C:")
    return StorageLocation("file", "", key)


def _parse_object_uri(scheme: str, rest: str) -> StorageLocation:
    if not rest.startswith("//"):
        raise InvalidInputError(f"an object-store location must be written {scheme}://bucket/key")
    authority, _, path = rest[2:].partition("/")
    return StorageLocation(scheme, _bucket(scheme, authority), _segments(path))


def _segments(path: str) -> tuple[str, ...]:
    """The segments of a relative path; one trailing '/' is allowed, as Lance ignores it."""
    if len(path) > 1:
        path = path.removesuffix("/")
    if not path:
        return ()
    segments = tuple(path.split("/"))
    if "" in segments:
        raise InvalidInputError("a location must not contain empty segments ('//')")
    if "." in segments or ".." in segments:
        raise InvalidInputError("a location must not contain '.' or '..' segments")
    return segments


def _bucket(scheme: str, authority: str) -> str:
    if scheme == "az":
        container, at, host = authority.partition("@")
        account = _AZURE_ACCOUNT_HOST.fullmatch(host) if at else None
        if at and account is None:
            raise InvalidInputError(
                "an Azure location names its account as container@account.dfs.core.windows.net"
            )
        if len(container) > 63 or not _AZURE_CONTAINER.fullmatch(container):
            raise InvalidInputError(
                "an Azure container name has 3 to 63 lower-case letters, digits and single "
                "hyphens between them"
            )
        return f"{container}@{account.group(1)}" if account else container
    if "@" in authority or ":" in authority:
        raise InvalidInputError("an object-store location must not name a user or a port")
    valid = _s3_bucket(authority) if scheme == "s3" else _gcs_bucket(authority)
    if not valid:
        rules = "S3's" if scheme == "s3" else "Google Cloud Storage's"
        raise InvalidInputError(f"the bucket name does not follow {rules} bucket naming rules")
    return authority


def _s3_bucket(name: str) -> bool:
    return (
        _S3_BUCKET.fullmatch(name) is not None
        and ".." not in name
        and not _IP_ADDRESS.fullmatch(name)
        and not name.startswith(_S3_RESERVED_PREFIXES)
        and not name.endswith(_S3_RESERVED_SUFFIXES)
    )


def _gcs_bucket(name: str) -> bool:
    parts = name.split(".")
    return (
        _GCS_BUCKET.fullmatch(name) is not None
        and (len(name) <= 63 or "." in name)
        and all(0 < len(part) <= 63 for part in parts)
        and not _IP_ADDRESS.fullmatch(name)
        and not name.startswith("goog")
        and "google" not in name
        and "g00gle" not in name
    )


def _check_segment(segment: str) -> None:
    if (
        not isinstance(segment, str)
        or segment in ("", ".", "..")
        or "/" in segment
        or "\\" in segment
        or any(_is_control(character) for character in segment)
    ):
        raise InvalidInputError(
            "a name must be one path segment: not empty, '.' or '..', without '/', '\\' "
            "or control characters"
        )


def _is_control(character: str) -> bool:
    # Control, format and lone surrogate characters: Lance refuses the first, the others
    # read differently in different tools.
    return unicodedata.category(character) in ("Cc", "Cf", "Cs")


def _unsupported_scheme() -> str:
    schemes = ", ".join(f"{scheme}:" for scheme in SUPPORTED_SCHEMES)
    return f"a location must be a local path or use one of the schemes {schemes}"


def physically_inside(path: StorageLocation, root: StorageLocation) -> bool:
    """On a local root, whether `path` still lies strictly inside it once symbolic links
    (an operator's, in the root or above the table) are resolved: a link must never let a
    table's data, and so a DropTable, reach outside the root."""
    if path.scheme != "file":
        return True
    real_root = os.path.realpath(root.uri).rstrip("/") + "/"
    return os.path.realpath(path.uri).startswith(real_root)
