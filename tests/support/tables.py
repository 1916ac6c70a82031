"""Backends and helpers shared by the table-operation tests: the metadata-only plug-in (every
table operation generic) and the `dir` backend (mostly native), both on files under tmp_path."""

from __future__ import annotations

from pathlib import Path

import lance
from lance import LanceDataset
from lance_namespace import CreateNamespaceRequest, DescribeTableRequest, LanceNamespace

from backends import load_namespace

STAND_IN = "tests.support.plugin_stand_ins.MetadataOnlyNamespace"
BACKENDS = {"metadata-only": STAND_IN, "dir": "dir"}


def backend(kind: str, root: Path) -> LanceNamespace:
    """The backend `kind` on `root`, with the namespaces cat and cat$sub."""
    namespace = load_namespace(BACKENDS[kind], {"root": str(root)})
    namespace.create_namespace(CreateNamespaceRequest(id=["cat"]))
    namespace.create_namespace(CreateNamespaceRequest(id=["cat", "sub"]))
    return namespace


def location(namespace: LanceNamespace, table_id: list[str]) -> str:
    return namespace.describe_table(DescribeTableRequest(id=table_id)).location


def read_back(namespace: LanceNamespace, table_id: list[str]) -> LanceDataset:
    """The table as pylance itself reads it at its location: the reference of every check."""
    return lance.dataset(location(namespace, table_id))
