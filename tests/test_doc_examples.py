"""The examples of the docs pages that no other test runs, run as written against servers the
test starts (each block names its test here: `tests/support/doc_blocks.py`); the address the
docs use, 127.0.0.1:2333 (2335 on the compose page), becomes the test server's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import lance
import pyarrow as pa

from tests.support.adapter import running_server
from tests.support.cli import CLI, ROOT, start_adapter
from tests.support.doc_blocks import Block, blocks_run_by

THIS = "tests/test_doc_examples.py"
DOCUMENTED_ADDRESSES = ("http://127.0.0.1:2333", "http://127.0.0.1:2335")


def _blocks(test: str) -> list[Block]:
    blocks = blocks_run_by(THIS, test)
    assert blocks, f"no documented block names {THIS}::{test}"
    return blocks


def _at(code: str, url: str) -> str:
    for address in DOCUMENTED_ADDRESSES:
        code = code.replace(address, url)
    return code


def _run(block: Block, url: str, cwd: Path, timeout: float = 300) -> str:
    """The block's bash or Python, with `lance-adapter` on the PATH; its standard output."""
    code = _at(block.code, url).replace(".venv/bin/", f"{Path(sys.executable).parent}/")
    command = (["bash", "-euo", "pipefail", "-c", code] if block.language in ("bash", "sh")
               else [sys.executable, "-c", code])
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("LANCE_ADAPTER_", "PYSPARK_", "SPARK_"))}
    environment.update(PATH=f"{Path(CLI).parent}:{environment['PATH']}", PYTHONPATH=str(ROOT))
    result = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True,
                            timeout=timeout, check=False)
    assert result.returncode == 0, f"{block} failed:\n{code}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_the_conformance_kit_example_passes_against_a_server(tmp_path: Path) -> None:
    (block,) = _blocks("test_the_conformance_kit_example_passes_against_a_server")
    with running_server("dir", {"root": str(tmp_path)}) as url:
        output = _run(block, url, tmp_path)
    passed, total = re.fullmatch(r"(\d+) of (\d+) passed", output.splitlines()[-1]).groups()
    assert passed == total and int(total) >= 27, output


def test_the_compose_pages_client_example_runs_against_a_server(tmp_path: Path) -> None:
    (block,) = _blocks("test_the_compose_pages_client_example_runs_against_a_server")
    with running_server("dir", {"root": str(tmp_path)}) as url:
        assert _run(block, url, tmp_path).strip() == "[]"  # demo made, holding no table
        assert _run(block, url, tmp_path).strip() == "[]"  # and again: exist_ok


def test_the_maintain_example_runs_on_a_config_file(tmp_path: Path) -> None:
    (block,) = _blocks("test_the_maintain_example_runs_on_a_config_file")
    root = tmp_path / "root"
    for _ in range(8):  # maintenance_min_small_fragments, at its default
        lance.write_dataset(pa.table({"id": [1, 2]}), str(root / "orders.lance"), mode="append")
    (tmp_path / "adapter.yaml").write_text(f"impl: dir\nproperties:\n  root: {root}\n")
    lines = [json.loads(line) for line in _run(block, "", tmp_path).splitlines()]
    assert [line["table"] for line in lines] == ["orders"]
    assert lines[0]["fragments_before"] == 8 and lines[0]["fragments_after"] == 1


def test_the_access_example_grants_what_it_says(tmp_path: Path) -> None:
    """docs/security.md's access settings as written, with its tokens file here."""
    (block,) = _blocks("test_the_access_example_grants_what_it_says")
    tokens = tmp_path / "tokens"
    tokens.write_text("platform platform-token\netl etl-token\nbi bi-token\n")
    config = tmp_path / "adapter.yaml"
    config.write_text(block.code.replace("/etc/lance/tokens", str(tokens)))
    adapter = start_adapter(tmp_path, "--config", str(config), "--impl", "dir",
                            "--prop", f"root={tmp_path / 'root'}")
    try:
        def create(namespace: str, token: str) -> int:
            return httpx.post(f"{adapter.url}/v1/namespace/{namespace}/create", json={},
                              headers={"Authorization": f"Bearer {token}"}).status_code

        assert create("sales", "etl-token") == 403  # write@sales: not admin
        assert create("sales", "platform-token") == 200
        assert create("sales$eu", "etl-token") == 403
        assert create("sales$eu", "bi-token") == 403
        assert create("other", "no-such-token") == 401
        listed = httpx.get(f"{adapter.url}/v1/namespace/$/list",
                           headers={"Authorization": "Bearer bi-token"})
        assert listed.json()["namespaces"] == ["sales"]
    finally:
        adapter.stop()


def test_the_spark_pages_examples_write_and_read_through_a_server(tmp_path: Path) -> None:
    """docs/spark.md's set-up, namespace, writing and reading examples, in order, as one
    Python program (the reading example continues the writing one's session)."""
    blocks = _blocks("test_the_spark_pages_examples_write_and_read_through_a_server")
    python = [block for block in blocks if block.language == "python"]
    assert len(python) >= 4 and all(b.language in ("python", "bash") for b in blocks)
    with running_server("dir", {"root": str(tmp_path / "root")}) as url:
        for block in blocks:
            if block.language == "bash":
                _run(block, url, tmp_path)
        program = Block("docs/spark.md", python[0].line, "python",
                        "\n".join(block.code for block in python), "")
        output = _run(program, url, tmp_path, timeout=600)
    assert "trip_id" in output and "fare" in output  # df.show() of the read


def test_the_spark_pipeline_example_runs_as_written(tmp_path: Path) -> None:
    """Its own embedded server, then one the test started, from the checkout's root."""
    (block,) = _blocks("test_the_spark_pipeline_example_runs_as_written")
    with running_server("dir", {"root": str(tmp_path / "root")}) as url:
        output = _run(block, url, ROOT, timeout=900)
    assert output.count("trips with 2+ passengers:") == 2
