"""Every table operation once, with valid input, on a backend whose table operations are all
generic (the metadata-only plug-in) and on the `dir` backend; each effect is checked by reading
the table back with pylance at its location (the steps are in `tests/support/table_steps.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lance_namespace import LanceNamespace

from tests.support.table_steps import StepLayout, run_every_step
from tests.support.tables import BACKENDS, backend

LAYOUT = StepLayout(namespace=["cat", "sub"], rename_target=["cat"])


@pytest.fixture(params=sorted(BACKENDS))
def namespace(request: pytest.FixtureRequest, data_root: Path) -> LanceNamespace:
    return backend(request.param, data_root)


def test_every_table_operation_once(namespace: LanceNamespace) -> None:
    run_every_step(namespace, LAYOUT)
