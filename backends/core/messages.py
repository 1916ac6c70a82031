"""Error messages as they may leave the server: without the native libraries' source
locations and debug dumps (`readable`, `without_source_location`) and without the server's
own paths (`without_paths`). Shared by the backends' error translation and the server's error
answers, logs and readiness reasons."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from urllib.parse import quote

# Where the native libraries say which source line raised an error: of no use to a client
# or an operator reading one line.
SOURCE_LOCATION = re.compile(r",?\s*(?:/[^\s,:]+)+\.rs:\d+(?::\d+)?")


def without_source_location(message: str) -> str:
    return SOURCE_LOCATION.sub("", message)


# The native libraries' debug dumps of their errors: `Kind { source: "text", location:
# Location { file: ..., line: 1, column: 2 } }`. Their text is kept, the structure dropped.
_DUMP_LOCATION = re.compile(r",?\s*(?:location: Location \{[^{}]*\}|backtrace: \w+(?= \}))")
_DUMP_QUOTED = re.compile(r'\b[A-Z]\w* \{ (?:source|message): "((?:[^"\\]|\\.)*)",? \}')
_DUMP_FIELD_NOT_FOUND = re.compile(
    r'(?:\b[A-Z]\w* \{ source: )?(?:SchemaError\()?FieldNotFound \{ field: Column \{ '
    r'relation: [^{}]*?, name: "((?:[^"\\]|\\.)*)" \}, valid_fields: \[.*?\] \}'
    r'(?:, (?:None|Some\("[^"]*"\)))?\)?(?: \})?', re.DOTALL
)
_DUMP_FIELD_NAME = re.compile(
    r'FieldNotFound \{ source: FieldNotFoundError \{ field_name: "((?:[^"\\]|\\.)*)", '
    r"candidates: \[.*?\] \} \}", re.DOTALL
)
_SCHEMA_DUMP = re.compile(r" in schema Field\(.*?(?=\\?\"|$)", re.DOTALL)


def _unescaped(text: str) -> str:
    return text.replace('\\"', '"').replace("\\n", " ").replace("\\\\", "\\")


def readable(message: str) -> str:
    """`message` without the native libraries' debug dumps: their text, in one line."""
    cleaned = _DUMP_LOCATION.sub("", message)
    cleaned = _SCHEMA_DUMP.sub(" in the table", cleaned)
    for dump in (_DUMP_FIELD_NOT_FOUND, _DUMP_FIELD_NAME):
        cleaned = dump.sub(lambda found: f"no column named {_unescaped(found[1])}", cleaned)
    while (unwrapped := _DUMP_QUOTED.sub(lambda found: _unescaped(found[1]), cleaned)) != cleaned:
        cleaned = unwrapped
    cleaned = _DANGLING_LABEL.sub("", _without_structures(cleaned))
    return " ".join(cleaned.split())


# Any other debug structure (`Schema { fields: [Field { ... }] }`) is the library's internals,
# not what happened: dropped whole, with the label left hanging before it.
_STRUCTURE_START = re.compile(r"\b[A-Z]\w* ?\{")
_DANGLING_LABEL = re.compile(r"(?:,?\s*location)?:\s*(?=$|[,.;]\s)")


def _without_structures(message: str) -> str:
    kept: list[str] = []
    position = 0
    while found := _STRUCTURE_START.search(message, position):
        kept.append(message[position:found.start()])
        position = _after_closing_brace(message, found.end() - 1)
    kept.append(message[position:])
    return "".join(kept)


def _after_closing_brace(text: str, opening: int) -> int:
    """The index after the brace closing the one at `opening` (quoted text skipped); the
    end of `text` when a truncated dump never closes it."""
    depth, quoted, index = 0, False, opening
    while index < len(text):
        character = text[index]
        if quoted:
            if character == "\\":
                index += 1
            elif character == '"':
                quoted = False
        elif character == '"':
            quoted = True
        elif character == "{":
            depth += 1
        elif character == "}":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return len(text)


HIDDEN_PATH = "<path>"


def _spellings(path: str) -> set[str]:
    """How a message may spell the server path `path`: as a URI, with and without its leading
    slash (object stores print local paths without it), percent-encoded per segment or whole."""
    scheme, separator, rest = path.partition("://")
    if separator and scheme != "file":
        core = rest.strip("/")
        forms = {f"{scheme}://{core}", core}
    else:
        core = (rest if separator else path).strip("/")
        forms = {f"file:///{core}", f"file:/{core}", f"/{core}", core}
    if "/" not in core:  # one segment without its slash is a plain word, not a path
        forms.discard(core)
    encoded = {quote(form, safe=safe) for form in forms for safe in ("/:", "")}
    return {form for form in forms | encoded if form.strip("/")}


@functools.lru_cache(maxsize=256)
def _paths_pattern(paths: frozenset[str]) -> re.Pattern[str] | None:
    forms = {form for path in paths for form in _spellings(path)}
    if not forms:
        return None
    alternatives = "|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True))
    return re.compile(rf"(?<![\w%.-])(?:{alternatives})(?![\w.-])")


def without_paths(message: str, paths: Iterable[str]) -> str:
    """`message` with every spelling of each of `paths` replaced by <path> (what follows,
    inside the path, is kept: a table's own layout): the one way server paths leave an error
    message."""
    wanted = frozenset(
        spelling for path in paths if path
        for spelling in {path, os.path.realpath(path) if path.startswith("/") else path}
    )
    pattern = _paths_pattern(wanted)
    return message if pattern is None else pattern.sub(HIDDEN_PATH, message)
