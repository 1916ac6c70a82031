"""The README's "Using it" examples, run in order as written against a fresh server."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.adapter import running_server
from tests.support.cli import start_up_line

README = Path(__file__).resolve().parents[1] / "README.md"
EXAMPLE_ADDRESS = "127.0.0.1:2333"


def using_it_examples() -> list[tuple[str, str]]:
    """(language, code) of each fenced block of the "Using it" section, in order."""
    text = README.read_text()
    start = text.index("## Using it\n")
    section = text[start:text.index("\n## ", start)]
    return re.findall(r"```(bash|python)\n(.*?)```", section, re.DOTALL)


def run_example(language: str, code: str, address: str) -> str:
    code = code.replace(EXAMPLE_ADDRESS, address)
    command = ["bash", "-euo", "pipefail", "-c", code] if language == "bash" else [
        sys.executable, "-c", code]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{language} example failed:\n{code}\n{result.stderr}"
    return result.stdout


def test_the_examples_run_top_to_bottom(tmp_path: Path) -> None:
    examples = using_it_examples()
    assert [language for language, _ in examples] == ["bash", "python", "python"]
    with running_server("dir", {"root": str(tmp_path)}) as url:
        outputs = [run_example(language, code, url.removeprefix("http://"))
                   for language, code in examples]
        again = [run_example(language, code, url.removeprefix("http://"))
                 for language, code in examples]
    # A reader may run them twice: the same answers, but that `shop` is now listed too.
    assert again[1:] == outputs[1:]
    assert again[0] == outputs[0].replace('["sales"]', '["sales","shop"]')
    curl, python_client, generated_client = outputs
    assert '{"namespaces":["sales"]}' in curl
    assert '"code":4' in curl
    assert python_client.splitlines()[0] == "3"
    assert "orders" not in python_client and "item" in python_client
    assert generated_client.strip() == "['sales', 'shop']"


@pytest.mark.parametrize("comment", ["# {\"namespaces\":[\"sales\"]}", "# 3",
                                     "# ['sales', 'shop']"])
def test_the_examples_state_the_output_they_print(comment: str) -> None:
    assert any(comment in code for _, code in using_it_examples())


def test_the_configuration_example_starts_the_server(tmp_path: Path) -> None:
    """The example's metastore host does not resolve here: the server starts all the same."""
    text = README.read_text()
    example = re.search(r"```yaml\n(# adapter\.yaml.*?)```", text, re.DOTALL)
    assert example, "the README has no adapter.yaml example"
    config = tmp_path / "adapter.yaml"
    config.write_text(example.group(1))
    line = start_up_line("--config", str(config))
    assert line["message"].startswith("serving impl 'hive2' (Hive2Namespace { uri: "
                                      "'thrift://metastore:9083'")
