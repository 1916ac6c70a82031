"""The container images, built and run with a real Docker engine (tests/docker_engine.py).

The adapter's image is built from the Dockerfile and run on host networking; then the
`local` profile of docker-compose.yml, built entirely from this repository, runs the
adapter on dir, on hive2 against a Hive Metastore image and on glue against moto. Each is
driven through the official client. A machine where the engine cannot start fails here.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from lance_namespace_urllib3_client import ApiClient, Configuration
from lance_namespace_urllib3_client.api import NamespaceApi, TableApi
from lance_namespace_urllib3_client.models import (
    CountTableRowsRequest,
    CreateNamespaceRequest,
    DropNamespaceRequest,
    QueryTableRequest,
    QueryTableRequestVector,
)

from tests.support.common import free_port
from tests.support.docker_engine import BASE_IMAGE, ROOT, Engine, private_engine, run
from tests.support.helm_chart import render
from tests.support.lance_data import arrow_stream, read_arrow_file, sample_table

IMAGE = "lance-namespace-adapter:local"
COMPOSE = Path(sys.executable).parent / "docker-compose"
PROJECT = "lance-adapter-test"
LOCAL_ADAPTERS = {
    "dir": ("local-adapter-dir", "LOCAL_DIR_PORT"),
    "hive2": ("local-adapter-hive2", "LOCAL_HIVE2_PORT"),
    "glue": ("local-adapter-glue", "LOCAL_GLUE_PORT"),
    "catalogs": ("local-adapter-catalogs", "LOCAL_CATALOGS_PORT"),
}
# Building from nothing (apt, debootstrap, pip, the metastore's jars) takes minutes.
pytestmark = pytest.mark.timeout(2400)


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    """Fails (never skips) with the reason when the engine cannot start; on teardown, fails
    if the engine is still running or the host's network differs from before."""
    with private_engine() as started:
        yield started


@pytest.fixture(scope="session")
def adapter_image(engine: Engine) -> str:
    built = engine.docker("build", "--network", "host", "--build-arg",
                          f"PYTHON_IMAGE={BASE_IMAGE}", "-t", IMAGE, ROOT, timeout=1200)
    assert built.returncode == 0, built.stderr[-3000:]
    return IMAGE


@contextmanager
def container(engine: Engine, *arguments: str) -> Iterator[str]:
    """A detached container on host networking, removed with its volumes afterwards."""
    name = f"lance-adapter-test-{uuid.uuid4().hex[:8]}"
    started = engine.docker("run", "-d", "--name", name, "--network", "host", *arguments)
    assert started.returncode == 0, started.stderr
    try:
        yield name
    finally:
        engine.docker("rm", "-f", "-v", name)


def adapter_container(engine: Engine, port: int, *arguments: str) -> AbstractContextManager[str]:
    return container(engine, "-e", "LANCE_ADAPTER_HOST=127.0.0.1",
                     "-e", f"LANCE_ADAPTER_PORT={port}", *arguments)


def wait_for(url: str, status: int = 200, timeout: float = 120) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = httpx.get(url, timeout=10)
            if answer.status_code == status:
                return answer
        except httpx.TransportError:
            answer = None
        if time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer {status} within {timeout}s: {answer}")
        time.sleep(0.5)


def exercise_a_table(url: str, namespace: str) -> None:
    """A namespace and a table through their whole life, through the official client."""
    table = f"{namespace}$items"
    with ApiClient(Configuration(host=url)) as client:
        namespaces, tables = NamespaceApi(client), TableApi(client)
        namespaces.create_namespace(namespace, CreateNamespaceRequest())
        tables.create_table(table, arrow_stream(sample_table(20)))
        tables.insert_into_table(table, arrow_stream(sample_table(5, start=20)))
        assert tables.count_table_rows(table, CountTableRowsRequest()) == 25
        everything = QueryTableRequest(k=100, vector=QueryTableRequestVector())
        scanned = read_arrow_file(tables.query_table(table, everything))
        assert sorted(scanned.column("id").to_pylist()) == list(range(25))
        assert namespaces.list_tables(namespace).tables == ["items"]
        tables.drop_table(table)
        assert namespaces.list_tables(namespace).tables == []
        namespaces.drop_namespace(namespace, DropNamespaceRequest())
        assert namespace not in namespaces.list_namespaces("$").namespaces


# ---------------------------------------------------------------- the adapter's image


def test_the_image_serves_a_table_through_its_whole_life(
    engine: Engine, adapter_image: str
) -> None:
    port = free_port()
    with adapter_container(engine, port, adapter_image) as name:
        url = f"http://127.0.0.1:{port}"
        wait_for(f"{url}/readyz")
        assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
        exercise_a_table(url, "sales")
        healthcheck = engine.docker("exec", name, "python", "-P", "-m", "app.container_probe")
        assert healthcheck.returncode == 0, healthcheck.stderr
        user = engine.docker("exec", name, "id", "-u").stdout.strip()
        assert user == "10001"
        logs = engine.docker("logs", name)
        assert "serving impl 'dir'" in logs.stdout and f":{port}" in logs.stdout


def test_every_backend_imports_inside_the_image(engine: Engine, adapter_image: str) -> None:
    check = ("from backends import IMPLS, resolve_impl\n"
             "for impl in IMPLS: resolve_impl(impl)\n"
             "print(' '.join(IMPLS))")
    result = engine.docker("run", "--rm", "--network", "host", "--entrypoint", "python",
                           adapter_image, "-P", "-c", check)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["dir", "hive2", "hive3", "glue", "unity", "iceberg"]


@pytest.mark.parametrize("impl", ["hive2", "hive3"])
def test_the_hive_backends_start_in_the_image(
    engine: Engine, adapter_image: str, impl: str
) -> None:
    """No metastore listens on port 1: the server is alive but not ready."""
    port = free_port()
    with adapter_container(engine, port, adapter_image, "serve", "--impl", impl,
                           "--prop", "uri=thrift://127.0.0.1:1") as name:
        url = f"http://127.0.0.1:{port}"
        wait_for(f"{url}/healthz")
        assert httpx.get(f"{url}/readyz", timeout=30).status_code == 503
        assert f"serving impl '{impl}'" in engine.docker("logs", name).stdout


def test_a_root_the_server_cannot_write_is_refused_at_start(
    engine: Engine, adapter_image: str
) -> None:
    """The image runs as a user who cannot write /usr/share: one line, exit 2, no server
    that would answer every write with an error (/readyz is for what changes after start)."""
    result = engine.docker("run", "--rm", "--network", "host",
                           "-e", "LANCE_ADAPTER_PROP_ROOT=/usr/share", adapter_image, "serve")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "lance-adapter: root '/usr/share' cannot be created or written: Permission denied"
    ]


def test_a_bad_log_level_is_one_line_and_exit_2(engine: Engine, adapter_image: str) -> None:
    result = engine.docker("run", "--rm", "--network", "host", adapter_image,
                           "serve", "--log-level", "verbose")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lance-adapter: setting 'log_level' must be one of 'critical', 'error', 'warning', "
        "'info', 'debug', 'trace', got 'verbose'"
    ]


def pod_as_docker_flags(values: dict[str, Any], port: int) -> tuple[list[str], dict[str, Any]]:
    """`docker run` flags that reproduce the chart's pod (its ConfigMap environment, user,
    read-only root and capabilities) on host networking; also returns its container spec."""
    manifests = render(values)
    pod = manifests["Deployment"][0]["spec"]["template"]["spec"]
    adapter = pod["containers"][0]
    environment = {**manifests["ConfigMap"][0]["data"],
                   "LANCE_ADAPTER_HOST": "127.0.0.1", "LANCE_ADAPTER_PORT": str(port)}
    user = pod["securityContext"]
    flags = [f"--user={user['runAsUser']}:{user['runAsGroup']}", "--cap-drop=ALL",
             "--security-opt=no-new-privileges"]
    if adapter["securityContext"]["readOnlyRootFilesystem"]:
        flags.append("--read-only")
    flags += [f"--tmpfs={mount['mountPath']}" for mount in adapter["volumeMounts"]
              if mount["name"] == "tmp"]
    flags += [f"--env={name}={value}" for name, value in environment.items()]
    return flags, adapter


@pytest.mark.parametrize("values", [{}, {"adapter": {"workers": 2, "rootPath": "/lance"}}],
                         ids=["default", "workers-behind-a-gateway"])
def test_the_helm_pod_runs_the_image_and_its_probes_pass(
    engine: Engine, adapter_image: str, values: dict[str, Any]
) -> None:
    port = free_port()
    flags, adapter = pod_as_docker_flags(values, port)
    # The chart names the image by the chart's appVersion: tag the build so.
    assert engine.docker("tag", adapter_image, adapter["image"]).returncode == 0
    with container(engine, *flags, adapter["image"], *adapter["args"]) as name:
        url = f"http://127.0.0.1:{port}"
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            wait_for(url + adapter[probe]["httpGet"]["path"], timeout=120)
        root_path = values.get("adapter", {}).get("rootPath", "")
        exercise_a_table(url + root_path, "helm")
        assert engine.docker("inspect", "-f", "{{.State.Running}}", name).stdout.strip() == "true"


# ---------------------------------------------------------------- the local compose stack


def compose(engine: Engine, ports: dict[str, str], *arguments: str,
            timeout: float = 300) -> subprocess.CompletedProcess:
    env = engine.env(PYTHON_IMAGE=BASE_IMAGE, **ports)
    return run([COMPOSE, "-f", ROOT / "docker-compose.yml", "-p", PROJECT,
                "--profile", "local", *arguments], timeout, env=env)


@pytest.fixture(scope="session")
def local_stack(engine: Engine) -> Iterator[dict[str, str]]:
    """The local profile up (built from the repository); yields each adapter's URL."""
    ports = {variable: str(free_port()) for variable in
             ("LOCAL_DIR_PORT", "LOCAL_HIVE2_PORT", "LOCAL_GLUE_PORT", "LOCAL_CATALOGS_PORT",
              "LOCAL_HMS_PORT", "LOCAL_MOTO_PORT")}
    compose(engine, ports, "down", "-v", "--remove-orphans")  # a killed run's leftovers
    services = [service for service, _ in LOCAL_ADAPTERS.values()]
    up = compose(engine, ports, "up", "-d", "--build", "--wait", "--wait-timeout", "600",
                 *services, timeout=1800)
    try:
        logs = compose(engine, ports, "logs", "--no-color", "--tail", "30").stdout
        assert up.returncode == 0, up.stderr[-3000:] + logs[-5000:]
        yield {impl: f"http://127.0.0.1:{ports[variable]}"
               for impl, (_, variable) in LOCAL_ADAPTERS.items()}
    finally:
        down = compose(engine, ports, "down", "-v", "--remove-orphans")
        assert down.returncode == 0, down.stderr
        left = engine.docker("ps", "-aq", "--filter", f"label=com.docker.compose.project={PROJECT}")
        assert left.stdout.strip() == "", "compose down left containers behind"
        volumes = engine.docker("volume", "ls", "-q", "--filter",
                                f"label=com.docker.compose.project={PROJECT}")
        assert volumes.stdout.strip() == "", "compose down -v left volumes behind"


@pytest.mark.parametrize("impl", [impl for impl in LOCAL_ADAPTERS if impl != "catalogs"])
def test_the_local_stack_serves_a_table_on_each_backend(
    local_stack: dict[str, str], impl: str
) -> None:
    url = local_stack[impl]
    assert httpx.get(f"{url}/readyz", timeout=30).json() == {"status": "ready"}
    exercise_a_table(url, f"smoke_{impl}")


def test_the_local_stack_serves_every_catalog_through_one_url(
    local_stack: dict[str, str],
) -> None:
    url = local_stack["catalogs"]
    assert httpx.get(f"{url}/readyz", timeout=30).json() == {"status": "ready"}
    listed = httpx.get(f"{url}/v1/namespace/$/list", timeout=30).json()
    assert listed["namespaces"] == ["aws", "hms", "lake"]
    for catalog in listed["namespaces"]:
        exercise_a_table(url, f"{catalog}$smoke")
