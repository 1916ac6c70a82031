"""The Helm chart rendered by the Helm SDK (helm-python-sdk), for the deployment tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

CHART = Path(__file__).resolve().parents[2] / "helm" / "lance-namespace-adapter"


def render(values: dict[str, Any] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Rendered manifests by kind (NOTES.txt left out)."""
    with helm.Chart.load(str(CHART)) as chart:
        manifests = chart.render(values, name="demo", namespace="lance")
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for path, text in manifests.items():
        if path.endswith(".txt"):
            continue
        for document in yaml.safe_load_all(text):
            if document:
                by_kind.setdefault(document["kind"], []).append(document)
    return by_kind
