"""Every backend of the contract suite (`tests/contract/`), served by a real adapter, with its
layout: where a table lives, which namespace RenameTable moves it to, and what the backend cannot
do. The session fixture `backend` runs each contract test once per name of `CONVENTIONS`.

Two capabilities only some entries have: `fail_next_catalog_write`, where the catalog is a
stand-in that fails on demand (unity), and `forwarding`, for the backends that can forward the
caller's bearer token to their catalog (unity and iceberg), served by two more adapters in auth
mode `forward` over a stand-in catalog that checks bearer tokens (unity's own; for iceberg, whose
reference server accepts any caller, the Iceberg stand-in).

Each backend follows its own conventions: `dir` and the metadata-only plug-in nest `cat$sub`,
hive2 and glue use one database, hive3 `hive$database`, unity `catalog$schema`, iceberg
`warehouse$namespace`. Every layout has fresh names, so tests sharing an adapter (and xdist
workers) never see each other's namespaces.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from lance_namespace import CreateNamespaceRequest

from tests.support.adapter import running_server
from tests.support.glue import glue_properties
from tests.support.iceberg_rest_server import shared_iceberg_rest_server
from tests.support.iceberg_stand_in import running_iceberg_stand_in
from tests.support.official_client import OfficialClient
from tests.support.rest_catalog_stand_in import StandInControl
from tests.support.table_steps import StepLayout
from tests.support.tables import STAND_IN
from tests.support.unity_stand_in import API, running_unity_stand_in

NAMESPACE_PROPERTIES = {"owner": "contract"}
STATIC_TOKEN = "static-token"  # the token the backends of `Forwarding` are configured with


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
    forwards_tokens: bool = False  # can send the caller's bearer token to its catalog
    # Whether RegisterTable keeps the properties it is given (dir's native RegisterTable drops
    # them: tests/contract/test_registration.py holds that as an expected failure).
    keeps_registered_properties: bool = True
    # The catalog of a server of several this backend is (its ids lead with the name).
    catalog: str | None = None

    @property
    def labels(self) -> tuple[str, ...]:
        """What a code-0 message names: the backend, or, for what a server of several
        catalogs refuses itself (an operation that may span catalogs), that server."""
        return (self.label, "several catalogs") if self.catalog else (self.label,)

    def operations_body(self) -> dict[str, list[str]]:
        """ListOperations' body asking what this backend serves (its catalog's, when one)."""
        return {"id": [self.catalog]} if self.catalog else {}

    def layout(self, token: str) -> StepLayout:
        base = self.fixed(token)
        if self.nested:
            target = [*base, f"cat_{token}"]
            return StepLayout(namespace=[*target, "sub"], rename_target=target)
        return StepLayout(
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
        keeps_registered_properties=False,
    ),
    "metadata-only": Conventions(
        "MetadataOnlyNamespace",
        nested=True,
        alters_namespaces=False,
        alters_tables=False,
        cascades=False,
        keeps_registered_properties=False,
    ),
    "hive2": Conventions("Hive2Namespace"),
    "hive3": Conventions("Hive3Namespace", fixed=lambda token: ["hive"]),
    "glue": Conventions("glue", cascades=False),
    "unity": Conventions(
        "unity",
        fixed=lambda token: [f"cat_{token}"],
        alters_tables=False,
        cascades=False,
        forwards_tokens=True,
    ),
    "iceberg": Conventions(
        "iceberg", fixed=lambda token: ["wh"], cascades=False, forwards_tokens=True
    ),
}
# The same backends as catalogs of one server of several (`catalogs`), reached through its one
# URL: each catalog's ids lead with the catalog's name (`backends.federation`).
FEDERATED = ("dir", "glue", "hive2", "iceberg")
CONVENTIONS.update({
    f"federated-{name}": dataclasses.replace(
        CONVENTIONS[name], catalog=name, forwards_tokens=False,
        fixed=lambda token, inner=CONVENTIONS[name].fixed, catalog=name: [
            catalog, *inner(token)])
    for name in FEDERATED
})
BACKEND_NAMES = tuple(CONVENTIONS)
FORWARDING_BACKENDS = tuple(name for name in CONVENTIONS if CONVENTIONS[name].forwards_tokens)


def _no_preparation(token: str) -> None:
    return None


@dataclass(frozen=True)
class Forwarding:
    """Two adapters in auth mode `forward` (any bearer token is let through to the backend) over
    a catalog stand-in that checks tokens (`control.required_token`) and logs what it gets: at
    `forwarding_url` the backend sends the caller's token instead of STATIC_TOKEN, at
    `static_url` (forwarding off) STATIC_TOKEN whatever the caller sends."""

    forwarding_url: str
    static_url: str
    control: StandInControl
    prepare: Callable[[str], None] = _no_preparation


@dataclass(frozen=True)
class ContractBackend:
    """A backend served by a running adapter at `url`."""

    name: str
    url: str
    conventions: Conventions
    # Makes what the backend needs before namespaces named with `token` can be created.
    prepare: Callable[[str], None]
    # Makes the catalog answer its next table write with HTTP 500 (None: it cannot).
    fail_next_catalog_write: Callable[[], None] | None = None
    forwarding: Forwarding | None = None  # None: the backend does not forward tokens

    def client(self) -> OfficialClient:
        return OfficialClient(self.url)

    def new_layout(self) -> StepLayout:
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


@dataclass(frozen=True)
class Catalog:
    """What the adapter is started with for a backend, and how its namespaces are prepared."""

    impl: str
    properties: dict[str, str]
    prepare: Callable[[str], None] = _no_preparation
    fail_next_write: Callable[[], None] | None = None
    forwarding: Forwarding | None = None


def _forwarding(
    stack: contextlib.ExitStack, impl: str, properties: dict[str, str], control: StandInControl,
    prepare: Callable[[str], None] = _no_preparation,
) -> Forwarding:
    """The two adapters of `Forwarding` for backend `impl` on `properties`."""
    urls = [
        stack.enter_context(running_server(
            impl, {**properties, "auth_token": STATIC_TOKEN, "forward_caller_token": forwards},
            auth_mode="forward", auth_forward_unchecked=forwards == "false",
        ))
        for forwards in ("true", "false")
    ]
    return Forwarding(*urls, control=control, prepare=prepare)


def _directory_catalog(name: str, root: Path) -> Catalog:
    return Catalog("dir" if name == "dir" else STAND_IN, {"root": str(root)})


def _hive_catalog(name: str, request: pytest.FixtureRequest, root: Path) -> Catalog:
    """hive2 on the real HMS 2.3.10, hive3 on the real HMS 3.1.3 with catalogs
    (tests/support/hive_metastore_real.py)."""
    fixture = "hive_metastore" if name == "hive2" else "hive3_metastore"
    metastore = request.getfixturevalue(fixture)
    return Catalog(name, {"uri": metastore.uri, "root": str(root)})


def _glue_catalog(request: pytest.FixtureRequest, root: Path) -> Catalog:
    moto = request.getfixturevalue("moto_endpoint")
    return Catalog("glue", glue_properties(moto.url, root=str(root)))


def _unity_catalog(stack: contextlib.ExitStack, root: Path) -> Catalog:
    unity = stack.enter_context(running_unity_stand_in())

    def create_catalog(token: str) -> None:
        """Unity catalogs are made in Unity itself (the backend creates schemas only)."""
        body = {"name": f"cat_{token}", "properties": NAMESPACE_PROPERTIES}
        httpx.post(f"{unity.url}{API}/catalogs", json=body, timeout=30).raise_for_status()

    def fail_next_write() -> None:
        unity.control.fail_next(1, 500, method="POST", path="/tables")

    properties = {"endpoint": unity.url, "root": str(root)}
    forwarding = _forwarding(stack, "unity", properties, unity.control, create_catalog)
    return Catalog("unity", properties, create_catalog, fail_next_write, forwarding)


def _iceberg_catalog(stack: contextlib.ExitStack, root: Path) -> Catalog:
    """Apache Iceberg's REST reference server, the one the test run shares: a single catalog
    announcing no prefix, so the warehouse `wh` is that catalog and tests keep apart by fresh
    namespace names."""
    iceberg = stack.enter_context(shared_iceberg_rest_server(root / "catalog"))
    properties = {"endpoint": iceberg.url, "root": str(root / "lance"), "warehouses": "wh"}
    (root / "stand-in").mkdir()
    checking = stack.enter_context(running_iceberg_stand_in(root / "stand-in", ("wh",)))
    forwarding_properties = {"endpoint": checking.url, "root": str(root / "forwarded")}
    forwarding = _forwarding(stack, "iceberg", forwarding_properties, checking.control)
    return Catalog("iceberg", properties, forwarding=forwarding)


def _catalog(
    name: str, request: pytest.FixtureRequest, root: Path, stack: contextlib.ExitStack
) -> Catalog:
    if name in ("dir", "metadata-only"):
        return _directory_catalog(name, root)
    if name in ("hive2", "hive3"):
        return _hive_catalog(name, request, root)
    if name == "glue":
        return _glue_catalog(request, root)
    if name == "unity":
        return _unity_catalog(stack, root)
    return _iceberg_catalog(stack, root)


@dataclass(frozen=True)
class Federation:
    """One server of the `FEDERATED` backends as catalogs, and each one's `Catalog`."""

    url: str
    catalogs: dict[str, Catalog]


@pytest.fixture(scope="session")
def federation(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Federation]:
    root = tmp_path_factory.mktemp("contract-federated")
    with contextlib.ExitStack() as stack:
        for name in FEDERATED:
            (root / name).mkdir()
        catalogs = {name: _catalog(name, request, root / name, stack) for name in FEDERATED}
        configured = {name: {"impl": catalog.impl, **catalog.properties}
                      for name, catalog in catalogs.items()}
        url = stack.enter_context(running_server(catalogs=configured))
        yield Federation(url, catalogs)


@contextlib.contextmanager
def serve_backend(
    name: str, request: pytest.FixtureRequest, root: Path
) -> Iterator[ContractBackend]:
    """The adapter serving backend `name` (and the catalog behind it) until the exit; a
    `federated-` one is its catalog of the session's one server of several."""
    if name.startswith("federated-"):
        federation: Federation = request.getfixturevalue("federation")
        catalog = federation.catalogs[name.removeprefix("federated-")]
        yield ContractBackend(name, federation.url, CONVENTIONS[name], catalog.prepare)
        return
    with contextlib.ExitStack() as stack:
        catalog = _catalog(name, request, root, stack)
        url = stack.enter_context(running_server(catalog.impl, catalog.properties))
        yield ContractBackend(
            name, url, CONVENTIONS[name], catalog.prepare, catalog.fail_next_write,
            catalog.forwarding,
        )


@pytest.fixture(scope="session", params=BACKEND_NAMES)
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ContractBackend]:
    """One adapter per backend for the whole session, every test on fresh namespaces."""
    root = tmp_path_factory.mktemp(f"contract-{request.param}")
    with serve_backend(request.param, request, root) as served:
        yield served
