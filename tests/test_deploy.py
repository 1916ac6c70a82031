"""The deployment files, checked as far as this machine allows (no Docker engine here):
the Dockerfiles linted by hadolint, the image's install steps run in a fresh virtual
environment, docker-compose.yml resolved by the Compose v2 engine, and the Helm chart linted
and rendered by the Helm SDK (helm-python-sdk) and its values checked against the schema."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import helm_python as helm
import httpx
import jsonschema
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from app.config import load_settings
from app.credentials import load_rules
from app.spec import load_operations
from backends.core.extras import EXTRAS, GLUE, HIVE, VENDING, Extra
from tests.support.common import free_port
from tests.support.helm_chart import CHART, render

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ADAPTERS = {
    "adapter-dir": ("dir", {"root": "/data"}),
    "adapter-hive2": ("hive2", {"uri": "thrift://hive-metastore:9083"}),
    "adapter-hive3": ("hive3", {"uri": "thrift://hive-metastore:9083"}),
    # moto has no GetCatalogs (so hierarchy=databases), and STS must not be AWS's.
    "adapter-glue": ("glue", {"endpoint": "http://glue:5000", "region": "us-east-1",
                              "hierarchy": "databases", "sts_endpoint": "http://glue:5000"}),
    "adapter-unity": ("unity", {"endpoint": "http://unity:8080"}),
    "adapter-iceberg": ("iceberg", {"endpoint": "http://iceberg-rest:8181"}),
}


def run(*command: str | Path, **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(part) for part in command], capture_output=True, text=True,
                          timeout=300, **options)


# ---------------------------------------------------------------- Dockerfile


def dockerfile_stages(path: Path) -> list[list[tuple[str, str]]]:
    """The instructions of each stage as (INSTRUCTION, arguments), continuations joined."""
    text = re.sub(r"\\\n", " ", path.read_text())
    stages: list[list[tuple[str, str]]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        instruction, _, arguments = line.strip().partition(" ")
        if instruction.upper() == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((instruction.upper(), arguments.strip()))
    return stages


@pytest.mark.parametrize("dockerfile", [
    "Dockerfile",
    "deploy/hive-metastore/Dockerfile",
    "deploy/hive-metastore-local/Dockerfile",
    "deploy/moto-local/Dockerfile",
])
def test_the_dockerfiles_pass_hadolint(dockerfile: str) -> None:
    result = run(BIN / "hadolint", "--failure-threshold", "info", ROOT / dockerfile)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_is_multi_stage_slim_non_root_healthchecked_and_env_configured() -> None:
    build, runtime = dockerfile_stages(ROOT / "Dockerfile")
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.\d+-slim$", text, re.MULTILINE)
    assert ("RUN", "sh /usr/local/bin/docker-install.sh /src /opt/venv") in build
    final = dict(runtime)
    assert final["USER"] == "${UID}:${UID}"
    assert re.search(r"^ARG UID=10001$", text, re.MULTILINE)
    assert final["HEALTHCHECK"].endswith('CMD ["python", "-P", "-m", "app.container_probe"]')
    assert final["ENTRYPOINT"] == '["lance-adapter"]' and final["CMD"] == '["serve"]'
    assert final["VOLUME"] == '["/data"]'
    environment = final["ENV"]
    for setting in ("LANCE_ADAPTER_HOST=0.0.0.0", "LANCE_ADAPTER_IMPL=dir",
                    "LANCE_ADAPTER_PROP_ROOT=/data"):
        assert setting in environment
    assert not re.search(r"TOKEN|SECRET|PASSWORD|KEY", environment)
    assert ("COPY", "--from=build /opt/venv /opt/venv") in runtime


def test_the_docker_context_leaves_out_local_state_and_keeps_what_the_build_copies() -> None:
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".git", ".venv", ".venv*", "tests", "**/__pycache__", "lance-data"} <= ignored
    for path in copied_sources():
        assert path.split("/")[0] not in ignored, path
    # The image installs the versions the suite last passed with (scripts/docker-install.sh).
    assert "lock/python.txt" in copied_sources()


def copied_sources() -> list[str]:
    """The context paths the build stage COPYs into /src."""
    sources = []
    for instruction, arguments in dockerfile_stages(ROOT / "Dockerfile")[0]:
        if instruction == "COPY" and not arguments.startswith("--"):
            *paths, destination = arguments.split()
            if destination.startswith(("./", "app/", "backends/", "lance_adapter_spark/",
                                       "lock/")):
                sources += [path.rstrip("/") for path in paths]
    return sources


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The image's install steps in a fresh environment; returns the environment.

    The source tree is what the build stage COPYs. The environment is created here with
    --without-pip and sees this interpreter's site-packages (after its own) through a .pth
    file, so pip and the adapter's dependencies come from there and `--no-deps` installs
    only the adapter: the build (with build isolation, as in the image), the package data
    and the entry points are all real, but nothing heavy is downloaded.
    """
    tmp = tmp_path_factory.mktemp("install")
    source = tmp / "src"
    source.mkdir()
    for path in copied_sources():
        origin = ROOT / path
        if origin.is_dir():
            shutil.copytree(origin, source / path, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (source / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, source / path, follow_symlinks=False)
    venv = tmp / "venv"
    assert run(sys.executable, "-m", "venv", "--without-pip", venv).returncode == 0
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv)}))
    (site / "zz-adapter-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env = {**os.environ, "PIP_FLAGS": "--no-deps"}
    result = run("sh", ROOT / "scripts" / "docker-install.sh", source, venv, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"install check: {len(load_operations())} operations from" in result.stdout
    return venv


def test_the_install_script_installs_a_working_non_editable_package(installed: Path) -> None:
    site = Path(sysconfig.get_path("purelib", vars={"base": str(installed)}))
    spec = site / "app" / "rest.yaml"
    assert spec.is_file() and not spec.is_symlink()
    assert spec.read_bytes() == (ROOT / "rest.yaml").read_bytes()
    assert (installed / "bin" / "lance-adapter").exists()
    assert not list(site.glob("__editable__*"))


def test_the_installed_server_and_its_healthcheck_work(installed: Path, tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANCE_ADAPTER_")}
    env.update(LANCE_ADAPTER_HOST="127.0.0.1", LANCE_ADAPTER_PORT=str(port),
               LANCE_ADAPTER_PROP_ROOT=str(tmp_path / "data"))
    healthcheck = [installed / "bin" / "python", "-P", "-m", "app.container_probe"]  # as the image
    assert run(*healthcheck, env=env, cwd=tmp_path).returncode == 1  # nothing listens yet
    server = subprocess.Popen([installed / "bin" / "lance-adapter", "serve"], env=env,
                              cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if run(*healthcheck, env=env, cwd=tmp_path).returncode == 0:
                break
            assert server.poll() is None, "the installed server exited"
        else:
            pytest.fail("the installed server never became healthy")
        created = httpx.post(f"http://127.0.0.1:{port}/v1/namespace/ns/create", json={})
        listed = httpx.get(f"http://127.0.0.1:{port}/v1/namespace/$/list")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert created.status_code == 200, created.text
    assert listed.json()["namespaces"] == ["ns"]
    assert (tmp_path / "data").is_dir()


# ---------------------------------------------------------------- docker-compose.yml


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    result = run(BIN / "docker-compose", "-f", ROOT / "docker-compose.yml", "config",
                 "--format", "json", env={**os.environ, "UNITY_TOKEN": "unity-secret"})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_compose_runs_every_real_catalog_service(compose: dict[str, Any]) -> None:
    services = compose["services"]
    images = {name: service.get("image", "") for name, service in services.items()}
    assert images["postgres"].startswith("postgres:")
    assert images["minio"].startswith("minio/minio:")
    assert images["glue"].startswith("motoserver/moto:")
    assert images["unity"].startswith("unitycatalog/unitycatalog:")
    assert images["iceberg-rest"].startswith("apache/iceberg-rest-fixture:")
    metastore = (ROOT / "deploy/hive-metastore/Dockerfile").read_text()
    assert re.search(r"^ARG HIVE_IMAGE=apache/hive:\d", metastore, re.MULTILINE)
    hive = services["hive-metastore"]
    assert hive["environment"]["DB_DRIVER"] == "postgres"
    assert "jdbc:postgresql://postgres:5432/metastore" in hive["environment"]["SERVICE_OPTS"]
    for name in set(services) - {"minio-init"}:
        assert services[name].get("healthcheck", {}).get("test"), f"{name} has no healthcheck"
    for name, service in services.items():
        for dependency in service.get("depends_on") or {}:
            assert dependency in services, (name, dependency)


def test_compose_wires_each_adapter_to_its_backend(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, (impl, properties) in ADAPTERS.items():
        service = services[name]
        environment = service["environment"]
        assert environment["LANCE_ADAPTER_IMPL"] == impl
        for key, value in properties.items():
            assert environment[f"LANCE_ADAPTER_PROP_{key.upper()}"] == value, (name, key)
        healthcheck = service["healthcheck"]["test"]
        assert healthcheck == ["CMD", "python", "-P", "-m", "app.container_probe"]
        assert service["build"]["context"] == str(ROOT)
        if impl != "dir":
            assert environment["LANCE_ADAPTER_PROP_ROOT"].startswith("s3://lance/")
            assert environment["LANCE_ADAPTER_PROP_STORAGE__AWS_ENDPOINT"] == "http://minio:9000"
            backend = [dep for dep in service["depends_on"] if dep != "minio-init"]
            assert [service["depends_on"][dep]["condition"] for dep in backend] == [
                "service_healthy"]
    assert services["adapter-unity"]["environment"]["LANCE_ADAPTER_PROP_AUTH_TOKEN"] == (
        "unity-secret")
    ports = [port["published"] for name in ADAPTERS for port in services[name]["ports"]]
    assert sorted(ports) == [str(port) for port in range(2333, 2339)]
    # The same four catalog services as catalogs of one server, read as the server reads it.
    federated = services["adapter-catalogs"]
    image = {"LANCE_ADAPTER_IMPL": "dir", "LANCE_ADAPTER_PROP_ROOT": "/data"}  # Dockerfile
    loaded = load_settings(environ={**image, **federated["environment"]})
    assert loaded.properties == {}
    catalogs = loaded.catalogs
    assert {name: catalog["impl"] for name, catalog in catalogs.items()} == {
        "scratch": "dir", "lake": "hive2", "aws": "glue", "ice": "iceberg"}
    assert catalogs["lake"]["uri"] == services["adapter-hive2"]["environment"][
        "LANCE_ADAPTER_PROP_URI"]
    assert catalogs["ice"]["endpoint"] == "http://iceberg-rest:8181"
    for name in ("lake", "aws", "ice"):
        assert catalogs[name]["storage.aws_endpoint"] == "http://minio:9000"
    assert set(federated["depends_on"]) >= {"hive-metastore", "glue", "iceberg-rest"}


# ---------------------------------------------------------------- the Helm chart


def leaf_paths(value: Any, prefix: str = "") -> Iterator[str]:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from leaf_paths(child, f"{prefix}.{key}" if prefix else key)
    else:
        yield prefix


def test_the_chart_lints_clean_and_its_values_match_the_schema() -> None:
    report = helm.lint(str(CHART), strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []
    schema = json.loads((CHART / "values.schema.json").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.validate(values, schema)
    for bad, why in (({"auth": {"mode": "maybe"}}, "'maybe' is not one of"),
                     ({"adapter": {"workers": 0}}, "0 is less than the minimum of 1"),
                     ({"replicaCount": "two"}, "'two' is not of type 'integer'"),
                     ({"adapter": {"rootPath": "lance/"}}, "'lance/' does not match"),
                     ({"unknownSetting": True}, "'unknownSetting' was unexpected")):
        with pytest.raises(jsonschema.ValidationError, match=why):
            jsonschema.validate(merge(values, bad), schema)


def merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merged[key] = merge(base[key], value)
        else:
            merged[key] = value
    return merged


def test_every_value_is_documented_and_every_template_reference_exists() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    for path in leaf_paths(values):
        node = schema
        for part in path.split("."):
            node = node["properties"][part] if "properties" in node else None
            if node is None:
                break
            assert node.get("description"), f"{path}: no description in the schema"
    lines = (CHART / "values.yaml").read_text().splitlines()
    for number, line in enumerate(lines):
        if re.match(r"^[A-Za-z]\w*:", line):  # each top-level value has a comment
            above, below = lines[number - 1], lines[number + 1] if number + 1 < len(lines) else ""
            assert above.startswith("#") or lines[number + 2].lstrip().startswith("#") or (
                below.lstrip().startswith("#")), line
    referenced = set()
    for template in (CHART / "templates").iterdir():
        referenced |= set(re.findall(r"\.Values\.([\w.]+)", template.read_text()))
    for reference in referenced:
        node: Any = values
        for part in reference.split("."):
            assert isinstance(node, dict) and part in node, f".Values.{reference} is not a value"
            node = node[part]


def test_the_default_release_is_a_hardened_deployment_with_probes() -> None:
    manifests = render()
    assert set(manifests) == {"ConfigMap", "Deployment", "Service", "ServiceAccount"}
    deployment = manifests["Deployment"][0]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert deployment["spec"]["replicas"] == 2
    assert container["image"] == "lance-namespace-adapter:0.1.0"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert container["resources"]["requests"] == {"cpu": "250m", "memory": "512Mi"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert pod["terminationGracePeriodSeconds"] > 30
    assert {mount["mountPath"] for mount in container["volumeMounts"]} == {"/data", "/tmp"}
    config = manifests["ConfigMap"][0]["data"]
    assert config["LANCE_ADAPTER_IMPL"] == "dir"
    assert json.loads(config["LANCE_ADAPTER_PROPERTIES"]) == {"root": "/data"}
    assert config["LANCE_ADAPTER_AUTH_MODE"] == "off"
    assert config["LANCE_ADAPTER_MAX_BODY_BYTES"] == "536870912"
    assert manifests["Service"][0]["spec"]["ports"][0]["port"] == 2333


def test_the_full_release_has_secrets_autoscaling_and_monitoring() -> None:
    manifests = render({
        "adapter": {"impl": "unity", "properties": {"endpoint": "http://uc:8080"}},
        "auth": {"mode": "forward", "tokens": ["tok-a", "tok-b"]},
        "credentials": {"properties": {"auth_token": "uc-secret",
                                       "storage.aws_secret_access_key": "s3-secret"}},
        "autoscaling": {"enabled": True, "minReplicas": 3},
        "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
        "persistence": {"enabled": True},
    })
    secrets = {secret["metadata"]["name"]: secret["stringData"] for secret in manifests["Secret"]}
    assert secrets["demo-lance-namespace-adapter-auth"] == {"tokens": "tok-a\ntok-b\n"}
    assert secrets["demo-lance-namespace-adapter-credentials"] == {
        "LANCE_ADAPTER_PROP_AUTH_TOKEN": "uc-secret",
        "LANCE_ADAPTER_PROP_STORAGE__AWS_SECRET_ACCESS_KEY": "s3-secret",
    }
    config = manifests["ConfigMap"][0]["data"]
    assert "secret" not in json.dumps(config)
    assert config["LANCE_ADAPTER_AUTH_TOKENS_FILE"] == "/etc/lance-adapter/auth/tokens"
    deployment = manifests["Deployment"][0]
    assert "replicas" not in deployment["spec"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert {"secretRef": {"name": "demo-lance-namespace-adapter-credentials"}} in (
        container["envFrom"])
    assert "/etc/lance-adapter/auth" in {m["mountPath"] for m in container["volumeMounts"]}
    hpa = manifests["HorizontalPodAutoscaler"][0]["spec"]
    assert (hpa["minReplicas"], hpa["scaleTargetRef"]["kind"]) == (3, "Deployment")
    monitor = manifests["ServiceMonitor"][0]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    assert manifests["PersistentVolumeClaim"][0]["spec"]["resources"]["requests"] == {
        "storage": "10Gi"}


def test_the_chart_serves_several_catalogs_with_their_secrets_in_the_secret() -> None:
    catalogs = {"lake": {"impl": "hive2", "uri": "thrift://hms:9083", "root": "/data/lake"},
                "aws": {"impl": "glue", "region": "eu-west-1", "root": "s3://tables/lance"}}
    manifests = render({"adapter": {"catalogs": catalogs},
                        "credentials": {"catalogs": {"aws": {"secret_access_key": "glue-secret",
                                                             "access_key_id": "AKIA1"}}}})
    config = manifests["ConfigMap"][0]["data"]
    assert not {"LANCE_ADAPTER_IMPL", "LANCE_ADAPTER_PROPERTIES", "LANCE_ADAPTER_CATALOGS"} & (
        set(config))
    assert config["LANCE_ADAPTER_PROP_ROOT"] == ""  # clears the image's default root
    assert "glue-secret" not in json.dumps(config)
    (secret,) = [item["stringData"] for item in manifests["Secret"]]
    # What the server reads from the pod's environment: both parts of each catalog.
    image = {"LANCE_ADAPTER_IMPL": "dir", "LANCE_ADAPTER_PROP_ROOT": "/data"}  # Dockerfile
    settings = load_settings(environ={**image, **config, **secret})
    assert settings.catalogs["aws"] == {**catalogs["aws"], "secret_access_key": "glue-secret",
                                        "access_key_id": "AKIA1"}
    assert settings.catalogs["lake"] == catalogs["lake"] and settings.properties == {}
    container = manifests["Deployment"][0]["spec"]["template"]["spec"]["containers"][0]
    assert {"secretRef": {"name": "demo-lance-namespace-adapter-credentials"}} in (
        container["envFrom"])
    plain = render({"adapter": {"catalogs": catalogs}})["ConfigMap"][0]["data"]
    assert json.loads(plain["LANCE_ADAPTER_CATALOGS"]) == catalogs
    assert "LANCE_ADAPTER_PROPERTIES" not in plain
    with pytest.raises(helm.HelmError, match=r"credentials\.catalogs needs adapter\.catalogs"):
        render({"credentials": {"catalogs": {"aws": {"credential": "x"}}}})


def test_the_chart_refuses_token_auth_without_tokens() -> None:
    with pytest.raises(helm.HelmError, match=r"needs auth\.tokens or auth\.existingSecret"):
        render({"auth": {"mode": "token"}})


def test_the_chart_puts_an_ingress_with_tls_in_front_of_the_service() -> None:
    manifests = render({"ingress": {"enabled": True, "className": "nginx", "host": "lance.corp",
                                    "tlsSecretName": "lance-tls",
                                    "annotations": {"cert-manager.io/cluster-issuer": "corp"}}})
    ingress = manifests["Ingress"][0]
    service = manifests["Service"][0]
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == [{"hosts": ["lance.corp"], "secretName": "lance-tls"}]
    (rule,) = ingress["spec"]["rules"]
    (path,) = rule["http"]["paths"]
    assert (rule["host"], path["path"], path["pathType"]) == ("lance.corp", "/", "Prefix")
    assert path["backend"]["service"] == {"name": service["metadata"]["name"],
                                          "port": {"name": "http"}}
    assert ingress["metadata"]["annotations"] == {"cert-manager.io/cluster-issuer": "corp"}
    plain = render({"ingress": {"enabled": True}})["Ingress"][0]
    assert "tls" not in plain["spec"] and "ingressClassName" not in plain["spec"]


def test_the_chart_network_policy_lets_only_the_listed_peers_in() -> None:
    peers = [{"namespaceSelector": {"matchLabels": {"name": "ingress-nginx"}}},
             {"podSelector": {"matchLabels": {"app": "spark"}}}]
    manifests = render({"networkPolicy": {"enabled": True, "from": peers}})
    policy = manifests["NetworkPolicy"][0]
    pod_labels = manifests["Deployment"][0]["spec"]["template"]["metadata"]["labels"]
    selected = policy["spec"]["podSelector"]["matchLabels"]
    assert selected.items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [
        {"ports": [{"port": "http", "protocol": "TCP"}], "from": peers}]
    with pytest.raises(helm.HelmError, match=r"networkPolicy\.enabled needs networkPolicy\.from"):
        render({"networkPolicy": {"enabled": True}})


# ---------------------------------------------------------------- dependencies


def runtime_closure(requirements: list[str]) -> set[str]:
    """Every distribution a plain `pip install` of `requirements` brings, by canonical name."""
    seen: set[tuple[str, frozenset[str]]] = set()
    pending = [Requirement(text) for text in requirements]
    while pending:
        requirement = pending.pop()
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        for text in metadata.requires(requirement.name) or []:
            needed = Requirement(text)
            extras = requirement.extras or {""}
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
                pending.append(needed)
    return {name for name, _ in seen}


def imported_top_level_modules(source: Path) -> set[str]:
    """The top-level modules one source file imports, beyond the standard library and its own."""
    modules = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.partition(".")[0])
    return modules - set(sys.stdlib_module_names) - {"__future__", "app", "backends"}


# The only code that imports a catalog client: what the registry or the vendor imports when
# it builds the backend (or the minting) that needs it, each with its extra.
EXTRA_USERS = {"backends/glue/": GLUE, "backends/hive/": HIVE, "backends/vending/sts.py": VENDING}


def _extra_of(source: str) -> Extra | None:
    return next((extra for user, extra in EXTRA_USERS.items() if source.startswith(user)), None)


@pytest.mark.parametrize("package", ["app", "backends"])
def test_every_module_the_server_imports_comes_with_a_plain_install_or_its_extra(
    package: str,
) -> None:
    """hive2/hive3 once needed `hive_metastore`, which only a test extra brought; the catalog
    clients are extras now, and only the code of the backend that needs one imports it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    plain = runtime_closure(project["dependencies"])
    providers = metadata.packages_distributions()
    for source in sorted((ROOT / package).rglob("*.py")):
        relative = source.relative_to(ROOT).as_posix()
        extra = _extra_of(relative)
        installed = plain | runtime_closure(
            project["optional-dependencies"][extra.name] if extra else [])
        for module in sorted(imported_top_level_modules(source)):
            distributions = {canonicalize_name(name) for name in providers.get(module, [])}
            assert distributions & installed, f"{relative} imports {module}, which neither a " \
                f"runtime dependency nor its extra installs (provided by " \
                f"{sorted(distributions) or 'nothing'})"


def test_each_extra_installs_the_modules_its_error_names_and_test_installs_all() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    providers = metadata.packages_distributions()
    everything = runtime_closure(extras["all"])
    assert runtime_closure(extras["test"]) >= everything
    for extra in EXTRAS:
        installed = runtime_closure(extras[extra.name])
        for module in extra.modules:
            distributions = {canonicalize_name(name) for name in providers.get(module, [])}
            assert distributions & installed, f"[{extra.name}] does not install {module}"
            assert distributions & everything, f"[all] does not install {module}"


def test_the_chart_serves_oidc_with_grants_the_server_reloads(tmp_path: Path) -> None:
    manifests = render({"auth": {
        "mode": "oidc", "oidc": {"issuer": "https://sso.example.com/realms/lance",
                                 "audience": "lance-adapter", "requiredScopes": ["lance"]},
        "accessGroups": {"lance-admins": "admin", "sales-etl": "read, write@sales"},
        "access": {"carol": "read"}}})
    maps = {config["metadata"]["name"]: config["data"] for config in manifests["ConfigMap"]}
    config = maps["demo-lance-namespace-adapter"]
    assert config["LANCE_ADAPTER_AUTH_MODE"] == "oidc"
    assert config["LANCE_ADAPTER_OIDC_ISSUER"] == "https://sso.example.com/realms/lance"
    assert config["LANCE_ADAPTER_OIDC_REQUIRED_SCOPES"] == "lance"
    assert config["LANCE_ADAPTER_ACCESS_FILE"] == "/etc/lance-adapter/access/access.yaml"
    grants = yaml.safe_load(maps["demo-lance-namespace-adapter-access"]["access.yaml"])
    assert grants == {"access": {"carol": "read"},
                      "access_groups": {"lance-admins": "admin", "sales-etl": "read, write@sales"}}
    access_file = tmp_path / "access.yaml"  # the server reads the chart's values as they are
    access_file.write_text(maps["demo-lance-namespace-adapter-access"]["access.yaml"])
    settings = load_settings(environ={**config, "LANCE_ADAPTER_ACCESS_FILE": str(access_file)})
    assert (settings.auth_mode, settings.oidc_required_scopes) == ("oidc", ("lance",))
    policy = load_rules(settings).policy
    assert str(policy.grants_of("bob", ["sales-etl"])) == "read, write@sales"
    assert str(policy.grants_of("dave")) == "none"
    pod = manifests["Deployment"][0]["spec"]["template"]
    assert "checksum/config" in pod["metadata"]["annotations"]
    volumes = {volume["name"]: volume for volume in pod["spec"]["volumes"]}
    assert volumes["access"]["configMap"]["name"] == "demo-lance-namespace-adapter-access"
    with pytest.raises(helm.HelmError, match=r"needs auth\.oidc\.issuer and auth\.oidc\.audience"):
        render({"auth": {"mode": "oidc"}})
