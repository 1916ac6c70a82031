"""The catalog client libraries are extras (`[glue]`, `[hive]`, `[vending]`, `[all]`): a server
without one refuses what needs it with one sentence naming the install command, and serves
everything else.

A missing package is stood in for by `NOT_INSTALLED`, a meta-path finder put first in a fresh
interpreter that finds the named top-level modules nowhere, as Python does when their package
is not installed; the interpreter then runs `lance-adapter` itself (`app.cli.main`).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.support.cli import cli_environment, wait_until_serving
from tests.support.common import free_port, run_python

# The stand-in for packages that are not installed: the first argument names their modules.
NOT_INSTALLED = '''
import sys
from importlib.abc import MetaPathFinder


class NotInstalled(MetaPathFinder):
    def __init__(self, names):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


sys.meta_path.insert(0, NotInstalled(frozenset(sys.argv.pop(1).split(","))))
'''
# `lance-adapter ARGS` without the packages of the first argument.
CLI_WITHOUT = NOT_INSTALLED + "from app.cli import main\nraise SystemExit(main(sys.argv[1:]))\n"

BOTO3 = "boto3,botocore"
PYICEBERG = "pyiceberg,hive_metastore"
EVERY_CLIENT = "boto3,botocore,pyiceberg,hive_metastore,thrift"
ROLE = "vending.role-arn=arn:aws:iam::123456789012:role/lance"


def install(extra: str) -> str:
    return f"pip install 'lance-namespace-adapter[{extra}]'"


@pytest.mark.parametrize(
    ("missing", "arguments", "sentence"),
    [
        (BOTO3, ["serve", "--impl", "glue", "--prop", "region=us-east-1"],
         f"the glue backend needs boto3: {install('glue')}"),
        (BOTO3, ["config", "--impl", "glue"], f"the glue backend needs boto3: {install('glue')}"),
        (PYICEBERG, ["serve", "--impl", "hive2", "--prop", "uri=thrift://127.0.0.1:1"],
         f"the hive2 backend needs pyiceberg[hive]: {install('hive')}"),
        # pyiceberg installed without its own `hive` extra: the Thrift runtime is missing.
        ("thrift", ["serve", "--impl", "hive3", "--prop", "uri=thrift://127.0.0.1:1"],
         f"the hive3 backend needs pyiceberg[hive]: {install('hive')}"),
        (BOTO3, ["serve", "--prop", "vending.enabled=true", "--prop", ROLE],
         f"credential vending with vending.role-arn needs boto3: {install('vending')}"),
    ],
)
def test_what_needs_a_missing_extra_is_one_sentence_naming_it_and_exit_2(
    tmp_path: Path, missing: str, arguments: list[str], sentence: str
) -> None:
    result = run_python(CLI_WITHOUT, missing, *arguments, "--port", "0",
                        env=cli_environment(), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"lance-adapter: {sentence}"]
    assert "Traceback" not in result.stderr + result.stdout


@contextmanager
def serving_without_clients(directory: Path, *arguments: str) -> Iterator[str]:
    """`lance-adapter serve ARGUMENTS` in `directory` without any catalog client; its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", CLI_WITHOUT, EVERY_CLIENT, "serve", *arguments,
         "--port", str(port)],
        cwd=directory, env=cli_environment(), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, process)
        yield url
    finally:
        process.terminate()
        process.communicate(timeout=60)


def test_dir_serves_without_any_catalog_client(tmp_path: Path) -> None:
    with serving_without_clients(tmp_path, "--prop", "root=tables") as url:
        created = httpx.post(f"{url}/v1/namespace/made/create", json={})
        listed = httpx.get(f"{url}/v1/namespace/$/list")
    assert created.status_code == 200, created.text
    assert listed.json()["namespaces"] == ["made"]
    assert (tmp_path / "tables").is_dir()


@pytest.mark.parametrize(
    "arguments",
    [
        # Relaying the catalog's credentials needs no STS, so no boto3.
        ["--impl", "unity", "--prop", "endpoint=http://127.0.0.1:1", "--prop",
         "vending.enabled=true"],
        ["--impl", "iceberg", "--prop", "endpoint=http://127.0.0.1:1"],
    ],
    ids=["unity-relaying", "iceberg"],
)
def test_the_rest_catalog_backends_start_without_any_catalog_client(
    tmp_path: Path, arguments: list[str]
) -> None:
    with serving_without_clients(tmp_path, *arguments) as url:
        assert httpx.get(f"{url}/healthz").status_code == 200


def test_registering_every_alias_imports_no_catalog_client() -> None:
    """The registry names each backend by its class path: importing `backends`, the server and
    the workers' factory, and registering the aliases, imports no catalog client; the backend
    that needs none is built."""
    script = NOT_INSTALLED + (
        "import app.cli, app.workers, backends, lance_namespace\n"
        "backends.register_aliases()\n"
        "unity = lance_namespace.connect('unity', {'endpoint': 'http://127.0.0.1:1'})\n"
        "print(type(unity).__name__)\n"
        "try:\n"
        "    backends.load_namespace('glue', {'region': 'us-east-1'})\n"
        "except backends.ConfigurationError as error:\n"
        "    print(error)\n"
    )
    result = run_python(script, EVERY_CLIENT, cwd=Path(__file__).parents[1])
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "UnityNamespace", f"the glue backend needs boto3: {install('glue')}"
    ]
