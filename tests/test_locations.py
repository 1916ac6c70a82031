"""`backends.core.locations` agrees with Lance: every location the parser accepts is the place
Lance writes to, locally and on S3 (moto), and every name `child` is given lands in its own
directory or prefix. Hand-written cases pin each accepted form and each refusal."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import boto3
import lance
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lance_namespace import InvalidInputError
from moto.moto_server.threaded_moto_server import ThreadedMotoServer

from backends.core.locations import StorageLocation, parse_location, resolve_stored

BUCKETS = ("bkt", "other-bkt")
TABLE = pa.table({"a": [1]})
# Bounded runs: the module must stay well under two minutes on two loaded cores.
PROPERTY = settings(max_examples=300, deadline=None, database=None)
CHILD_PROPERTY = settings(max_examples=60, deadline=None, database=None)
# The same examples every run, so that how many are accepted never varies.
STORED_PROPERTY = settings(max_examples=300, deadline=None, database=None, derandomize=True)
# Every accepted S3 text is a Lance write to moto (about 0.1 s); its path pieces are those
# the 300 local examples draw. 150 examples still give either branch 50 or more (of the 30
# and 20 asserted).
S3_PROPERTY = settings(PROPERTY, max_examples=150)
STORED_S3_PROPERTY = settings(STORED_PROPERTY, max_examples=150)


# ---------------------------------------------------------------- fixtures and helpers


@dataclass
class Sandbox:
    """A local tree `base/a/b/root`; Lance runs with `root` as its current directory."""

    base: Path
    root: Path

    def reset(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)
        self.root.mkdir(parents=True)

    def tables(self) -> set[Path]:
        """Every directory under `base` that holds a Lance table (its `_versions`)."""
        return {Path(d) for d, dirs, _ in os.walk(self.base) if "_versions" in dirs}

    def files(self) -> list[Path]:
        return [Path(d) / f for d, _, files in os.walk(self.base) for f in files]


@dataclass
class S3:
    client: object
    options: dict[str, str]

    def objects(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for bucket in self.client.list_buckets()["Buckets"]:
            pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket["Name"])
            keys = [item["Key"] for page in pages for item in page.get("Contents", [])]
            if keys:
                found[bucket["Name"]] = keys
        return found

    def make_bucket(self, name: str) -> None:
        """Make bucket `name` unless it is there: hostile pieces can join into a valid name
        of another bucket (`s3:/` + `` + `/data` is `s3://data`)."""
        names = {bucket["Name"] for bucket in self.client.list_buckets()["Buckets"]}
        if name not in names:
            self.client.create_bucket(Bucket=name)

    def clear(self) -> None:
        for bucket, keys in self.objects().items():
            for start in range(0, len(keys), 1000):
                chunk = [{"Key": key} for key in keys[start : start + 1000]]
                self.client.delete_objects(Bucket=bucket, Delete={"Objects": chunk})


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    base = Path(os.path.realpath(tmp_path_factory.mktemp("locations")))
    box = Sandbox(base=base, root=base / "a" / "b" / "root")
    box.reset()
    return box


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        credentials = {"aws_access_key_id": "k", "aws_secret_access_key": "s"}
        client = boto3.client("s3", endpoint_url=url, region_name="us-east-1", **credentials)
        for bucket in BUCKETS:
            client.create_bucket(Bucket=bucket)
        options = {"aws_endpoint": url, "allow_http": "true", "aws_region": "us-east-1"}
        yield S3(client, options | credentials)
    finally:
        server.stop()


def refused(text: str, root: StorageLocation | None = None) -> bool:
    try:
        parse_location(text, root)
    except InvalidInputError:
        return True
    return False


def write_locally(sandbox: Sandbox, text: str) -> set[Path]:
    """Lance writes a table at `text` (cwd: the sandbox's root); the table directories."""
    sandbox.reset()
    with contextlib.chdir(sandbox.root):
        lance.write_dataset(TABLE, text)
    return sandbox.tables()


def write_to_s3(s3: S3, sandbox: Sandbox, text: str) -> dict[str, list[str]]:
    """Lance writes a table at `text`; the objects written, by bucket. A local directory
    stands as current directory so a URI Lance falls back to reading as a path shows up."""
    s3.clear()
    sandbox.reset()
    with contextlib.chdir(sandbox.root):
        lance.write_dataset(TABLE, text, storage_options=s3.options)
    assert sandbox.files() == [], f"{text!r} was written to local files"
    return s3.objects()


def assert_local_table_at(sandbox: Sandbox, location: StorageLocation) -> None:
    """Lance's files lie exactly below `location`, and nowhere else."""
    place = Path(location.uri)
    assert sandbox.tables() == {place}
    outside = [f for f in sandbox.files() if not f.is_relative_to(place)]
    assert outside == []


def assert_s3_table_at(written: dict[str, list[str]], location: StorageLocation) -> None:
    prefix = "".join(f"{segment}/" for segment in location.key)
    assert list(written) == [location.bucket]
    assert all(key.startswith(prefix) for key in written[location.bucket])
    assert any(key.startswith(f"{prefix}_versions/") for key in written[location.bucket])


# ---------------------------------------------------------------- accepted forms


def _file(*key: str) -> StorageLocation:
    return StorageLocation("file", "", key)


ACCEPTED = {
    "/srv/data/t": _file("srv", "data", "t"),
    "/srv/data/t/": _file("srv", "data", "t"),
    "/": _file(),
    "/srv/x y/été/*/~/a:b/C|/日本": _file("srv", "x y", "été", "*", "~", "a:b", "C|", "日本"),
    "file:/srv/x": _file("srv", "x"),
    "file:///srv/x": _file("srv", "x"),
    "FILE:///srv/x": _file("srv", "x"),
    "File:/srv/x/": _file("srv", "x"),
    "file://localhost/srv/x": _file("srv", "x"),
    "file://LocalHost/srv/x": _file("srv", "x"),
    "file:///": _file(),
    "s3://bkt/a/b": StorageLocation("s3", "bkt", ("a", "b")),
    "S3://bkt/a/b/": StorageLocation("s3", "bkt", ("a", "b")),
    "s3://bkt": StorageLocation("s3", "bkt"),
    "s3://bkt/": StorageLocation("s3", "bkt"),
    "s3://my.bucket-1/x y/é": StorageLocation("s3", "my.bucket-1", ("x y", "é")),
    "s3://" + "b" * 63 + "/k": StorageLocation("s3", "b" * 63, ("k",)),
    "gs://my_bucket/a": StorageLocation("gs", "my_bucket", ("a",)),
    "GS://a.b.c/x": StorageLocation("gs", "a.b.c", ("x",)),
    "az://ctr/a": StorageLocation("az", "ctr", ("a",)),
    "abfss://ctr-1/a": StorageLocation("az", "ctr-1", ("a",)),
    "abfss://ctr@acct.dfs.core.windows.net/a": StorageLocation("az", "ctr@acct", ("a",)),
    "az://ctr@acct.blob.core.windows.net/a": StorageLocation("az", "ctr@acct", ("a",)),
}


@pytest.mark.parametrize("text", ACCEPTED)
def test_accepted_forms(text: str) -> None:
    assert parse_location(text) == ACCEPTED[text]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("t", ("r", "t")),
        ("t/x", ("r", "t", "x")),
        ("t/x/", ("r", "t", "x")),
        ("t/a:b/~", ("r", "t", "a:b", "~")),
    ],
)
def test_relative_locations_lie_below_the_root(text: str, key: tuple[str, ...]) -> None:
    root = parse_location("s3://bkt/r")
    assert parse_location(text, root) == StorageLocation("s3", "bkt", key)
    assert parse_location(text, _file("srv", "r")) == _file("srv", *key)


# ---------------------------------------------------------------- refused forms

REFUSED = {
    # text: a word of the one sentence that explains the refusal
    "": "empty",
    " /srv/x": "white space",
    "/srv/x ": "white space",
    "/srv/x\n": "control",
    "/srv/\x00x": "control",
    "file:///srv/x\t": "control",
    "/srv/a\u200bb": "format",
    "/srv/a\\b": "separate segments",
    "file:///srv/a\\..\\..\\x": "separate segments",
    "s3://bkt/x?y=1": "query",
    "s3://bkt/x?/../../other": "query",
    "s3://bkt/x#/../y": "fragment",
    "file:///srv/x#f": "fragment",
    "/srv/x?y": "query",
    "s3://bkt/%2e%2e/x": "percent",
    "s3://bkt/a%2Fb": "percent",
    "file:///srv/a%2Fb": "percent",
    "/srv/%41": "percent",
    "s3://b%6Bt/x": "percent",
    "s3://bkt/x%25": "percent",
    "/srv/../x": "'..'",
    "/srv/./x": "'..'",
    "s3://bkt/a/../b": "'..'",
    "file:///srv/..": "'..'",
    "gs://bkt/.": "'..'",
    "/srv//x": "empty segments",
    "//srv/x": "empty segments",
    "s3://bkt/a//b": "empty segments",
    "s3://bkt//": "empty segments",
    "file:////srv/x": "empty segments",
    "s3://*/x": "S3's",
    "s3://b*t/x": "S3's",
    "s3://Bkt/x": "S3's",
    "s3://b_kt/x": "S3's",
    "s3://bk/x": "S3's",
    "s3://" + "b" * 64 + "/x": "S3's",
    "s3://192.168.1.1/x": "S3's",
    "s3://-bkt/x": "S3's",
    "s3://bkt-/x": "S3's",
    "s3://b..kt/x": "S3's",
    "s3://xn--bkt/x": "S3's",
    "s3://bkt--ol-s3/x": "S3's",
    "s3:///x": "S3's",
    "s3://": "S3's",
    "s3://user@bkt/x": "user",
    "s3://bkt:80/x": "port",
    "gs://Bkt/x": "Google",
    "gs://goog-data/x": "Google",
    "gs://my-google-data/x": "Google",
    "gs://_bkt/x": "Google",
    "gs://10.0.0.1/x": "Google",
    "gs://" + "b" * 64 + "/x": "Google",
    "az://a_b/x": "Azure container",
    "az://a--b/x": "Azure container",
    "az://ab/x": "Azure container",
    "az://Ctr/x": "Azure container",
    "az://ctr-/x": "Azure container",
    "az://c.tr/x": "Azure container",
    "az://$root/x": "Azure container",
    "abfss://ctr@acct.example.com/x": "account",
    "abfss://ctr@/x": "account",
    "s3a://bkt/x": "file:, s3:, gs:, az:, abfss:",
    "S3A://bkt/x": "file:, s3:, gs:, az:, abfss:",
    "abfs://ctr/x": "file:, s3:, gs:, az:, abfss:",
    "http://host/x": "file:, s3:, gs:, az:, abfss:",
    "memory:///x": "file:, s3:, gs:, az:, abfss:",
    "s3+ddb://bkt/x": "file:, s3:, gs:, az:, abfss:",
    "C:/x": "file:, s3:, gs:, az:, abfss:",
    "s3:bkt/x": "s3://bucket/key",
    "s3:/bkt/x": "s3://bucket/key",
    "file:srv/x": "absolute",
    "file:": "absolute",
    "file://": "absolute",
    "file://otherhost/srv/x": "host",
    "file://127.0.0.1/srv/x": "host",
    "file://a b/srv/x": "host",
    "file:/C|/x": "drive",
    "file:///c:/x": "drive",
    "t/x": "absolute path or a URI",
    "x:y/t": "file:, s3:, gs:, az:, abfss:",
}


@pytest.mark.parametrize("text", REFUSED)
def test_refused_forms(text: str) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(REFUSED[text])):
        parse_location(text)


def test_refusals_are_one_sentence_without_the_text() -> None:
    for text in REFUSED:
        if not text:
            continue
        with pytest.raises(InvalidInputError, match=re.escape(REFUSED[text])) as raised:
            parse_location(text)
        message = str(raised.value)
        assert message.count(". ") == 0 and "\n" not in message
        # No echo of the text (a server path, for a root); short texts are words of rules.
        assert len(text) < 8 or text not in message


def test_relative_location_beginning_with_a_tilde_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="'~'"):
        parse_location("~/x", parse_location("/srv"))


# ---------------------------------------------------------------- the location's methods


def test_contains_and_relative_to() -> None:
    root = parse_location("s3://bkt/r")
    table = parse_location("s3://bkt/r/t")
    sibling = parse_location("s3://bkt/rt")
    assert root.contains(table) and root.contains(root) and not table.contains(root)
    assert not root.contains(sibling) and not sibling.contains(root)
    assert table.relative_to(root) == ("t",)
    assert root.relative_to(root) is None and sibling.relative_to(root) is None
    assert not root.contains(parse_location("s3://other-bkt/r/t"))
    assert not root.contains(parse_location("gs://bkt/r/t"))
    assert not root.contains(parse_location("/bkt/r/t"))
    assert not parse_location("az://ctr/r").contains(
        parse_location("az://ctr@acct.blob.core.windows.net/r"))


@pytest.mark.parametrize(
    ("location", "uri"),
    [
        (_file("srv", "x"), "/srv/x"),
        (_file(), "/"),
        (_file("srv").child("?", "#", "%2e%2e", "a b"), "/srv/?/#/%2e%2e/a b"),
        (StorageLocation("s3", "bkt"), "s3://bkt/"),
        (
            StorageLocation("s3", "bkt", ("r",)).child("?", "#", "%2F", "é ", "a b "),
            "s3://bkt/r/%3F/%23/%252F/é /a b%20",
        ),
        (StorageLocation("az", "ctr@acct", ("r",)), "az://ctr@acct.blob.core.windows.net/r"),
    ],
)
def test_uri(location: StorageLocation, uri: str) -> None:
    assert location.uri == uri


@pytest.mark.parametrize(
    "name", ["", ".", "..", "a/b", "/", "a\\b", "a\x00", "a\nb", "\u200b", "\ud800"]
)
def test_child_refuses_what_is_not_one_segment(name: str) -> None:
    with pytest.raises(InvalidInputError, match="one path segment"):
        parse_location("s3://bkt/r").child(name)


BUCKET_WHEN_NOT_LOCAL = "a location has a bucket exactly when it is not local"
# A StorageLocation's scheme is the stored one: abfss: is parsed into az:.
KNOWN_SCHEMES = "a location must be a local path or use one of the schemes"


@pytest.mark.parametrize(
    ("scheme", "bucket", "why"),
    [("s3", "", BUCKET_WHEN_NOT_LOCAL), ("file", "bkt", BUCKET_WHEN_NOT_LOCAL),
     ("abfss", "ctr", KNOWN_SCHEMES), ("s3a", "bkt", KNOWN_SCHEMES)],
)
def test_inconsistent_locations_cannot_be_made(scheme: str, bucket: str, why: str) -> None:
    with pytest.raises(InvalidInputError, match=why):
        StorageLocation(scheme, bucket)


# ---------------------------------------------------------------- why the refusals: Lance


LOCAL_FACTS = {
    # text ({root}: the sandbox's root) -> where Lance puts the table, relative to the root
    "file://{root}/a/%2e%2e/x": "x",
    "file://{root}/a%2Fb": "a/b",
    "file://{root}/x?y=/../z": "x",
    "file://{root}/x#/../z": "x",
    "file://{root}/a\\b": "a/b",
    "file://otherhost{root}/x": "x",
    "file:{root}/x": "x",
    "FILE://{root}/x": "x",
    "{root}/x?y": "x?y",
    "{root}/%2e%2e": "%2e%2e",
    "{root}/a\\b": "a\\b",
    "{root}/a/../x": "x",
    "{root}/a//x/": "a/x",
    "s3://bad host/x": "s3:/bad host/x",
    "{root}/x ": "x ",
    "file://{root}/x ": "x",
}


@pytest.mark.parametrize("text", LOCAL_FACTS)
def test_lance_reads_local_forms_so(sandbox: Sandbox, text: str) -> None:
    tables = write_locally(sandbox, text.format(root=sandbox.root))
    assert tables == {sandbox.root / LOCAL_FACTS[text]}


S3_FACTS = {
    "s3://bkt/r/%2e%2e/x": ("bkt", "x"),
    "s3://bkt/r/a%2Fb": ("bkt", "r/a/b"),
    "s3://bkt/r/x%3F": ("bkt", "r/x?"),
    "s3://bkt/r/x?q=/../../y": ("bkt", "r/x"),
    "s3://bkt/r/x#/../../y": ("bkt", "r/x"),
    "s3://user@bkt:99/r": ("bkt", "r"),
    "s3://bkt/r/x\\y": ("bkt", "r/x\\y"),
    "S3://bkt/r/./x/": ("bkt", "r/x"),
    "s3://bkt/r/x  ": ("bkt", "r/x"),
    "s3://bkt/r/x%20": ("bkt", "r/x "),
}


@pytest.mark.parametrize("text", S3_FACTS)
def test_lance_reads_s3_forms_so(s3: S3, sandbox: Sandbox, text: str) -> None:
    bucket, prefix = S3_FACTS[text]
    written = write_to_s3(s3, sandbox, text)
    assert list(written) == [bucket]
    assert {key.rsplit("/_versions/", 1)[0] for key in written[bucket] if "/_versions/" in key} == {
        prefix
    }


OPENED_FACTS = {
    # text -> the path Lance looks for (it opens, never writes, these: they lie outside)
    "file:nonexistent-xq": "/nonexistent-xq",
    "file:/C|/nonexistent-xq": "/C:/nonexistent-xq",
    "~/nonexistent-xq": os.path.expanduser("~/nonexistent-xq"),
}


@pytest.mark.parametrize("text", OPENED_FACTS)
def test_lance_looks_for_these_forms_outside_so(text: str) -> None:
    with pytest.raises(ValueError, match="was not found") as raised:
        lance.dataset(text)
    assert re.search(r"Dataset at path (.*) was not found", str(raised.value))[1] == (
        OPENED_FACTS[text].lstrip("/")
    )


def test_lance_knows_no_s3a() -> None:
    with pytest.raises(OSError, match="s3a"):
        lance.write_dataset(TABLE, "s3a://bkt/x")


# ---------------------------------------------------------------- gs and az: requested paths


def _requested(text: str, options: dict[str, str]) -> str:
    """The first request Lance makes for a table at `text` (nothing listens: it fails)."""
    try:
        lance.dataset(text, storage_options=options)
    except (OSError, ValueError) as error:  # Lance raises either, by the failing step
        found = re.search(r"GET (http://\S+)", str(error))
        assert found, str(error)
        return found.group(1)
    raise AssertionError(f"{text!r} opened")


def _requested_place(url: str) -> tuple[str, str]:
    """(the bucket or account/container, the key) a list request for `_versions` names."""
    parts = urlsplit(url)
    prefix = parse_qs(parts.query)["prefix"][0]
    assert prefix.endswith("/_versions/")
    return unquote(parts.path).strip("/"), prefix.removesuffix("/_versions/")


def test_gs_and_az_open_what_the_parser_says(tmp_path: Path) -> None:
    account = tmp_path / "account.json"
    closed = "http://127.0.0.1:9"
    fields = {"gcs_base_url": closed, "disable_oauth": True, "client_email": "", "private_key": ""}
    account.write_text(json.dumps(fields | {"private_key_id": ""}))
    gcs = {"google_service_account": str(account)}
    azure = {
        "azure_storage_account_name": "devstoreaccount1",
        "azure_storage_account_key": "a2V5",
        "azure_storage_use_emulator": "true",
        "client_max_retries": "0",
    }
    cases = {
        parse_location("gs://my_bkt/r").child("?", "#", "%2e%2e"): ("my_bkt", "r/?/#/%2e%2e"),
        parse_location("GS://a.b/r/x/"): ("a.b", "r/x"),
        parse_location("az://ctr/r").child("?", "%", "é"): ("devstoreaccount1/ctr", "r/?/%/é"),
        parse_location("abfss://ctr/r/x"): ("devstoreaccount1/ctr", "r/x"),
        parse_location("abfss://ctr@acct.dfs.core.windows.net/r"): ("acct/ctr", "r"),
        parse_location("az://ctr@acct.blob.core.windows.net/r"): ("acct/ctr", "r"),
    }

    def place(location: StorageLocation) -> tuple[str, str]:
        options = gcs if location.scheme == "gs" else azure
        return _requested_place(_requested(location.uri, options))

    with ThreadPoolExecutor(len(cases)) as pool:  # each failure takes Lance ~2 s of retries
        seen = dict(zip(cases, pool.map(place, cases), strict=True))
    assert seen == cases
    for location, (_, key) in cases.items():
        assert "/".join(location.key) == key


# ---------------------------------------------------------------- properties: hostile text

SEGMENT_PIECES = [
    "t", "x y", "été", "日本", "..", ".", "", "%2e%2e", "%2E", "%2F", "%25", "%",
    "?x=/../", "#/../", "?", "#", "?x=1", "#f", "\\", "\\..", "*", "~", "a:b", "C|", "C:", " ",
    "\t", "\u200b", "-",
]
GOOD_SEGMENTS = ["t", "data", "x y", "été", "~", "*", "a:b", "C|"]
BUCKET_PIECES = [
    "bkt", "other-bkt", "Bkt", "b_kt", "*", "b?", "bk", "b" * 64, "192.168.1.1", "bkt.",
    "user@bkt", "bkt:80", "b%6Bt", "", "bkt\\", "bk t", "other-bkt/..",
]


def mixed(good: list[str], hostile: list[str], plain: int = 1) -> st.SearchStrategy[str]:
    """`plain` draws of good pieces to one hostile draw: both the accepting and the refusing
    branch get examples."""
    return weighted(st.sampled_from(good), st.sampled_from(hostile), plain)


def weighted(
    good: st.SearchStrategy[str], hostile: st.SearchStrategy[str], plain: int
) -> st.SearchStrategy[str]:
    """`good` `plain` times as often as `hostile` (one_of would count a repeated branch once)."""
    return st.integers(0, plain).flatmap(lambda draw: good if draw else hostile)


def segments() -> st.SearchStrategy[str]:
    pieces = st.lists(st.sampled_from(SEGMENT_PIECES), min_size=1, max_size=3)
    return weighted(st.sampled_from(GOOD_SEGMENTS), pieces.map("".join), 2)


def paths() -> st.SearchStrategy[str]:
    tails = st.sampled_from(["", "", "/", "//"])
    body = st.lists(segments(), min_size=1, max_size=3).map("/".join)
    return st.tuples(body, tails).map("".join)


LOCAL_PREFIXES = [
    "", "file:", "file://", "FILE://", "File:", "FILE:///", "file://localhost",
    "file://LOCALHOST", "file://otherhost", "file:/", "relative", "file:relative",
]


@st.composite
def local_texts(draw: st.DrawFn, root: str) -> str:
    prefix = draw(mixed(["", "file://", "file:", "relative"], LOCAL_PREFIXES))
    path = draw(paths())
    relative = path.lstrip("/") or "t"  # a leading '/' would make it absolute, outside
    if prefix == "relative":
        return relative
    if prefix == "file:relative":
        return "file:" + relative
    return f"{prefix}{root}/{path}"


@st.composite
def s3_texts(draw: st.DrawFn) -> str:
    scheme = draw(mixed(["s3://", "S3://"], ["s3a://", "S3A://", "s3:", "s3:/", "s3:///"], 2))
    bucket = draw(mixed(list(BUCKETS), BUCKET_PIECES, 2))
    path = draw(st.one_of(st.just(""), paths()))
    return f"{scheme}{bucket}/{path}" if path or draw(st.booleans()) else f"{scheme}{bucket}"


def _run_property(check: Callable[[], None], counts: Counter[str]) -> None:
    check()
    # Neither branch may be empty: a parser refusing everything would pass vacuously.
    assert counts["accepted"] >= 30, counts
    assert counts["refused"] >= 30, counts


def test_lance_writes_local_text_where_the_parser_says(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts: Counter[str] = Counter()
    root = parse_location(str(sandbox.root))
    # Lance expands a leading '~': a home inside the sandbox shows where that goes.
    monkeypatch.setenv("HOME", str(sandbox.base / "home"))

    @PROPERTY
    @given(text=local_texts(str(sandbox.root)))
    def check(text: str) -> None:
        try:
            location = parse_location(text, root)
        except InvalidInputError:
            counts["refused"] += 1
            return
        counts["accepted"] += 1
        # Texts are built below the sandbox's root; nothing outside it is ever written.
        assert root.contains(location), text
        write_locally(sandbox, text)
        assert_local_table_at(sandbox, location)

    _run_property(check, counts)


def test_lance_writes_s3_text_where_the_parser_says(s3: S3, sandbox: Sandbox) -> None:
    counts: Counter[str] = Counter()

    @S3_PROPERTY
    @given(text=s3_texts())
    def check(text: str) -> None:
        try:
            location = parse_location(text)
        except InvalidInputError:
            counts["refused"] += 1
            return
        counts["accepted"] += 1
        assert location.scheme == "s3", text
        s3.make_bucket(location.bucket)
        assert_s3_table_at(write_to_s3(s3, sandbox, text), location)

    _run_property(check, counts)


def test_lance_writes_a_stored_local_text_where_resolve_stored_says(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A location a catalog holds is resolved as Lance resolves it (percent-decoded once,
    query and fragment dropped, dot segments resolved), or refused as nobody's."""
    counts: Counter[str] = Counter()
    root = parse_location(str(sandbox.root))
    monkeypatch.setenv("HOME", str(sandbox.base / "home"))

    @STORED_PROPERTY
    @given(text=local_texts(str(sandbox.root)))
    def check(text: str) -> None:
        try:
            location = resolve_stored(text, root)
        except InvalidInputError:
            counts["refused"] += 1
            return
        if not root.contains(location) or text.startswith("~") or "\t" in text:
            counts["outside"] += 1  # never written: it would land outside the sandbox
            return
        counts["accepted"] += 1
        write_locally(sandbox, text)
        assert_local_table_at(sandbox, location)

    check()
    assert counts["accepted"] >= 20 and counts["refused"] >= 20, counts


def test_lance_writes_a_stored_s3_text_where_resolve_stored_says(
    s3: S3, sandbox: Sandbox
) -> None:
    counts: Counter[str] = Counter()

    @STORED_S3_PROPERTY
    @given(text=s3_texts())
    def check(text: str) -> None:
        try:
            location = resolve_stored(text)
        except InvalidInputError:
            counts["refused"] += 1
            return
        counts["accepted"] += 1
        try:
            written = write_to_s3(s3, sandbox, text)
        except OSError:
            counts["lance refused"] += 1
            return
        assert_s3_table_at(written, location)

    check()
    assert counts["accepted"] - counts["lance refused"] >= 20, counts


# ---------------------------------------------------------------- properties: child names

NAME_PIECES = [
    "?", "#", "%", "%25", "%2e%2e", "%2F", "%3F", " ", "é", "e\u0301", "日本", "~", "*", ".", "..",
]


def names() -> st.SearchStrategy[str]:
    text = st.text(
        st.characters(blacklist_categories=("Cc", "Cf", "Cs"), blacklist_characters="/\\"),
        min_size=1,
        max_size=8,
    )
    return st.lists(st.one_of(st.sampled_from(NAME_PIECES), text), min_size=1, max_size=3).map(
        "".join
    ).filter(lambda name: name not in (".", ".."))


def test_child_names_land_in_their_own_directory(sandbox: Sandbox) -> None:
    root = parse_location(str(sandbox.root))

    @CHILD_PROPERTY
    @given(pair=st.lists(names(), min_size=2, max_size=2, unique=True))
    def check(pair: list[str]) -> None:
        sandbox.reset()
        for name in pair:
            assert root.child(name).relative_to(root) == (name,)
            with contextlib.chdir(sandbox.root):
                lance.write_dataset(TABLE, root.child(name).uri, mode="create")
        assert sandbox.tables() == {sandbox.root / name for name in pair}
        for name in pair:
            assert lance.dataset(root.child(name).uri).count_rows() == 1

    check()


def test_child_names_land_in_their_own_prefix(s3: S3, sandbox: Sandbox) -> None:
    root = parse_location("s3://bkt/r")

    @CHILD_PROPERTY
    @given(pair=st.lists(names(), min_size=2, max_size=2, unique=True))
    def check(pair: list[str]) -> None:
        s3.clear()
        for name in pair:
            lance.write_dataset(TABLE, root.child(name).uri, storage_options=s3.options)
        written = s3.objects()
        assert list(written) == ["bkt"]
        tables = {key.rsplit("/_versions/", 1)[0] for key in written["bkt"] if "/_versions/" in key}
        assert tables == {f"r/{name}" for name in pair}
        assert all(key.split("/")[1] in pair for key in written["bkt"])

    check()


@PROPERTY
@given(keys=st.lists(names(), max_size=3))
def test_parse_reads_back_every_uri_or_refuses_it(keys: list[str]) -> None:
    """Never another location: the uri reads back as the location, or it is refused (it
    holds '%', '?' or '#', or ends in white space)."""
    for root in (parse_location("/srv"), parse_location("s3://bkt/r"), parse_location("az://ctr")):
        location = root.child(*keys)
        uri = location.uri
        if any(character in uri for character in "%?#") or uri != uri.strip():
            assert refused(uri)
        else:
            assert parse_location(uri) == location
        relative = "/".join(keys)
        assert not keys or refused(relative, root) or parse_location(relative, root) == location
