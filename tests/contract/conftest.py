from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import glue_support
from tests.contract.backends import BACKEND_NAMES, ContractBackend, serve_backend

# moto's server as Glue, for the glue backend (a fixture found by name among module attributes).
moto_endpoint = glue_support.moto_endpoint


@pytest.fixture(scope="session", params=BACKEND_NAMES)
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ContractBackend]:
    """One adapter per backend for the whole session, every test on fresh namespaces."""
    root = tmp_path_factory.mktemp(f"contract-{request.param}")
    with serve_backend(request.param, request, root) as served:
        yield served
