"""Every backend of the contract suite, served by a real adapter, with its layout: where a
table lives, which namespace RenameTable moves it to, and what the backend cannot do.

Each backend follows its own conventions: `dir` and the metadata-only plug-in nest `cat$sub`,
hive2 and glue use one database, hive3 `hive$database`, unity `catalog$schema`, iceberg
`warehouse$namespace`. Every layout has fresh names, so tests sharing an adapter (and xdist
workers) never see each other's namespaces.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from lance_namespace import CreateNamespaceRequest

from tests.contract.clients import OfficialClient
from tests.glue_support import glue_properties
from tests.iceberg_fixture import running_iceberg_fixture
from tests.server import running_server
from tests.table_operations_support import STAND_IN
from tests.table_steps import TableLayout
from tests.unity_fixture import API, running_unity_fixture

NAMESPACE_PROPERTIES = {"owner": "contract"}


@dataclass(frozen=True)
class Conventions:
    """How a backend arranges namespaces and what it refuses with code 0."""

    label: str  # how its code-0 messages name it
    # The levels above a new namespace that exist already or are made by `prepare` (hive3's
    # catalog, a Unity catalog, an Iceberg warehouse); `token` makes names unique.
    fixed: Callable[[str], list[str]] = lambda token: []
    nested: bool = False  # the table lives in a child of the rename target (dir's `cat$sub`)
    alters_namespaces: bool = True
    alters_tables: bool = True
    cascades: bool = True

    def layout(self, token: str) -> TableLayout:
        base = self.fixed(token)
        if self.nested:
            target = [*base, f"cat_{token}"]
            return TableLayout(namespace=[*target, "sub"], rename_target=target)
        return TableLayout(
            namespace=[*base, f"db_{token}"], rename_target=[*base, f"moved_{token}"]
        )

    def namespace(self, token: str, name: str) -> list[str]:
        return [*self.fixed(token), f"{name}_{token}"]


CONVENTIONS = {
    "dir": Conventions(
        "DirectoryNamespace",
        nested=True,
        alters_namespaces=False,
        alters_tables=False,
        cascades=False,
    ),
    "metadata-only": Conventions(
        "MetadataOnlyNamespace",
        nested=True,
        alters_namespaces=False,
        alters_tables=False,
        cascades=False,
    ),
    "hive2": Conventions("Hive2Namespace"),
    "hive3": Conventions("Hive3Namespace", fixed=lambda token: ["hive"]),
    "glue": Conventions("glue", cascades=False),
    "unity": Conventions(
        "unity", fixed=lambda token: [f"cat_{token}"], alters_tables=False, cascades=False
    ),
    "iceberg": Conventions("iceberg", fixed=lambda token: ["wh"], cascades=False),
}
BACKEND_NAMES = tuple(CONVENTIONS)


@dataclass(frozen=True)
class ContractBackend:
    """A backend served by a running adapter at `url`."""

    name: str
    url: str
    conventions: Conventions
    # Makes what the backend needs before namespaces named with `token` can be created.
    prepare: Callable[[str], None] = lambda token: None

    def client(self) -> OfficialClient:
        return OfficialClient(self.url)

    def new_layout(self) -> TableLayout:
        """A fresh table layout whose namespaces exist, with NAMESPACE_PROPERTIES."""
        token = uuid.uuid4().hex[:10]
        self.prepare(token)
        layout = self.conventions.layout(token)
        client = self.client()
        for namespace in sorted((layout.namespace, layout.rename_target), key=len):
            client.create_namespace(
                CreateNamespaceRequest(id=namespace, properties=NAMESPACE_PROPERTIES)
            )
        return layout

    def fresh_namespace(self, name: str = "ns") -> list[str]:
        """The id of a namespace that does not exist yet (its fixed levels do)."""
        token = uuid.uuid4().hex[:10]
        self.prepare(token)
        return self.conventions.namespace(token, name)


@contextlib.contextmanager
def serve_backend(
    name: str, request: pytest.FixtureRequest, root: Path
) -> Iterator[ContractBackend]:
    conventions = CONVENTIONS[name]
    with contextlib.ExitStack() as stack:
        prepare: Callable[[str], None] = lambda token: None  # noqa: E731
        if name in ("dir", "metadata-only"):
            impl, properties = ("dir" if name == "dir" else STAND_IN), {"root": str(root)}
        elif name in ("hive2", "hive3"):
            metastore = request.getfixturevalue("hive_metastore")
            impl, properties = name, {"uri": metastore.uri, "root": str(root)}
        elif name == "glue":
            moto = request.getfixturevalue("moto_endpoint")
            impl, properties = name, glue_properties(moto.url, root=str(root))
        elif name == "unity":
            unity = stack.enter_context(running_unity_fixture())
            impl, properties = name, {"endpoint": unity.url, "root": str(root)}
            prepare = _unity_catalog_creator(unity.url)
        else:
            (root / "catalog").mkdir()
            iceberg = stack.enter_context(running_iceberg_fixture(root / "catalog"))
            properties = {"endpoint": iceberg.url, "root": str(root / "lance"), "warehouses": "wh"}
            impl = name
        url = stack.enter_context(running_server(impl, properties))
        yield ContractBackend(name, url, conventions, prepare)


def _unity_catalog_creator(unity_url: str) -> Callable[[str], None]:
    """Unity catalogs are made in Unity itself (the backend creates schemas only)."""

    def create_catalog(token: str) -> None:
        body = {"name": f"cat_{token}", "properties": NAMESPACE_PROPERTIES}
        httpx.post(f"{unity_url}{API}/catalogs", json=body, timeout=30).raise_for_status()

    return create_catalog
