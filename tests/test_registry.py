"""The catalog backends are registered with lance_namespace's own registry: any Lance program
that imports `backends` builds them with `lance_namespace.connect(alias, properties)`, and the
server builds its backend through that same registry."""

from __future__ import annotations

import re
from pathlib import Path

import lance_namespace
import pytest
from lance.namespace import DirectoryNamespace

import backends
from backends import CATALOG_IMPLS, IMPLS, ConfigurationError, load_namespace, resolve_impl
from backends.directory import DirectoryBackend
from tests.support.common import run_python

# Properties each catalog backend is built with; none of them is contacted on construction.
OFFLINE_PROPERTIES = {
    "hive2": {"uri": "thrift://127.0.0.1:1"},
    "hive3": {"uri": "thrift://127.0.0.1:1"},
    "glue": {"region": "us-east-1", "root": "s3://bucket/lance"},
    "unity": {"endpoint": "http://127.0.0.1:1", "root": "s3://bucket/lance"},
    "iceberg": {"endpoint": "http://127.0.0.1:1", "root": "s3://bucket/lance"},
}


def test_every_served_alias_is_a_catalog_backend_or_dir() -> None:
    assert list(IMPLS) == ["dir", *CATALOG_IMPLS]
    assert set(OFFLINE_PROPERTIES) == set(CATALOG_IMPLS)


def test_lance_namespace_connect_builds_our_backends_by_alias() -> None:
    """In a fresh interpreter (the registry is global: another library imported later, such as
    lance-namespace-impls, may register the same aliases for its own classes)."""
    script = (
        "import backends, lance_namespace, sys\n"
        "backends.register_aliases()\n"
        f"properties = {OFFLINE_PROPERTIES!r}\n"
        "for impl, props in properties.items():\n"
        "    built = lance_namespace.connect(impl, props)\n"
        "    assert type(built) is backends.resolve_impl(impl), (impl, type(built))\n"
        "    print(impl, type(built).__module__)\n"
    )
    result = run_python(script, cwd=Path(backends.__file__).parents[1])
    assert result.returncode == 0, result.stderr
    modules = dict(line.split() for line in result.stdout.splitlines())
    assert set(modules) == set(CATALOG_IMPLS)
    assert all(module.startswith("backends.") for module in modules.values())


@pytest.mark.parametrize("impl", list(CATALOG_IMPLS))
def test_the_server_builds_its_own_class_whoever_holds_the_alias(impl: str) -> None:
    lance_namespace.register_namespace_impl(impl, f"lance_namespace_impls.{impl}.Other")
    try:
        assert type(load_namespace(impl, OFFLINE_PROPERTIES[impl]).backend) is resolve_impl(impl)
    finally:
        lance_namespace.register_namespace_impl(impl, CATALOG_IMPLS[impl])


def test_the_registration_is_explicit() -> None:
    """In a fresh interpreter `connect("hive2")` fails, also after `import backends` (which
    registers nothing), until `backends.register_aliases()`."""
    script = (
        "import lance_namespace as ln\n"
        "import backends\n"
        "props = {'uri': 'thrift://127.0.0.1:1'}\n"
        "try:\n"
        "    ln.connect('hive2', props)\n"
        "except ValueError:\n"
        "    print('unknown before')\n"
        "backends.register_aliases()\n"
        "print(type(ln.connect('hive2', props)).__name__)\n"
    )
    result = run_python(script, cwd=Path(backends.__file__).parents[1])
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["unknown before", "Hive2Namespace"]


def test_dir_stays_pylances_for_connect_and_is_ours_for_the_server(tmp_path: Path) -> None:
    native = lance_namespace.connect("dir", {"root": str(tmp_path)})
    assert type(native) is DirectoryNamespace
    assert type(load_namespace("dir", {"root": str(tmp_path)}).backend) is DirectoryBackend
    assert resolve_impl("dir") is DirectoryBackend


@pytest.mark.parametrize(
    ("impl", "properties", "message"),
    [
        ("nosuchcatalog", {}, "unknown impl 'nosuchcatalog' (use one of dir, hive2"),
        ("no_such_module.Namespace", {}, "cannot import impl 'no_such_module.Namespace'"),
        ("backends.directory.NoSuchClass", {}, "cannot configure impl"),
        ("hive2", {"uri": "http://127.0.0.1:9083"}, "metastore uri must be thrift://"),
        ("unity", {"root": "s3://b/l"}, "missing required property 'endpoint'"),
        ("lance.namespace.DirectoryNamespace", {}, "root"),
    ],
)
def test_a_backend_that_cannot_be_built_is_one_configuration_error(
    impl: str, properties: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)) as raised:
        load_namespace(impl, properties)
    assert message in str(raised.value)
    assert "Failed to construct" not in str(raised.value)  # connect's wrapper is unwrapped


def test_the_documented_example_builds_a_backend_by_alias() -> None:
    """docs/backends/plugins.md's example, as written, in a fresh interpreter."""
    from tests.support.doc_blocks import blocks_run_by

    (block,) = blocks_run_by("tests/test_registry.py",
                             "test_the_documented_example_builds_a_backend_by_alias")
    built = run_python(block.code + "\nprint(type(ns).__module__, type(ns).__name__)")
    assert built.returncode == 0, built.stderr
    assert built.stdout.split() == ["backends.hive.namespace", "Hive2Namespace"]
