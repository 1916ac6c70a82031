"""`lance-adapter check URL`, the conformance kit, run as the console script: it passes
against this server on every backend of the contract suite, and names the gaps of pylance's
own RestAdapter with a non-zero exit."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator

import lance.namespace
import pytest

from tests.support.cli import CLI, cli_environment
from tests.support.common import free_port
from tests.support.contract_backends import ContractBackend


def run_check(url: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, "check", url, *arguments], capture_output=True, text=True,
                          timeout=300, env=cli_environment())


def failed_operations(output: str) -> list[str]:
    return [line.split("  FAIL")[0].strip() for line in output.splitlines() if "  FAIL" in line]


def test_the_kit_passes_against_this_server(backend: ContractBackend) -> None:
    under = backend.fresh_namespace()[:-1]  # the levels the backend needs made first

    result = run_check(backend.url, "--under", "$".join(under))

    assert result.returncode == 0, result.stdout + result.stderr
    assert failed_operations(result.stdout) == []
    assert result.stdout.rstrip().endswith("27 of 27 passed")


@pytest.fixture
def rest_adapter() -> Iterator[str]:
    """pylance's own Lance REST server (lance.namespace.RestAdapter) on a directory."""
    with tempfile.TemporaryDirectory() as root:
        port = free_port()
        adapter = lance.namespace.RestAdapter("dir", {"root": root}, host="127.0.0.1", port=port)
        adapter.start()  # returns once it listens
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            adapter.stop()


def test_the_kit_reports_the_gaps_of_pylances_rest_adapter(rest_adapter: str) -> None:
    result = run_check(rest_adapter)

    assert result.returncode == 1
    assert failed_operations(result.stdout) == [
        "ListAllTables", "POST /<OperationId> routes", "RenameTable"]
    assert "rename_table not implemented" in result.stdout
    assert "CreateTable                    pass" in result.stdout
    assert result.stdout.rstrip().endswith("24 of 27 passed")
