"""The documentation: the MkDocs site in docs/ builds with no broken link or anchor, and the
Markdown files outside it (README.md, bench/README.md) link only to files and anchors that exist.

The site is checked by MkDocs itself: mkdocs.yml sets every `validation` check (missing pages,
unrecognized and absolute links, missing anchors) to `warn`, and `--strict` fails the build on
any warning. The files outside the site are checked here, with the anchors Python-Markdown's
`toc` extension gives their headings (MkDocs' own rule); a heading a link points at must get
the same anchor from GitHub's rule, so the link works where the file is read.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from dataclasses import fields
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import markdown
import pytest

from app.settings import Settings
from tests.support.doc_blocks import blocks_run_by

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE_THE_SITE = [ROOT / "README.md", ROOT / "bench" / "README.md", ROOT / "bench" / "PROFILE.md"]


def build_site(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner, not a warning
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
         "--site-dir", str(site)],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )


def test_the_site_builds_with_no_broken_link_or_anchor(tmp_path: Path) -> None:
    result = build_site(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "configuration" / "index.html").exists()


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    """The validation settings are what make the build fail: break a link and an anchor."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    page = tmp_path / "docs" / "getting-started.md"
    page.write_text(page.read_text() + "\n[a](no-such-page.md) [b](security.md#no-such-anchor)\n")
    result = build_site(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-page.md" in result.stderr
    assert "does not contain an anchor '#no-such-anchor'" in result.stderr


# --- Markdown files outside the site -----------------------------------------------------


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def _rendered(path: Path) -> markdown.Markdown:
    md = markdown.Markdown(extensions=["toc", "tables", "fenced_code"])
    md.convert(path.read_text())
    return md


def links(path: Path) -> list[str]:
    """Every link target in the file, as rendered (code blocks and code spans hold none)."""
    parser = _Links()
    parser.feed(markdown.markdown(path.read_text(), extensions=["tables", "fenced_code"]))
    return parser.hrefs


def github_anchor(name: str) -> str:
    """GitHub's anchor of a heading whose rendered text is `name` (before de-duplication)."""
    text = html.unescape(re.sub(r"<[^>]+>", "", name)).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(path: Path) -> dict[str, str]:
    """Anchor (MkDocs' rule) -> GitHub's anchor of the same heading."""
    found: dict[str, str] = {}

    def walk(tokens: list[dict]) -> None:
        for token in tokens:
            found[token["id"]] = github_anchor(token["name"])
            walk(token["children"])

    walk(_rendered(path).toc_tokens)
    return found


def broken_links(path: Path) -> list[str]:
    problems = []
    for href in links(path):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or href.startswith("mailto:"):
            continue
        target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if not target.exists():
            problems.append(f"{path.name}: {href}: no file {target}")
            continue
        if not parts.fragment:
            continue
        if target.suffix != ".md":
            problems.append(f"{path.name}: {href}: an anchor in a file that is not Markdown")
            continue
        anchors = headings(target)
        if parts.fragment not in anchors:
            problems.append(f"{path.name}: {href}: {target.name} has no heading "
                            f"#{parts.fragment}")
        elif anchors[parts.fragment] != parts.fragment:
            problems.append(f"{path.name}: {href}: GitHub names that heading "
                            f"#{anchors[parts.fragment]}; reword it so both agree")
    return problems


@pytest.mark.parametrize("path", OUTSIDE_THE_SITE, ids=lambda p: str(p.relative_to(ROOT)))
def test_files_outside_the_site_link_only_to_what_exists(path: Path) -> None:
    assert links(path) or path.name == "PROFILE.md"
    assert broken_links(path) == []


def test_the_link_checker_finds_a_broken_file_and_a_broken_anchor(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## Deploying with `helm`\n")
    readme = tmp_path / "README.md"
    readme.write_text("# Top\n\n## Two words\n\n"
                      "[ok](docs/page.md#deploying-with-helm) [ok](#two-words) "
                      "[gone](docs/gone.md) [bad](docs/page.md#deploying) [bad](#three)\n\n"
                      "`[code](docs/gone.md)` is not a link\n")
    problems = broken_links(readme)
    assert [problem.split(": ")[1] for problem in problems] == [
        "docs/gone.md", "docs/page.md#deploying", "#three"]


def test_an_anchor_github_spells_differently_is_refused(tmp_path: Path) -> None:
    """`(--impl glue)` is `impl-glue` in MkDocs but `--impl-glue` on GitHub."""
    (tmp_path / "page.md").write_text("# Glue backend (`--impl glue`)\n")
    readme = tmp_path / "README.md"
    readme.write_text("[glue](page.md#glue-backend-impl-glue)\n")
    assert "GitHub names that heading" in broken_links(readme)[0]


# --- What the pages say agrees with the code and with the README --------------------------


def test_every_server_setting_has_a_row_on_the_configuration_page() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    rows = set(re.findall(r"^\| `([a-z_]+)` \| `LANCE_ADAPTER_", page, re.MULTILINE))
    assert rows == {field.name for field in fields(Settings)}


def _blocks(text: str, heading: str) -> list[str]:
    start = text.index(heading)
    level = heading.split(" ")[0]
    end = text.find(f"\n{level} ", start + len(heading))
    return re.findall(r"```\w*\n.*?```", text[start:end if end > 0 else None], re.DOTALL)


def test_the_getting_started_examples_are_the_readme_examples_test_readme_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    page = (ROOT / "docs" / "getting-started.md").read_text()
    assert _blocks(page, "## Using it\n") == _blocks(readme, "## Using it\n")
    assert len(_blocks(readme, "## Using it\n")) == 3


def test_the_configuration_example_is_the_one_test_readme_starts() -> None:
    pattern = re.compile(r"```yaml\n# adapter\.yaml.*?```", re.DOTALL)
    readme = pattern.findall((ROOT / "README.md").read_text())
    page = pattern.findall((ROOT / "docs" / "configuration.md").read_text())
    assert readme and readme == page


def test_the_client_examples_run_against_a_server(tmp_path: Path) -> None:
    """The examples of docs/clients.md that name this test, in order against one fresh
    server."""
    from tests.support.adapter import running_server

    examples = [block.code for block in blocks_run_by(
        "tests/test_docs_site.py", "test_the_client_examples_run_against_a_server")]
    assert len(examples) >= 4
    with running_server("dir", {"root": str(tmp_path)}) as url:
        for code in examples:
            code = code.replace("http://127.0.0.1:2333", url)
            result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                    text=True, timeout=300, check=False)
            assert result.returncode == 0, f"{code}\n{result.stderr}"
